"""The fast validator (protocol/schema.py, `fast_validator`: jsonschema-rs) may say "valid" only where the reference,
jsonschema, finds no error: every stored run is valid by the reference. Where the two engines read a schema
differently (a pattern's `\\s`, the date-time format), the fast one is given the reference's reading; these tests
walk every pattern and format of every minor's schema with the characters and texts where engines differ."""

from __future__ import annotations

import itertools
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

import protocol
from protocol import schema
from protocol.schema import PYTHON_SPACE, compiled, fast_validator, known_minors, minor_schema

EXAMPLES = Path(protocol.__file__).parent / "examples"


def _keywords(value, name: str) -> list[str]:
    """Every string under a key `name` anywhere in a schema but inside literal data: wider than the keyword positions
    protocol.schema translates, so a pattern it would skip is still walked here."""
    found = []
    if isinstance(value, dict):
        for key, child in value.items():
            if key == name and isinstance(child, str):
                found.append(child)
            elif key not in ("const", "enum", "default", "examples"):
                found.extend(_keywords(child, name))
    elif isinstance(value, list):
        for child in value:
            found.extend(_keywords(child, name))
    return found


PATTERNS = sorted({p for v in known_minors() for p in _keywords(minor_schema(v), "pattern")})
FORMATS = sorted({f for v in known_minors() for f in _keywords(minor_schema(v), "format")})


def test_python_space_is_what_python_reads_as_space() -> None:
    every_character = "".join(map(chr, range(0x110000)))
    assert re.findall(f"[{PYTHON_SPACE}]", every_character) == re.findall(r"\s", every_character)


def test_every_schema_has_patterns_and_only_the_date_time_format() -> None:
    """The walk below covers what the schemas use; a new format needs its reading compared here first."""
    assert len(PATTERNS) >= 10
    assert FORMATS == ["date-time"]


# Every code point up to the CJK blocks (controls, Latin, spaces, separators, digits of many scripts) and others
# where engines' classes differ: a byte-order mark, fullwidth and mathematical digits, the last code points.
CODE_POINTS = [*range(0x3100), 0xFEFF, 0xFF10, 0xFFFF, 0x1D7CE, 0x10FFFF]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_pattern_never_accepts_what_python_refuses(pattern: str) -> None:
    matching = find(
        st.from_regex(pattern, fullmatch=True),
        lambda _: True,
        settings=settings(database=None, suppress_health_check=list(HealthCheck)),
    )
    fast = compiled({"type": "string", "pattern": pattern})
    reference = re.compile(pattern)
    assert fast(matching) and reference.search(matching)
    middle = len(matching) // 2
    accepted_only_by_fast = []
    for code in CODE_POINTS:
        if 0xD800 <= code < 0xE000:
            continue  # lone surrogates: parse_json refuses them before any schema
        char = chr(code)
        for text in (char + matching, matching[:middle] + char + matching[middle:], matching + char):
            if fast(text) and not reference.search(text):
                accepted_only_by_fast.append(text)
    assert accepted_only_by_fast == []


@pytest.mark.parametrize("pattern", [r"^\S+$", r"^[^\d]$", r"^\w+$", r"^a\b", r"^a(?!$)", r"^(?<=a)b"])
def test_a_pattern_with_a_construct_read_two_ways_is_refused_not_translated(pattern: str) -> None:
    """`[^\\d]` accepts Arabic-Indic digits in ECMA-262 and not in Python; `(?!$)` accepts "a\\n" in ECMA only."""
    with pytest.raises(ValueError, match="reads differently in ECMA-262 and Python"):
        compiled({"type": "string", "pattern": pattern})


DATES = ["2026-11-20", "2024-02-29", "2023-02-29", "0000-01-01", "9999-12-31", "2026-13-01", "2026-11-31", "2026-1-01"]
TIMES = ["10:00:00", "23:59:60", "10:00:60", "24:00:00", "10:00", "10:00:00.5", "10:00:00.", "10:00:00,5", "٠١:00:00"]
ZONES = ["Z", "z", "+02:00", "-00:00", "+24:00", "+02", "+0200", "", "+02:60", "Z\n"]


def test_the_date_time_format_reads_as_the_reference_reads_it() -> None:
    fast = compiled({"type": "string", "format": "date-time"})
    reference = FormatChecker()
    differ = [
        text
        for date, sep, time, zone in itertools.product(DATES, ["T", "t", " ", ""], TIMES, ZONES)
        if fast(text := date + sep + time + zone) != reference.conforms(text, "date-time")
    ]
    assert differ == []


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_the_examples_take_the_fast_path_under_every_minor_they_fit(example: Path) -> None:
    """A valid document must be said valid by the fast validator itself, not only by the reference after it:
    otherwise every submission would silently pay the reference's milliseconds."""
    document = json.loads(example.read_text())
    declared = document["protocol"].rsplit("/", 1)[1]
    for version in known_minors()[known_minors().index(declared) :]:
        assert fast_validator(version)(document), version
        reference = Draft202012Validator(minor_schema(version), format_checker=FormatChecker())
        assert not list(reference.iter_errors(document))


class Text(str):
    pass


def test_a_value_the_fast_validator_cannot_read_is_judged_by_the_reference(server_example) -> None:
    """jsonschema-rs reads only JSON's own types; a str subclass or a key that is not a string goes to jsonschema."""
    server_example["system"]["name"] = Text(server_example["system"]["name"])
    assert schema.schema_errors(server_example) == []
    server_example["system"]["accelerators"][0]["count"] = Text("8")
    assert [e.pointer for e in schema.schema_errors(server_example)] == ["/system/accelerators/0/count"]
    assert [e.code for e in schema.schema_errors({**server_example, 1: "x"})] != []


@pytest.mark.parametrize("kind", ["decimal", "tuple"])
def test_a_value_of_a_type_json_has_not_is_judged_by_the_reference(server_example, kind: str) -> None:
    """jsonschema-rs reads a Decimal as a number and a tuple as an array; the reference refuses both, so a document
    built in Python (an importer's) holding one gets the reference's error at its pointer, and check refuses it."""
    system = server_example["system"]
    if kind == "decimal":
        system["accelerators"][0]["count"], where = Decimal(8), "/system/accelerators/0/count"
    else:
        system["accelerators"], where = tuple(system["accelerators"]), "/system/accelerators"
    assert [(e.pointer, e.code) for e in protocol.errors(server_example)] == [(where, "wrong-type")]
    with pytest.raises(protocol.Invalid):
        protocol.check(server_example)
