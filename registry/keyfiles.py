"""Secrets generated on first use under the data directory, written once and never half-written."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def create_once(path: Path, make: Callable[[], bytes]) -> Path:
    """Create `path` (mode 0600) with `make()` unless it exists, and return it.

    The content goes to a private temporary file first and is then hard-linked into place: a reader never sees a
    partial file, and when two processes race, os.link fails for the second one and the first one's file wins.
    """
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(make())
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path


def check_private(path: Path, what: str) -> None:
    """Refuse a private key file that the group or others may read or write (keys outside the data
    directory, with strict permissions). Raises ImproperlyConfigured naming the file and the fix."""
    import stat

    from django.core.exceptions import ImproperlyConfigured

    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ImproperlyConfigured(f"cannot read the {what} {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ImproperlyConfigured(
            f"the {what} {path} is readable or writable by group or others (mode "
            f"{stat.S_IMODE(mode):o}); run chmod 600 {path}"
        )
