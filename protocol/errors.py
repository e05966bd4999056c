"""Errors that protocol checks report: every one names where (a JSON pointer), what (a stable code) and why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Error:
    """One problem with a document. `pointer` is an RFC 6901 JSON pointer ("" is the whole document)."""

    pointer: str
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "code": self.code, "message": self.message}


class Invalid(Exception):
    """A document was refused. `errors` holds every problem found, not just the first."""

    def __init__(self, errors: list[Error]) -> None:
        self.errors = sorted(set(errors))
        super().__init__("; ".join(f"{e.pointer or '/'}: {e.message}" for e in self.errors))


def pointer(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """Build a JSON pointer from path parts, escaping '~' and '/' as RFC 6901 requires."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def value_at(document: Mapping[str, Any], at: str) -> Any:
    """The value an RFC 6901 JSON pointer names in `document` (objects only), or None where there is none."""
    value: Any = document
    for part in at.split("/")[1:] if at else []:
        value = value.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(value, dict) else None
    return value
