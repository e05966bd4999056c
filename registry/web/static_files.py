"""WhiteNoise's middleware with its table of the apps' static files found once per process (and settings).

WhiteNoise builds that table in the middleware's constructor: it lists every file the staticfiles finders know, stats
it, and makes its headers (type, length, caching). Django builds a middleware chain per request handler: once per
server process, but once per test client, and the tests make well over a thousand of them, at about 30 ms of CPU each
(a third or more of tests/registry/authz/test_matrix.py's). The table depends only on the settings in `_key` and on the
files, which nothing changes while a process runs (WhiteNoise without autorefresh never looks at them again either),
so every chain of a process shares one table per such settings.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from django.conf import settings
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):  # type: ignore[misc]  # whitenoise ships no types
    files: dict[str, Any]  # WhiteNoise's table: URL path -> its StaticFile (or a redirect)
    _found: ClassVar[dict[tuple[Any, ...], dict[str, Any]]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def add_files_from_finders(self) -> None:
        key = self._key()
        with self._lock:
            found = self._found.get(key)
            if found is None:
                # WhiteNoise's own listing, into an empty table: it overwrites what add_files() put there from
                # STATIC_ROOT, and update() below does the same
                own = self.files
                self.files = {}
                try:
                    super().add_files_from_finders()
                    found = self._found[key] = self.files
                finally:
                    self.files = own
        self.files.update(found)

    def _key(self) -> tuple[Any, ...]:
        """What a file's entry depends on besides the file: where the finders look, and what WhiteNoise was told."""
        return (
            self.static_prefix,
            self.max_age,
            self.allow_all_origins,
            self.charset,
            self.index_file,
            self.add_headers_function,
            repr(getattr(settings, "WHITENOISE_MIMETYPES", None)),
            repr(getattr(settings, "WHITENOISE_IMMUTABLE_FILE_TEST", None)),
            tuple(settings.INSTALLED_APPS),
            repr(settings.STATICFILES_DIRS),
            tuple(settings.STATICFILES_FINDERS),
            repr(settings.STORAGES.get("staticfiles")),  # the immutable-file test asks it for each name's URL
        )
