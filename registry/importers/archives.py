"""Unpacking uploaded result trees safely: no path escapes, no links, bounded size. Plain Python."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_MEMBERS = 20_000


class ArchiveError(ValueError):
    """The upload is not an archive we accept; the message says why."""


def unpack(upload: BinaryIO, name: str, into: Path) -> Path:
    """Unpack a .zip, .tar, .tar.gz or .tgz upload into `into` and return it.

    Refuses absolute paths, '..', links and device files, more than MAX_MEMBERS entries and more than
    MAX_UNPACKED_BYTES in total, so an upload cannot write outside `into` or fill the disk.
    """
    lowered = name.lower()
    if lowered.endswith(".zip"):
        _unzip(upload, into)
    elif lowered.endswith((".tar", ".tar.gz", ".tgz")):
        _untar(upload, into)
    else:
        raise ArchiveError(f"{name}: upload a .zip, .tar, .tar.gz or .tgz of the submission tree")
    return into


def _safe_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise ArchiveError(f"{name}: paths in the archive must stay inside it")
    return path


def _unzip(upload: BinaryIO, into: Path) -> None:
    try:
        archive = zipfile.ZipFile(upload)
    except zipfile.BadZipFile as exc:
        raise ArchiveError(f"not a readable zip file: {exc}") from None
    members = archive.infolist()
    if len(members) > MAX_MEMBERS or sum(m.file_size for m in members) > MAX_UNPACKED_BYTES:
        raise ArchiveError("the archive is too large to import through the browser; use `benchreg import`")
    for member in members:
        _safe_name(member.filename)
        if (member.external_attr >> 16) & 0o170000 == 0o120000:
            raise ArchiveError(f"{member.filename}: links are not accepted")
    archive.extractall(into)  # noqa: S202 (every member's path and type was checked above)


def _untar(upload: BinaryIO, into: Path) -> None:
    try:
        archive = tarfile.open(fileobj=upload, mode="r:*")  # noqa: SIM115 (closed by the `with` below)
    except tarfile.TarError as exc:
        raise ArchiveError(f"not a readable tar file: {exc}") from None
    with archive:
        members = archive.getmembers()
        if len(members) > MAX_MEMBERS or sum(m.size for m in members) > MAX_UNPACKED_BYTES:
            raise ArchiveError("the archive is too large to import through the browser; use `benchreg import`")
        for member in members:
            _safe_name(member.name)
            if not (member.isfile() or member.isdir()):
                raise ArchiveError(f"{member.name}: only files and folders are accepted")
        archive.extractall(into, filter="data")  # the stdlib's own guard as well (PEP 706)
