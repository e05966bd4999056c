"""Where the registry keeps files: Django's storage API, so a deployment can put them on S3-compatible storage.

`reports` holds signed report PDFs, `uploads` the MLPerf archives admins upload, `artifacts` the files a run's
document names by sha256 (provenance.artifacts), kept under that sha256 (settings.STORAGES). By default
both are folders of the data dir; with BENCHREG_S3_BUCKET they are django-storages' S3Storage, so two web
servers and two workers on different hosts serve and write the same files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import FileSystemStorage, Storage, storages


class DataDirStorage(FileSystemStorage):
    """A folder of settings.DATA_DIR, resolved when used (tests and `benchreg demo` point DATA_DIR elsewhere
    after settings load), never served by URL: reports are downloaded through their permission checks."""

    def __init__(self, folder: str, **kwargs: Any) -> None:
        self.folder = folder
        super().__init__(**kwargs)

    @property
    def base_location(self) -> str:
        return str(Path(settings.DATA_DIR) / self.folder)

    @property
    def location(self) -> str:
        return str(Path(self.base_location).resolve())

    @property
    def base_url(self) -> None:  # type: ignore[override]  # no URL on purpose: Django's is always a str
        return None


def reports_storage() -> Storage:
    return storages["reports"]


def uploads_storage() -> Storage:
    return storages["uploads"]


def artifacts_storage() -> Storage:
    return storages["artifacts"]


def local_path(storage: Storage, name: str) -> Path | None:
    """The file's path on this host, if the storage is a local folder (None on object storage)."""
    try:
        return Path(storage.path(name))
    except NotImplementedError:
        return None
