"""Reads. Selectors return querysets or lists with their joins already chosen."""
