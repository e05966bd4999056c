"""The audit log's trust machinery: the checkpoint signing key and the whole-log verifier.

Writes (appending, signing checkpoints) live in registry.services.audit, proof reads in registry.selectors.audit;
this package holds what both and the `audit` command share.
"""
