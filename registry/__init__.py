"""benchreg registry: the Django project that stores, compares and reports benchmark runs.

The Celery app is loaded by the app config's ready() (every Django process) and by `celery -A registry`, not on
importing this package: `benchreg verify` and the other client commands import registry.cli and must not pay for
Celery (most of a second) before doing anything.
"""

from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from .celery import app

        return app
    raise AttributeError(f"module 'registry' has no attribute {name!r}")
