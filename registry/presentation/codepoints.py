"""Characters written as their code points, ⟦U+6771 U+4EAC⟧, where showing them as they are would mislead.

- On every page and in every report: characters that draw nothing or reorder what follows (control and format
  characters: "lab", a right-to-left override (U+202E) and "10h" read "labh01"; zero-width joiners, soft hyphens).
- In a signed report, also those no installed font draws (an empty box otherwise; registry/reports/glyphs.py says
  which): a browser falls back to the reader's own fonts, a PDF carries the server's.

A bracket the text itself holds is written the same way, so every ⟦ opens code points and a name cannot pass itself
off as another. Only what is shown changes: the data, and what a form sends back, keep the text as submitted.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Container
from typing import Any

OPEN, CLOSE = "⟦", "⟧"  # U+27E6, U+27E7: in DejaVu Sans and Sans Mono, the report's fonts
# Characters with no glyph of their own that change nothing on the page: whitespace the layout handles, and
# variation selectors (they pick a form of the character before them).
_LAYOUT = frozenset("\t\n\r ")
_VARIATION = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})  # control, format (bidirectional, zero-width) and lone surrogates
# Only these can need spelling: everything else is printable ASCII, which every font has.
_CANDIDATES = re.compile(r"[^\x20-\x7e\t\n\r]+")
# Where every glyph is drawn, only these: the control, format and surrogate code points (as of Unicode 15, with room
# around the newer ones) and the bracket. A first sieve only: must_spell decides, by the character's category.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001345f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f\u27e6]+"
)


class _EveryGlyph:
    """Every code point: what a browser draws, falling back to whatever font the reader has."""

    def __contains__(self, point: object) -> bool:
        return True


EVERY_GLYPH: Container[int] = _EveryGlyph()


def _candidates(drawn: Container[int]) -> re.Pattern[str]:
    return _HIDDEN if drawn is EVERY_GLYPH else _CANDIDATES


def must_spell(char: str, drawn: Container[int]) -> bool:
    """Whether `char` is written as its code point: it draws nothing or reorders the text (control and format
    characters), it is the bracket that opens code points, or it is not in `drawn`."""
    if char in _LAYOUT:
        return False
    if char == OPEN:
        return True
    point = ord(char)
    if any(low <= point <= high for low, high in _VARIATION):
        return False
    return unicodedata.category(char) in _INVISIBLE or point not in drawn


def spell(text: str, drawn: Container[int] = EVERY_GLYPH) -> str:
    """`text` with each run of characters that must be spelled written as ⟦U+XXXX U+YYYY⟧."""
    return _spelled(text, drawn)[0]


def needs_spelling(text: str, drawn: Container[int] = EVERY_GLYPH) -> bool:
    """Whether `text` holds a character that must be spelled."""
    return any(must_spell(char, drawn) for found in _candidates(drawn).finditer(text) for char in found.group())


def _spelled(text: str, drawn: Container[int]) -> tuple[str, int]:
    """`text` spelled, and how many characters were written as code points."""
    count = 0

    def spelled(match: re.Match[str]) -> str:
        nonlocal count
        out: list[str] = []
        run: list[str] = []
        for char in match.group():
            if must_spell(char, drawn):
                run.append(f"U+{ord(char):04X}")
                continue
            if run:
                out.append(f"{OPEN}{' '.join(run)}{CLOSE}")
                count, run = count + len(run), []
            out.append(char)
        if run:
            out.append(f"{OPEN}{' '.join(run)}{CLOSE}")
            count += len(run)
        return "".join(out)

    return _candidates(drawn).sub(spelled, text), count


def spell_strings(value: Any, drawn: Container[int] = EVERY_GLYPH) -> Any:
    """`value` (JSON-like: dicts, lists, tuples, strings, numbers) with every string spelled, keys included: what a
    chart draws its labels from."""
    return _mapped(value, lambda text: spell(text, drawn))


def _mapped(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {_mapped(k, change): _mapped(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_mapped(v, change) for v in value)
    return value


# The registry's own markup is ASCII and user text in it is escaped (no "<" of its own), so the text between tags is
# what the page shows. Attributes are left as they are: a form field's value goes back as it came.
_TAG = re.compile(r"(<[^>]*>)")


def spell_html(html: str, drawn: Container[int] = EVERY_GLYPH, *, keep: Collection[str] = ()) -> tuple[str, int]:
    """`html` with the text between its tags spelled, except inside the elements named in `keep` (a report's
    <title> is its PDF's metadata; a <textarea> holds what its form sends), and how many characters were spelled.
    Returns `html` itself when nothing needs spelling."""
    candidates = _candidates(drawn)
    if not candidates.search(html):
        return html, 0
    parts = _TAG.split(html)
    inside: str | None = None  # the kept element the text is in
    count = 0
    for i, part in enumerate(parts):
        if i % 2:  # a tag
            name = part[1:].split(None, 1)[0].rstrip(">").lower() if len(part) > 2 else ""
            if inside is None and name in keep:
                inside = name
            elif inside is not None and name == f"/{inside}":
                inside = None
            continue
        if inside is not None or not candidates.search(part):
            continue
        parts[i], found = _spelled(part, drawn)
        count += found
    return ("".join(parts), count) if count else (html, 0)
