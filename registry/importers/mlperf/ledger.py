"""The ledger of one import item: each file read once, hashed, and recorded as used, skipped or in error; and
the last check of a finished document (`unstorable`: text the registry cannot store).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import protocol

from .plan import FileReport, SourceError
from .tree import inside, is_utf8, shown


class Ledger:
    """Reads the files of one item once each, hashing them and recording what became of each."""

    def __init__(self, submission: Path, tree: Path) -> None:
        self.submission, self.tree = submission, tree
        self.reports: dict[Path, FileReport] = {}
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def load(
        self, path: Path, reader: Any, *, what: str, required: bool, quiet: bool = False, lenient: bool = False
    ) -> Any:
        rel = shown(path.relative_to(self.tree).as_posix())
        if not path.is_file():
            self._absent(path, rel, what, required=required, quiet=quiet)
            return None
        data = self._read(path, rel, what)
        if data is None:
            return None
        self.reports[path] = FileReport(rel, hashlib.sha256(data).hexdigest(), "used", f"read as {what}")
        try:
            return reader(self._text(data, rel, lenient=lenient))
        except UnicodeDecodeError:
            self.fail(path, "not UTF-8 text")
        except SourceError as exc:
            self.fail(path, str(exc))
        return None

    def _absent(self, path: Path, rel: str, what: str, *, required: bool, quiet: bool) -> None:
        if required:
            self.reports[path] = FileReport(rel, None, "error", f"missing: {what} is required")
            self.errors.append(f"{rel}: missing ({what} is required)")
        elif not quiet:
            self.warnings.append(f"{rel}: absent ({what}); imported without it")

    def _read(self, path: Path, rel: str, what: str) -> bytes | None:
        """The file's bytes, or None with the error recorded (a link out of the tree is not followed)."""
        if not inside(path, self.tree):
            self.reports[path] = FileReport(rel, None, "error", "a link that leads out of the tree: not read")
            self.errors.append(f"{rel}: a link that leads out of the tree ({what} is not read through it)")
            return None
        try:
            return path.read_bytes()
        except OSError as exc:
            self.reports[path] = FileReport(rel, None, "error", f"cannot be read: {exc.strerror or exc}")
            self.errors.append(f"{rel}: cannot be read ({exc.strerror or exc})")
            return None

    def _text(self, data: bytes, rel: str, *, lenient: bool) -> str:
        if lenient:  # only some lines are records: bytes elsewhere (console noise) are not read
            text = data.decode("utf-8", errors="replace")
            if "\ufffd" in text:
                self.warnings.append(f"{rel}: bytes that are not UTF-8 outside the records were not read")
            return text
        return data.decode("utf-8")

    def fail(self, path: Path, reason: str) -> None:
        old = self.reports[path]
        self.reports[path] = FileReport(old.path, old.sha256, "error", reason)
        self.errors.append(f"{old.path}: {reason}")

    def checked(self, document: dict[str, Any] | None) -> dict[str, Any] | None:
        """The document, or None with the reasons recorded when protocol.check or the registry would refuse it."""
        if document is None:
            return None
        problems = [f"protocol {e.pointer or '/'}: {e.message} [{e.code}]" for e in protocol.errors(document)]
        problems += unstorable(document)
        if problems:
            self.errors.extend(problems)
            return None
        return document

    def digests(self) -> dict[str, str]:
        """'sha256:<hex>' of every file used, keyed by its path relative to the submission root."""
        return {
            p.relative_to(self.submission).as_posix(): f"sha256:{r.sha256}"
            for p, r in sorted(self.reports.items())
            if r.status == "used" and r.sha256
        }


def unstorable(document: Any, pointer: str = "") -> list[str]:
    """Text the registry cannot store, by JSON pointer: NUL (U+0000), which PostgreSQL text cannot hold, and lone
    surrogates, which are not UTF-8. A source file's JSON may spell either as an escape (\\u0000)."""
    if isinstance(document, str):
        if "\x00" in document:
            return [f"{pointer or '/'}: holds a NUL character (U+0000), which the registry cannot store"]
        return [] if is_utf8(document) else [f"{pointer or '/'}: holds a lone surrogate, which is not UTF-8 text"]
    if isinstance(document, dict):
        found = []
        for key, value in document.items():
            here = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            found += unstorable(str(key), here) + unstorable(value, here)
        return list(dict.fromkeys(found))
    if isinstance(document, list):
        return [problem for n, value in enumerate(document) for problem in unstorable(value, f"{pointer}/{n}")]
    return []
