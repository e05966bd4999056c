"""WSGI entry point for gunicorn: `gunicorn registry.wsgi`.

Sets BENCHREG_AUDIT_SEQUENCING to `background` unless the environment says otherwise (below).
The process is warmed up and its heap frozen here, before the first request (registry/warmup.py): under
`benchreg serve` this module is imported by the master, so the workers fork from a warmed, frozen heap.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
django_application = get_wsgi_application()

if "BENCHREG_AUDIT_SEQUENCING" not in os.environ:
    # A web server numbers audit entries in a thread of its own, woken by each commit and batching what several
    # requests queued, so a request answers without waiting for the sequencer's transaction (five statements after
    # every submission's commit, issue 42). Commands and workers, which may exit right after their commit, keep
    # settings' `commit`. Set here, not in settings: `benchreg serve` has loaded its settings as a command already.
    from django.conf import settings

    settings.BENCHREG_AUDIT_SEQUENCING = "background"

from registry.chunked import ChunkedBodies  # noqa: E402 (needs the settings that get_wsgi_application set up)
from registry.warmup import prepare_process  # noqa: E402

# Django reads no body sent chunked, without Content-Length: this reads it for Django (registry/chunked.py).
application = ChunkedBodies(django_application)

prepare_process()
