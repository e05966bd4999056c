"""benchreg registry: the Django project that stores, compares and reports benchmark runs."""

from .celery import app as celery_app

__all__ = ["celery_app"]
