"""The one check every document passes through: parse, schema, semantic rules, canonical form, digest."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .canonical import canonicalize, digest_of
from .checks import semantic_errors
from .errors import Error, Invalid
from .parsing import MARK_CODES, parse_json, plain_json, unmarked, value_errors
from .schema import schema_errors
from .summary import RunSummary, summarize


@dataclass(frozen=True)
class Checked:
    """A document that passed every check, with its canonical bytes and digest."""

    document: dict[str, Any]
    canonical: bytes
    digest: str

    @cached_property
    def summary(self) -> RunSummary:
        # Read by the registry's column limits and by its row (issue 42: once, not twice). The frozen
        # dataclass keeps its fields; cached_property writes only the instance's __dict__.
        return summarize(self.document)


def errors(document: Any) -> list[Error]:
    """All schema and semantic errors of an already-parsed document, sorted by pointer.

    A document nested deeper than MAX_DEPTH gets that error alone: the schema and semantic checks (and the
    canonical form) recurse, so they never see it. Text no store can keep is reported with the rest, and so is what
    parse_json(keep_marks=True) marked (a NaN, a repeated key, an integer no double holds): each is one error, with
    its pointer, among all the others; the checks read the value there as null and say nothing more about it.
    """
    plain = plain_json(document)
    found = [] if plain else value_errors(document)
    if any(e.code == "too-deep" for e in found):
        return sorted(found)
    marked = {e.pointer for e in found if e.code in MARK_CODES}
    if marked:
        document = unmarked(document)
    shape = schema_errors(document, fast=plain)
    checked = set(shape) | set(semantic_errors(document, shape_is_valid=not shape))
    return sorted(set(found) | {e for e in checked if not _at_or_below(e.pointer, marked)})


def _at_or_below(where: str, pointers: set[str]) -> bool:
    return any(where == p or where.startswith(f"{p}/") for p in pointers)


def check(document: Any) -> Checked:
    """Validate a document (JSON bytes/str or a parsed value). Raises Invalid with every error at once."""
    if isinstance(document, bytes | str):
        document = parse_json(document, keep_marks=True)
    found = errors(document)
    if found:
        raise Invalid(found)
    canonical = canonicalize(document)
    return Checked(document=document, canonical=canonical, digest=digest_of(canonical))
