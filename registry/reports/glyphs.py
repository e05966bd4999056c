"""Text a report cannot draw is written out, never shown as empty boxes.

WeasyPrint draws each character with the first installed font that has it (fontconfig's fallback). A character
no installed font has comes out as an empty box: a system named "東京-H100" on a server with only DejaVu reads
"□□-H100" in a signed report. Such characters, and those that draw nothing or reorder what follows (control and
format characters: bidirectional overrides, zero-width joiners, soft hyphens), are written as their Unicode code
points between white square brackets: "⟦U+6771 U+4EAC⟧-H100". A bracket the text itself holds is written the same
way, so every ⟦ on a page opens code points: a name cannot pass itself off as another. The attached evidence
keeps the text as submitted.

Which characters the fonts have is asked of fontconfig, which WeasyPrint draws through, once per process: a font
installed later counts once the worker restarts.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

OPEN, CLOSE = "⟦", "⟧"  # U+27E6, U+27E7: in DejaVu Sans and Sans Mono, the report's fonts
# Characters with no glyph of their own that change nothing on the page: whitespace the layout handles, and
# variation selectors (they pick a form of the character before them).
_LAYOUT = frozenset("\t\n\r ")
_VARIATION = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
# Only these can need spelling: everything else is printable ASCII, which every font has.
_CANDIDATES = re.compile(r"[^\x20-\x7e\t\n\r]+")


@functools.cache
def font_coverage() -> frozenset[int]:
    """The code points some installed font has a glyph for: fontconfig's own answer where its `fc-list` is
    installed (read from its cache, ~0.1 s), else read from the font files (seconds with large CJK fonts)."""
    covered = fontconfig_coverage()
    return font_file_coverage() if covered is None else covered


def fontconfig_coverage() -> frozenset[int] | None:
    """The union of every font's character set as fontconfig lists it; None without `fc-list`."""
    if shutil.which("fc-list") is None:
        return None
    try:
        listed = subprocess.run(
            ["fc-list", "--format", "%{charset}\\n"], capture_output=True, text=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("fc-list failed (%s): the report's glyph check reads the font files instead", exc)
        return None
    covered: set[int] = set()
    for token in listed.split():  # hexadecimal code points and ranges: "20-7e a0-17f 2010"
        low, _, high = token.partition("-")
        covered.update(range(int(low, 16), int(high or low, 16) + 1))
    return frozenset(covered)


def font_file_coverage() -> frozenset[int]:
    """The union of the character maps of the font files fontconfig lists (matplotlib's font manager, which also
    looks in the usual folders when fontconfig's tools are absent), read with fontTools."""
    from fontTools.ttLib import TTCollection, TTFont, TTLibError
    from matplotlib import font_manager

    covered: set[int] = set()
    files = font_manager.findSystemFonts()
    for path in files:
        try:
            fonts = TTCollection(path, lazy=True).fonts if path.lower().endswith(".ttc") else [TTFont(path, lazy=True)]
            for font in fonts:
                covered.update(font.getBestCmap() or {})
        except (OSError, TTLibError, AssertionError, KeyError) as exc:  # a damaged font file draws nothing
            logger.warning("font %s not read for the report's glyph check: %s", path, exc)
    return frozenset(covered)


def must_spell(char: str, covered: frozenset[int]) -> bool:
    """Whether `char` is written as its code point: no font has it, it draws nothing (control and format
    characters), or it is the bracket that opens code points."""
    if char in _LAYOUT:
        return False
    if char == OPEN:
        return True
    point = ord(char)
    if any(low <= point <= high for low, high in _VARIATION):
        return False
    return unicodedata.category(char) in _INVISIBLE or point not in covered


_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})  # control, format (bidirectional, zero-width) and lone surrogates


def spell(text: str, covered: frozenset[int] | None = None) -> str:
    """`text` with each run of characters that must be spelled written as ⟦U+XXXX U+YYYY⟧."""
    fonts = font_coverage() if covered is None else covered

    def spelled(match: re.Match[str]) -> str:
        out, run = [], []
        for char in match.group():
            if must_spell(char, fonts):
                run.append(f"U+{ord(char):04X}")
                continue
            if run:
                out.append(f"{OPEN}{' '.join(run)}{CLOSE}")
                run = []
            out.append(char)
        if run:
            out.append(f"{OPEN}{' '.join(run)}{CLOSE}")
        return "".join(out)

    return _CANDIDATES.sub(spelled, text)


def spell_strings(value: Any, covered: frozenset[int] | None = None) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string spelled, keys included: what a
    chart draws from its labels."""
    fonts = font_coverage() if covered is None else covered
    return _mapped(value, lambda s: spell(s, fonts))


def _mapped(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {_mapped(k, change): _mapped(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_mapped(v, change) for v in value)
    return value


# The report's own markup is ASCII, and user text in it is escaped (no "<" of its own), so the text between tags is
# what the page draws, apart from the head's title (the PDF's metadata, which keeps the text as it is).
_TAG = re.compile(r"(<[^>]*>)")


def spell_html(html: str, covered: frozenset[int] | None = None) -> tuple[str, int]:
    """The report's HTML with the text between its tags spelled (attributes and the <title> as they are), and how
    many characters were written as code points."""
    fonts = font_coverage() if covered is None else covered
    parts = _TAG.split(html)
    in_title, count = False, 0
    for i, part in enumerate(parts):
        if i % 2:  # a tag
            name = part[1:].split(None, 1)[0].lower().rstrip(">") if len(part) > 2 else ""
            in_title = name == "title" or (in_title and name != "/title")
            continue
        if in_title or not _CANDIDATES.search(part):
            continue
        spelled = spell(part, fonts)
        if spelled != part:
            count += sum(must_spell(c, fonts) for c in part)
            parts[i] = spelled
    return "".join(parts), count
