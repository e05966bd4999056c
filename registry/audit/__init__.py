"""The audit log's trust machinery: the commitment and checkpoint keys, the sequencer that numbers queued entries,
and the whole-log verifier. The entry format itself is protocol.audit_entries.

Appending events and signing checkpoints live in registry.services.audit, proof reads in registry.selectors.audit;
this package holds what both and the `audit` command share, and imports neither services nor tasks.
"""
