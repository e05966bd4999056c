"""The embedded worker: a filesystem broker, a supervisor that keeps `celery worker` and `celery beat` alive, and
the heartbeat files both write. The Celery app itself stays in registry/celery.py (`celery -A registry`)."""
