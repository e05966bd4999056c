"""Logging filters the settings' LOGGING names."""

from __future__ import annotations

import logging


class WithoutTraceback(logging.Filter):
    """Keeps a record's message and drops its traceback: for refusals of a client's request that are expected and
    whose cause is the request, not the code (a Host header not in ALLOWED_HOSTS: Django logs it as an error with
    its stack, 20 lines a request when a scanner calls)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True
