"""benchreg protocol: the versioned submission schema, semantic checks, canonical form and digest.

Plain Python: imports nothing from registry/ or runners/ and never reads Django settings.

The schema, validation and summary names load on first use (PEP 562): building the JSON Schema validator
imports jsonschema, about a second of start-up, which the standalone report verifier (canonical form, signed
notes and Merkle proofs only) must not pay.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .canonical import canonicalize, digest, digest_of
from .derivation import Derivation, derivation_of, is_derived
from .errors import Error, Invalid
from .identity import measurement_identity, same_but_for_file_locations
from .parsing import MAX_DEPTH, parse_json, value_errors
from .rules import PROTOCOL_NAME, PROTOCOL_VERSION, PROTOCOL_VERSION_LATEST

if TYPE_CHECKING:
    from .schema import submission_schema
    from .summary import RunSummary, summarize
    from .validate import Checked, check

_LAZY = {
    "submission_schema": "schema",
    "RunSummary": "summary",
    "summarize": "summary",
    "Checked": "validate",
    "check": "validate",
}

__all__ = [
    "MAX_DEPTH",
    "PROTOCOL_NAME",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSION_LATEST",
    "Checked",
    "Derivation",
    "Error",
    "Invalid",
    "RunSummary",
    "canonicalize",
    "check",
    "derivation_of",
    "digest",
    "digest_of",
    "errors",
    "is_derived",
    "measurement_identity",
    "parse_json",
    "same_but_for_file_locations",
    "submission_schema",
    "summarize",
    "value_errors",
]


def errors(document: Any) -> list[Error]:
    """All schema and semantic errors of an already-parsed document, sorted by pointer (protocol.validate)."""
    from .validate import errors as document_errors

    return document_errors(document)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'protocol' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
