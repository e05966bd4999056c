"""Helpers for tests that race real database writers in threads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connections


def in_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run fn in a worker thread with its own database connection, closed afterwards."""

    def wrapper(*args: Any) -> Any:
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return wrapper
