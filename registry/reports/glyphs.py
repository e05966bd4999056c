"""Which characters a signed report can draw: those some installed font has (WeasyPrint takes, through fontconfig,
the first installed font that has a character). The others are written as code points
(registry/presentation/codepoints.py), never drawn as empty boxes: a system named "東京-H100" on a server with DejaVu
alone would read "□□-H100" in a signed report, and reads "⟦U+6771 U+4EAC⟧-H100".

Asked of fontconfig once per process: a font installed later counts once the worker restarts.
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess

logger = logging.getLogger(__name__)


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
