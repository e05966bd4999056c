"""Unpacking uploaded result trees safely: no path escapes, no links, bounded work. Plain Python.

Every bound is checked while the archive is read, never from what its headers declare: members are counted as
they come and inflated bytes are counted as they are written, so a small .tar.gz that inflates to gigabytes
stops at the bound after reading that much, not after inflating all of it. Any damage (a bad CRC, a truncated
stream, a file and a folder of the same name, a name that is not UTF-8) ends as ArchiveError naming the member.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_MEMBERS = 20_000
CHUNK = 1024 * 1024
# Damage a decompressor or archive reader reports as one of these; each becomes an ArchiveError.
_DAMAGE = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    lzma.LZMAError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
)


class ArchiveError(ValueError):
    """The upload is not an archive we accept; the message says why (and which member)."""


def unpack(
    upload: BinaryIO, name: str, into: Path, *, max_bytes: int = MAX_UNPACKED_BYTES, max_members: int = MAX_MEMBERS
) -> Path:
    """Unpack a .zip, .tar, .tar.gz or .tgz upload into `into` and return it.

    Refuses absolute paths, '..', links and device files, names that are not UTF-8, a name given twice or as both
    a file and a folder, more than `max_members` entries and more than `max_bytes` unpacked in total, so an upload
    cannot write outside `into`, fill the disk or hold a worker. On refusal `into` may hold part of the tree: the
    caller unpacks into a temporary folder and discards it.
    """
    lowered = name.lower()
    unpacker = _Unpacker(into, max_bytes, max_members)
    if lowered.endswith(".zip"):
        unpacker.unzip(upload)
    elif lowered.endswith((".tar", ".tar.gz", ".tgz")):
        unpacker.untar(upload)
    else:
        raise ArchiveError(f"{name}: upload a .zip, .tar, .tar.gz or .tgz of the submission tree")
    return into


def _safe_name(name: str) -> PurePosixPath:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # tarfile keeps undecodable bytes as lone surrogates
        shown = name.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
        raise ArchiveError(f"{shown}: member names must be UTF-8 text") from None
    if "\x00" in name or any(ord(c) < 0x20 for c in name):
        raise ArchiveError(f"{name!r}: member names must not hold control characters")
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise ArchiveError(f"{name}: paths in the archive must stay inside it")
    return path


class _Unpacker:
    """Writes members one by one, counting members and bytes as they come."""

    def __init__(self, into: Path, max_bytes: int, max_members: int) -> None:
        self.into, self.max_bytes, self.max_members = into, max_bytes, max_members
        self.members = 0
        self.written = 0
        self.files: set[PurePosixPath] = set()

    def _too_large(self) -> ArchiveError:
        return ArchiveError(
            f"the archive unpacks to more than {self.max_bytes:,} bytes or {self.max_members:,} "
            "entries, more than an upload may hold; use `benchreg import mlperf` on the server"
        )

    def _count(self) -> None:
        self.members += 1
        if self.members > self.max_members:
            raise self._too_large()

    def _target(self, rel: PurePosixPath, *, folder: bool) -> Path:
        """Where `rel` goes; refuses a name that is a file elsewhere in the archive (as a folder or twice)."""
        for parent in list(rel.parents)[:-1]:
            if parent in self.files:
                raise ArchiveError(f"{rel}: '{parent}' is a file in the archive, so it cannot also be a folder")
        if rel in self.files:
            raise ArchiveError(
                f"{rel}: is a file in the archive, so it cannot also be a folder"
                if folder
                else f"{rel}: appears twice in the archive"
            )
        target = self.into.joinpath(*rel.parts)
        if not folder and target.is_dir():
            raise ArchiveError(f"{rel}: is a folder in the archive, so it cannot also be a file")
        return target

    def _folder(self, rel: PurePosixPath) -> None:
        if rel.parts:
            self._target(rel, folder=True).mkdir(parents=True, exist_ok=True)

    def _file(self, rel: PurePosixPath, source: IO[bytes]) -> None:
        target = self._target(rel, folder=False)
        target.parent.mkdir(parents=True, exist_ok=True)
        self.files.add(rel)
        with target.open("xb") as out:
            while chunk := source.read(CHUNK):
                self.written += len(chunk)
                if self.written > self.max_bytes:
                    raise self._too_large()
                out.write(chunk)

    # ------------------------------------------------------------------------------------------ zip

    def unzip(self, upload: BinaryIO) -> None:
        try:
            archive = zipfile.ZipFile(upload)
        except (zipfile.BadZipFile, *_DAMAGE) as exc:
            raise ArchiveError(f"not a readable zip file: {exc}") from None
        with archive:
            members = archive.infolist()  # the central directory: its length is known before anything inflates
            if len(members) > self.max_members:
                raise self._too_large()
            for member in members:
                self._zip_member(archive, member)

    def _zip_member(self, archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> None:
        self._count()
        rel = _safe_name(member.filename)
        if (member.external_attr >> 16) & 0o170000 == 0o120000:
            raise ArchiveError(f"{member.filename}: links are not accepted")
        try:
            if member.is_dir():
                self._folder(rel)
            else:
                with archive.open(member) as source:
                    self._file(rel, source)  # zipfile checks the CRC as the member's end is read
        except ArchiveError:
            raise
        except _DAMAGE as exc:
            raise ArchiveError(f"{member.filename}: cannot be unpacked ({_why(exc)})") from None

    # ------------------------------------------------------------------------------------------ tar

    def untar(self, upload: BinaryIO) -> None:
        archive = self._open_tar(upload)
        with archive:
            current = "the first member"
            try:
                for member in archive:
                    current = member.name
                    self._tar_member(archive, member)
                    current = f"the member after {member.name}"
            except ArchiveError:
                raise
            except _DAMAGE as exc:
                raise ArchiveError(f"{current}: the archive is damaged or truncated ({_why(exc)})") from None

    def _open_tar(self, upload: BinaryIO) -> tarfile.TarFile:
        # Read as a stream through a bounded decompressor: tarfile's own random access would seek through
        # (inflate) the whole archive to list its members before any bound could be checked.
        stream = _Bounded(_decompressed(upload), self.max_bytes + 64 * 1024, self._too_large)
        try:
            return tarfile.open(  # untar closes it
                fileobj=stream,
                mode="r|",
                encoding="utf-8",
                errors="surrogateescape",
            )
        except ArchiveError:
            raise
        except _DAMAGE as exc:
            raise ArchiveError(f"not a readable tar file: {_why(exc)}") from None

    def _tar_member(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        self._count()
        rel = _safe_name(member.name)
        if member.isdir():
            self._folder(rel)
        elif member.isfile():
            source = archive.extractfile(member)
            assert source is not None  # a regular file always has a data stream
            self._file(rel, source)
        else:
            raise ArchiveError(f"{member.name}: only files and folders are accepted")


def _decompressed(upload: BinaryIO) -> IO[bytes] | gzip.GzipFile:
    """The upload's bytes, inflated as they are read when it is gzip, bzip2 or xz compressed."""
    head = upload.read(6)
    upload.seek(0)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=upload, mode="rb")
    if head.startswith(b"BZh"):
        return bz2.BZ2File(upload, mode="rb")
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(upload, mode="rb")
    return upload


class _Bounded(io.RawIOBase):
    """A read-only stream that refuses to hand out more than `limit` bytes in all."""

    def __init__(self, inner: IO[bytes] | gzip.GzipFile, limit: int, error: object) -> None:
        super().__init__()
        self.inner, self.left, self.error = inner, limit, error

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = CHUNK
        data = self.inner.read(min(size, self.left + 1))
        self.left -= len(data)
        if self.left < 0:
            raise self.error()  # type: ignore[operator]
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, IsADirectoryError | NotADirectoryError | FileExistsError):
        text = "a file and a folder of the same name"
    return text if len(text) < 200 else text[:199] + "…"
