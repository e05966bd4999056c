"""The versioned JSON Schema (Draft 2020-12) and translation of its errors into protocol Errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs
from rfc3339_validator import validate_rfc3339

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
def fast_validator(version: str = rules.PROTOCOL_VERSION_LATEST) -> Callable[[Any], bool]:
    """Whether a document is valid under minor `version`, said by jsonschema-rs (compiled Rust, ~8 µs for a run's
    document where the reference takes milliseconds and fastjsonschema's generated Python took 110-160 µs). Built in
    a few milliseconds, so nothing is kept between processes.

    It may only say "valid" where the reference (jsonschema, `_validator`) finds no error; saying "invalid" where
    the reference finds none costs only time, since `schema_errors` then asks the reference. Two places read the
    schema differently, and both are given the reference's reading here:
    - `\\s` in a pattern: Python's `re` also counts U+001C-U+001F and U+0085 as space, ECMA-262 (jsonschema-rs)
      does not (`_as_python_reads_it`);
    - the date-time format: jsonschema-rs accepts leap seconds and the year 0000, the reference's checker
      (rfc3339-validator, as jsonschema calls it) neither, so that checker is the one used.
    tests/protocol/test_fast_validator.py holds the two to that on every pattern and format of every minor.
    """
    return compiled(minor_schema(version))


def compiled(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """`fast_validator` of any schema (the tests hold single patterns and formats to the reference through it)."""
    translated = _as_python_reads_it(schema)
    return jsonschema_rs.validator_for(translated, validate_formats=True, formats={"date-time": _date_time}).is_valid


def _date_time(value: str) -> bool:
    """The reference's date-time check: jsonschema's FormatChecker calls rfc3339-validator on the upper-cased text."""
    return bool(validate_rfc3339(value.upper()))


# Python's `re` reads `\s` in a str pattern as these characters; written into a character class in their place.
PYTHON_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Escapes ECMA-262 and Python read differently (\d and \w: ASCII there, Unicode here; negated, in a class or by
# their capital, ECMA's accepts more) and lookarounds (where Python's `$` also matches before a final newline): no
# schema uses them, and a pattern that does is refused rather than translated.
_UNTRANSLATED = frozenset("dDwWSbB")
_LITERAL_VALUES = frozenset({"const", "enum", "default", "examples"})  # data, not schemas
# name -> schema (or, under "dependencies", a list of names): a name there is no keyword
_NAMED_SCHEMAS = frozenset({"properties", "$defs", "definitions", "dependentSchemas", "dependencies"})


def _as_python_reads_it(schema: Any) -> Any:
    """`schema` (a copy) with every regular expression's `\\s` spelled out as the characters Python's `re` means."""
    if isinstance(schema, list):
        return [_as_python_reads_it(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            out[key] = _python_space(value)
        elif key == "patternProperties" and isinstance(value, dict):
            out[key] = {_python_space(name): _as_python_reads_it(sub) for name, sub in value.items()}
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            out[key] = {name: _as_python_reads_it(sub) for name, sub in value.items()}
        elif key in _LITERAL_VALUES:
            out[key] = value
        else:
            out[key] = _as_python_reads_it(value)
    return out


def _python_space(pattern: str) -> str:
    """`pattern` with each `\\s` replaced by PYTHON_SPACE (inside a character class) or a class of it (outside)."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            if escaped == "s":
                out.append(PYTHON_SPACE if in_class else f"[{PYTHON_SPACE}]")
            elif escaped in _UNTRANSLATED:
                raise ValueError(f"pattern {pattern!r}: \\{escaped} reads differently in ECMA-262 and Python")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if char == "(" and pattern.startswith("(?", i) and not in_class:
            raise ValueError(f"pattern {pattern!r}: a (?...) group reads differently in ECMA-262 and Python")
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


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


def schema_errors(document: Any, version: str = rules.PROTOCOL_VERSION_LATEST, *, fast: bool = True) -> list[Error]:
    """Every violation of the schema of minor `version` (the live one by default), each with its pointer, code and
    message.

    Most documents are valid, so the fast validator answers first; only a document it refuses (or holds a value it
    cannot read: a subclass of str, a key that is not a string) pays for jsonschema's complete error list (jsonschema
    stays the reference: tests check the two agree). `fast=False` asks the reference alone: for a value built in
    Python with types other than JSON's (protocol.parsing.plain_json), which jsonschema-rs reads as JSON (a Decimal
    as a number, a tuple as an array) where the reference refuses them.
    """
    if fast:
        valid = fast_validator(version)  # built outside the try: a schema it cannot build is an error, not "invalid"
        try:
            if valid(document):
                return []
        except ValueError:  # jsonschema-rs reads only JSON's own types
            pass
    out: list[Error] = []
    for err in _validator(version).iter_errors(document):
        out.extend(_translate(err))
    return out
