"""Errors that protocol checks report: every one names where (a JSON pointer), what (a stable code) and why."""

from __future__ import annotations

import re
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
    """Build a JSON pointer from path parts, escaping '~' and '/' as RFC 6901 requires (and, in a key no answer
    could carry, a NUL or an unpaired surrogate as its \\uXXXX escape: see `printable`)."""
    return "".join("/" + printable(str(p)).replace("~", "~0").replace("/", "~1") for p in parts)


_UNPRINTABLE = re.compile("[\x00\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with each NUL and unpaired UTF-16 surrogate written as its JSON escape (`\\u0000`, `\\ud800`).

    An error names what it refuses: a key or value holding a lone surrogate cannot be encoded as UTF-8, so an
    answer quoting it as is would fail after the refusal was decided (a 500, or a batch whose stored lines go
    unreported). The escape says exactly which character was meant.
    """
    if text.isascii() and "\x00" not in text:
        return text
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def printable_data(value: Any) -> Any:
    """`value` (an error body: dicts, lists, strings, numbers) with every string and key made `printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable_data(v) for v in value]
    return value


def value_at(document: Mapping[str, Any], at: str) -> Any:
    """The value an RFC 6901 JSON pointer names in `document` (through objects and arrays), or None where there is
    none."""
    value: Any = document
    for part in at.split("/")[1:] if at else []:
        if isinstance(value, list):
            value = value[int(part)] if part.isdigit() and int(part) < len(value) else None
        else:
            value = value.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(value, dict) else None
    return value
