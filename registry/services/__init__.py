"""Writes. Each service is keyword-only, typed and owns its transaction."""
