"""The versioned JSON Schema (Draft 2020-12) and translation of its errors into protocol Errors."""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import marshal
import os
import tempfile
import types
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastjsonschema
from fastjsonschema.ref_resolver import RefResolver

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

from . import rules
from .errors import Error, pointer

SCHEMA_DIR = Path(__file__).parent / "schemas"
# The live schema: protocol rules.PROTOCOL_VERSION_LATEST, the newest minor, which accepts every document of major 1.
SUBMISSION_SCHEMA_FILE = SCHEMA_DIR / "submission.v1.schema.json"
# Earlier minors, each frozen byte for byte when the next was made (tests pin their digests). A document declaring one
# of them may use only what it had (protocol.checks.fields_fit_declared_minor).
FROZEN_SCHEMA_FILES = {
    "1.0": SCHEMA_DIR / "submission.v1.0.schema.json",
    "1.1": SCHEMA_DIR / "submission.v1.1.schema.json",
    "1.2": SCHEMA_DIR / "submission.v1.2.schema.json",
}


def minor_number(version: str) -> int:
    """The minor of a "1.N" version, for ordering ("1.10" comes after "1.9")."""
    return int(version.partition(".")[2])


def known_minors() -> tuple[str, ...]:
    """Every minor of major 1 this code has a schema for, oldest first; the last is the live one."""
    return (*sorted(FROZEN_SCHEMA_FILES, key=minor_number), rules.PROTOCOL_VERSION_LATEST)


def _schema_file(version: str) -> Path:
    if version == rules.PROTOCOL_VERSION_LATEST:
        return SUBMISSION_SCHEMA_FILE
    if version not in FROZEN_SCHEMA_FILES:
        raise KeyError(f"no schema for protocol {version}: this code knows {', '.join(known_minors())}")
    return FROZEN_SCHEMA_FILES[version]


@cache
def minor_schema(version: str) -> dict[str, Any]:
    """The schema of one minor (`known_minors`), as loaded from its data file (read once per process)."""
    schema: dict[str, Any] = json.loads(_schema_file(version).read_text())
    return schema


def submission_schema() -> dict[str, Any]:
    """The live submission schema (the newest minor), as loaded from its data file (read once per process)."""
    return minor_schema(rules.PROTOCOL_VERSION_LATEST)


@cache
def _validator(version: str = rules.PROTOCOL_VERSION_LATEST) -> Draft202012Validator:
    # jsonschema lists a refused document's errors only (fast_validator says "valid"), so it is loaded then: with
    # rfc3987-syntax installed its import builds ~40 grammars (1.5 s of every command's start, for IRI formats that
    # no schema here uses).
    from jsonschema import Draft202012Validator, FormatChecker

    schema = minor_schema(version)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=FormatChecker())


@cache
def fast_validator(version: str = rules.PROTOCOL_VERSION_LATEST) -> Any:
    """A compiled validator: ~40× faster at saying 'valid'. Errors are still enumerated by jsonschema.

    fastjsonschema writes a validator as Python source (1.3 MB for the live schema) that Python then compiles: 0.6 s
    for the live minor and 0.3 s for 1.2, in every process that validates (most of `benchreg import serving`'s own
    time, issue 41). The compiled code is kept on disk like a .pyc (`validator_cache_dir`), under a name that is the
    digest of everything it depends on (the schema's bytes, fastjsonschema's and Python's versions), so a later
    process loads it in ~1 ms; a schema or library that changes gets a new name, never a stale validator.
    """
    return compiled_validator(minor_schema(version))


CACHE_DIR_ENV = "BENCHREG_CACHE_DIR"


def validator_cache_dir() -> Path | None:
    """Where compiled validators are kept: $BENCHREG_CACHE_DIR, else $XDG_CACHE_HOME/benchreg, else
    ~/.cache/benchreg; None (compile in memory every time) when BENCHREG_CACHE_DIR is set empty or there is no home.

    Like Python's own __pycache__, what is there is code that runs: the folder is the user's own (made 0700), never
    a shared temporary folder.
    """
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen is not None:
        return Path(chosen) if chosen else None
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg) / "benchreg"
    try:
        return Path.home() / ".cache" / "benchreg"
    except RuntimeError:  # no HOME and no password entry
        return None


