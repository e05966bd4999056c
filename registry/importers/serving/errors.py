"""The one refusal of a serving import: what is wrong and where, before anything is stored."""

from __future__ import annotations


class ServingImportError(Exception):
    """A result file or deployment description the importer refuses; `where` names the file, field or flag."""

    def __init__(self, message: str, *, where: str) -> None:
        super().__init__(f"{where}: {message}")
        self.message = message
        self.where = where
