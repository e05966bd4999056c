"""WSGI entry point for gunicorn: `gunicorn registry.wsgi`.

The process is warmed up and its heap frozen here, before the first request (registry/warmup.py): under
`benchreg serve` this module is imported by the master, so the workers fork from a warmed, frozen heap.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
application = get_wsgi_application()

from registry.warmup import prepare_process  # noqa: E402 (needs the settings that get_wsgi_application set up)

prepare_process()
