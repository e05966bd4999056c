"""Helpers shared by the tests and the benchmarks (which never import each other): scratch databases, the
OpenAPI contract run, document variants and witness keys."""
