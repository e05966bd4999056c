"""A tool's result file read with bounds: JSON (or YAML) nested no deeper than protocol.MAX_DEPTH, every number
finite and within a double, every text storable. What breaks a bound is refused with the file, the JSON pointer
(the line too, in a JSONL file) and the reason, never a traceback; nothing is stored.

The bounds and their pointers are the protocol's own (`protocol.value_errors`, the checker every submitted
document meets): one bounded reader for documents and for the files they are imported from. The only case it
cannot point into is JSON nested deeper than Python's parser follows (~1,000 levels): there the line and column
where the nesting passes the limit are given instead.

NaN and Infinity are refused, not skipped: a per-request series of NaN (vLLM's ITLs of a failed stream) would
otherwise leave a figure silently missing or wrong, and no known tool writes one in a file that measured what it
says (docs/serving.md, "Bounds on the files").
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

import yaml

from protocol import MAX_DEPTH, value_errors

from .errors import ServingImportError

# libyaml's safe loader where PyYAML has it: a report of a few MB takes seconds in the pure Python one.
SAFE_YAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SHOWN = 3  # problems named in one refusal (the first ones; fixing them shows the next)
_WORDS = {
    "non-finite-number": "NaN, Infinity or a number beyond the largest double: no measurement, refused rather than "
    "dropped",
    "number-out-of-range": "an integer beyond the largest double: no measurement",
    "too-deep": f"arrays and objects nested more than {MAX_DEPTH} levels deep: no tool writes that",
}


# What could break a bound, found in the raw text with C-speed searches (a regular expression that tried each place
# where a number could start cost 2.5x the parse itself): NaN/Infinity; a \\u escape of a NUL or a surrogate; and, in
# the text with each byte replaced by its class (`_CLASSES`: '0' for a digit, '.' or '-', 'b' for what a JSON value
# follows, ':', ',', '[' or a space, 'e', 's' for '+', 'a' for the rest), a run of 200+ digits or a number with a
# 3-digit exponent ('b0+es?000' or at the start: a JSON number always follows one of those; a hex id such as '0e071'
# inside a string follows a letter or a quote). A double overflows at 10^309: with an exponent of 2 digits at most,
# only an integer part of 210+ digits gets there (JSON has no leading zeros). Text without any of them, nested within
# MAX_DEPTH, needs no walk (the walk costs more than the parse: 0.7 s of a 4 MB sweep); text with one is walked, to
# name the pointer or to clear it.
_ESCAPES = re.compile(rb"\\u0000|\\u[dD][89a-fA-F]")
_CLASS_OF = {
    **dict.fromkeys(b"0123456789.-", b"0"),
    **dict.fromkeys(b":,[ \t\n\r", b"b"),
    ord("e"): b"e",
    ord("E"): b"e",
}
_CLASSES = b"".join(_CLASS_OF.get(byte, b"s" if byte == ord("+") else b"a") for byte in range(256))
_EXPONENT = re.compile(rb"b0+es?000")
_EXPONENT_FIRST = re.compile(rb"0+es?000")
_LONG_NUMBER = b"0" * 200
_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST = re.compile(rb"\[\]|\{\}")


def plainly_bounded(raw: bytes | str) -> bool:
    """True only where no bound can be broken (a false answer means "walk it", never "refuse")."""
    if isinstance(raw, str):
        try:
            text = raw.encode()
        except UnicodeEncodeError:  # a lone surrogate: the walk names it
            return False
    elif json.detect_encoding(raw) not in ("utf-8", "utf-8-sig"):
        return False  # UTF-16 or -32 (json.loads reads them): the screen reads bytes as UTF-8
    else:
        text = raw.removeprefix(codecs.BOM_UTF8)
    if b"NaN" in text or b"Infinity" in text or (b"\\u" in text and _ESCAPES.search(text)):
        return False
    classes = text.translate(_CLASSES)
    if _LONG_NUMBER in classes or _EXPONENT.search(classes) or _EXPONENT_FIRST.match(classes):
        return False
    skeleton = text.translate(None, _BRACKETS)  # brackets inside strings too: they can only make it look deeper
    for _ in range(MAX_DEPTH):
        if not skeleton:
            return True
        skeleton = _INNERMOST.sub(b"", skeleton)
    return not skeleton


def checked(value: Any, where: str, line: int | None = None) -> Any:
    """`value` when every bound holds, else ServingImportError naming the pointers (and `line` of a JSONL file)."""
    problems = value_errors(value, max_depth=MAX_DEPTH, numbers=True)
    if not problems:
        return value
    at = f"line {line}, " if line is not None else ""
    said = "; ".join(f"{at}{p.pointer or '/'}: {_WORDS.get(p.code, p.message)}" for p in problems[:_SHOWN])
    more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
    raise ServingImportError(said + more, where=where)


def json_value(raw: bytes | str, where: str, line: int | None = None) -> Any:
    """JSON text, checked; json.JSONDecodeError passes for the caller to word (it knows what it expected)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise _too_deep(raw, where, line) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer of more than 4,300 digits (Python's int limit)
        raise ServingImportError(
            f"{_at(line)}holds a number no measurement has ({str(exc)[:120]})", where=where
        ) from None
    return value if plainly_bounded(raw) else checked(value, where, line)


def yaml_value(raw: bytes, where: str) -> Any:
    """A YAML document, checked; yaml.YAMLError passes."""
    try:
        value = yaml.load(raw, Loader=SAFE_YAML)  # noqa: S506 (a safe loader)
    except RecursionError:
        raise ServingImportError(f"YAML nested more than {MAX_DEPTH} levels deep", where=where) from None
    return checked(value, where)


def _at(line: int | None) -> str:
    return f"line {line}: " if line is not None else ""


def _too_deep(raw: bytes | str, where: str, line: int | None) -> ServingImportError:
    """Where JSON too deep for the parser first passes MAX_DEPTH, as line and column (strings skipped)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    depth, in_string, escaped, row, column = 0, False, False, line or 1, 0
    for char in text:
        column += 1
        if char == "\n":
            row, column = row + 1, 0
        elif in_string:
            escaped, in_string = (False, in_string) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                break
        elif char in "]}":
            depth -= 1
    return ServingImportError(
        f"arrays and objects nested more than {MAX_DEPTH} levels deep from line {row}, column {column} (too deep "
        "for the parser to follow, so no JSON pointer can be given): no tool writes that",
        where=where,
    )