def _cache_key(schema: dict[str, Any]) -> str:
    text = json.dumps(schema, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    parts = (text, fastjsonschema.VERSION, importlib.util.MAGIC_NUMBER.hex(), "benchreg-validator-2")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def compiled_validator(schema: dict[str, Any]) -> Any:
    """The schema's validation function: from the cache when there, else compiled (and cached when it can be).

    It compiles a copy: fastjsonschema rewrites each `$ref` of the schema it is given into an absolute address, and
    the loaded schema is what `submission_schema` serves to clients as the file says it.
    """
    folder = validator_cache_dir()
    path = folder / f"validator-{_cache_key(schema)}.marshal" if folder is not None else None
    loaded = _load(path) if path is not None else None
    if loaded is None:
        definition = copy.deepcopy(schema)
        source = fastjsonschema.compile_to_code(definition)
        name = RefResolver.from_schema(copy.deepcopy(schema)).get_scope_name()
        loaded = name, compile(source, f"<fastjsonschema {fastjsonschema.VERSION}: {schema.get('$id')}>", "exec")
        if path is not None:
            _store(path, loaded)
    name, code = loaded
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # noqa: S102 (fastjsonschema's own code for our own schema, as fastjsonschema.compile does)
    return namespace[name]


def _load(path: Path) -> tuple[str, Any] | None:
    """The cached (function name, code), or None for a file missing, torn or not ours (then it is compiled anew)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    digest, payload = raw[:32], raw[32:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    try:
        name, code = marshal.loads(payload)  # noqa: S302 (written by _store, checked by its digest above)
    except (EOFError, ValueError, TypeError):
        return None
    return (name, code) if isinstance(name, str) and isinstance(code, types.CodeType) else None


def _store(path: Path, compiled: tuple[str, Any]) -> None:
    """Written whole or not at all (a temporary file renamed into place); a folder that cannot be written is no
    error (the next process compiles again)."""
    payload = marshal.dumps(compiled)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".validator-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(hashlib.sha256(payload).digest() + payload)
            Path(temporary).replace(path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _translate(err: ValidationError) -> Iterator[Error]:
    path = tuple(err.absolute_path)
    kind = err.validator
    if kind == "required":
        for name in err.validator_value:
            if isinstance(err.instance, dict) and name not in err.instance:
                yield Error(pointer((*path, name)), "required", f"'{name}' is required here")
    elif kind == "additionalProperties":
        yield from _unknown_fields(err, path)
    elif kind == "propertyNames":
        for sub in err.context:
            message = f"'{sub.instance}' is not allowed as a key here"
            yield Error(pointer((*path, sub.instance)), "unknown-field", message)
    elif kind == "anyOf":
        yield from _any_of(err, pointer(path))
    else:
        yield _value_error(err, pointer(path), kind)


def _unknown_fields(err: ValidationError, path: tuple[Any, ...]) -> Iterator[Error]:
    known = set(err.schema.get("properties", {}))
    for name in err.instance:
        if name not in known:
            message = f"'{name}' is not a field of protocol 1.x at this place"
            yield Error(pointer((*path, name)), "unknown-field", message)


def _any_of(err: ValidationError, here: str) -> Iterator[Error]:
    # Nullable references are anyOf [null, X]: report why the value fails X, not the null branch.
    real = [s for s in err.context if not (s.validator == "type" and s.validator_value == "null")]
    if real:
        for sub in real:
            yield from _translate(sub)
    else:
        yield Error(here, "wrong-type", f"{_describe(err.instance)} is not allowed here")


def _value_error(err: ValidationError, here: str, kind: Any) -> Error:
    """The one error for a value the schema refuses (type, allowed values, range, format, size)."""
    if kind == "type":
        expected = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        return Error(here, "wrong-type", f"expected {' or '.join(expected)}, got {_json_type(err.instance)}")
    if kind in ("enum", "const"):
        allowed = err.validator_value if kind == "enum" else [err.validator_value]
        shown = ", ".join("null" if a is None else str(a) for a in allowed)
        return Error(here, "not-allowed-value", f"{_describe(err.instance)} is not one of: {shown}")
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "above", "exclusiveMaximum": "below"}
        word = words[kind]
        return Error(here, "out-of-range", f"{_describe(err.instance)} must be {word} {err.validator_value}")
    if kind in ("pattern", "format"):
        message = f"{_describe(err.instance)} does not match the expected format ({err.validator_value})"
        return Error(here, "bad-format", message)
    if kind in ("minLength", "minItems", "minProperties"):
        return Error(here, "too-short", f"needs at least {err.validator_value} item(s) or character(s)")
    if kind in ("maxLength", "maxItems", "maxProperties"):
        return Error(here, "too-long", f"allows at most {err.validator_value} item(s) or character(s)")
    return Error(here, f"schema-{kind}", err.message)


def schema_errors(document: Any, version: str = rules.PROTOCOL_VERSION_LATEST) -> list[Error]:
    """Every violation of the schema of minor `version` (the live one by default), each with its pointer, code and
    message.

    Most documents are valid, so the compiled validator answers first; only a document it refuses pays for
    jsonschema's complete error list (jsonschema stays the reference: tests check the two agree).
    """
    try:
        fast_validator(version)(document)
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    out: list[Error] = []
    for err in _validator(version).iter_errors(document):
        out.extend(_translate(err))
    return out
