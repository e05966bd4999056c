"""What an import produces, shared by the Inference and the Training importer: one `ImportItem` per run found
(its document, or the reasons it has none), a `FileReport` for every file, the whole as an `ImportPlan`; and
`Build`, what one document collects besides its typed fields while it is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class SourceError(Exception):
    """A source file is present but cannot be read as what it should be. `where` names the file's role."""

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(message)
        self.where = where


@dataclass(frozen=True)
class FileReport:
    """What became of one file: 'used' (read into a document), 'skipped' (not read) or 'error'."""

    path: str
    sha256: str | None
    status: str
    reason: str


@dataclass(frozen=True)
class ImportItem:
    """One system × benchmark × scenario. `document` passes protocol.check, or is None when `errors`."""

    key: str
    document: dict[str, Any] | None
    files: list[FileReport]
    errors: list[str]
    warnings: list[str] = field(default_factory=list)
    skipped: str | None = None  # a result folder deliberately not imported, and why

    @property
    def status(self) -> str:
        return "ready" if self.document else "skipped" if self.skipped else "refused"


@dataclass(frozen=True)
class ImportPlan:
    """Everything found under a tree: the items, the files no item used, and how the round was decided."""

    items: list[ImportItem]
    skipped: list[FileReport]
    round: str | None
    round_source: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class Build:
    """What one document collects besides its typed fields: text kept verbatim, and flags raised."""

    unparsed: dict[str, str] = field(default_factory=dict)
    system_notes: dict[str, str] = field(default_factory=dict)
    software_notes: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    targets: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def flag(self, key: str, raw: str, why: str) -> None:
        self.unparsed[key] = raw[:2000]
        self.warnings.append(f"{key} = {raw[:80]!r} kept as text: {why}")
