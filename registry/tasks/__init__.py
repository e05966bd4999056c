"""Celery tasks: thin wrappers that take ids, re-fetch rows and call one service. One module per area."""
