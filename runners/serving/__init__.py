"""Serving benchmarks: a load generator for OpenAI-compatible endpoints, and endpoints to measure (docs/serving.md).

loadgen     open- and closed-loop streaming requests, per-request times and outcomes
levels      one load level's figures; runner: the checks before load and the sweep; document: 1.2 documents
simulated   an endpoint with a known latency law; reference: the bundled decoder behind the OpenAI API
"""
