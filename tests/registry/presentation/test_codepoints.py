"""Characters written as their code points (registry/presentation/codepoints.py): what no font draws in a report,
what draws nothing or reorders text everywhere, and never mistaken for other text."""

from __future__ import annotations

import re
import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from registry.presentation.codepoints import CLOSE, EVERY_GLYPH, OPEN, spell, spell_html, spell_strings

NO_FONT = "\U0010fffd"  # plane 16's last private-use character: no font has it
RLO = "\u202e"  # right-to-left override: draws nothing, reverses what follows
LATIN = frozenset(range(0x20, 0x7F)) | {ord(c) for c in "éō②" + OPEN + CLOSE}


def read(spelled: str) -> str:
    """The text a reader recovers from spelled text: each ⟦U+XXXX …⟧ back to its characters."""
    return re.sub(
        f"{OPEN}([^{CLOSE}]*){CLOSE}", lambda m: "".join(chr(int(p[2:], 16)) for p in m.group(1).split()), spelled
    )


def test_what_no_font_has_or_what_draws_nothing_is_written_as_code_points() -> None:
    assert spell("東京-H100-ノード", LATIN) == "⟦U+6771 U+4EAC⟧-H100-⟦U+30CE U+30FC U+30C9⟧"
    assert spell("Tōkyō ② é", LATIN) == "Tōkyō ② é"  # what the fonts have is drawn as written
    assert spell(f"lab{RLO}10h", LATIN) == "lab⟦U+202E⟧10h"  # reorders what follows: shown, not obeyed
    assert spell("a\u200db\u00adc\ufeff", LATIN) == "a⟦U+200D⟧b⟦U+00AD⟧c⟦U+FEFF⟧"  # zero-width and soft hyphen
    assert spell("a\x07b\tc\nd", LATIN) == "a⟦U+0007⟧b\tc\nd"  # a bell is shown; layout whitespace is not
    assert spell("\u2764\ufe0f", LATIN | {0x2764}) == "\u2764\ufe0f"  # a variation selector picks a form
    assert spell(NO_FONT, LATIN) == "⟦U+10FFFD⟧"


def test_a_name_cannot_pass_itself_off_as_another() -> None:
    # The bracket itself is written as a code point, so "⟦U+6771⟧" typed by a submitter never reads as 東.
    assert spell("⟦U+6771⟧", LATIN) == "⟦U+27E6⟧U+6771⟧"
    assert spell("⟦U+6771⟧", LATIN) != spell("東", LATIN)
    assert read(spell("⟦U+6771⟧", LATIN)) == "⟦U+6771⟧"


TEXT = st.lists(st.characters(codec="utf-8") | st.sampled_from([OPEN, CLOSE, "U+", " ", "6771"])).map("".join)


@given(TEXT)
def test_spelled_text_always_reads_back_as_written_and_holds_only_what_the_fonts_draw(text: str) -> None:
    spelled = spell(text, LATIN)
    assert read(spelled) == text
    for char in spelled:
        selector = 0xFE00 <= ord(char) <= 0xFE0F or 0xE0100 <= ord(char) <= 0xE01EF
        assert ord(char) in LATIN or char in "\t\n\r" or selector, repr(char)


def test_html_is_spelled_between_tags_only_and_a_kept_element_keeps_its_text() -> None:
    html = f'<html><head><title>東 a</title></head><body><h1 title="東">東{NO_FONT}</h1><p>é &amp; &#x27E6;</p></body>'
    spelled, count = spell_html(html, LATIN, keep={"title"})
    assert spelled == (
        '<html><head><title>東 a</title></head><body><h1 title="東">⟦U+6771 U+10FFFD⟧</h1>'
        "<p>é &amp; &#x27E6;</p></body>"
    )
    assert count == 2
    assert spell_html("<p>plain text, é</p>", LATIN) == ("<p>plain text, é</p>", 0)
    form = f"<textarea name=q>a{RLO}b</textarea><p>a{RLO}b</p>"
    assert spell_html(form, keep={"textarea"}) == (f"<textarea name=q>a{RLO}b</textarea><p>a⟦U+202E⟧b</p>", 1)


def test_where_every_glyph_is_drawn_only_what_draws_nothing_and_the_bracket_are_spelled() -> None:
    assert spell(f"東京 🚀 é {NO_FONT}") == f"東京 🚀 é {NO_FONT}"  # a browser draws with the reader's fonts
    hidden = [
        chr(point)
        for point in range(sys.maxunicode + 1)
        if unicodedata.category(chr(point)) in {"Cc", "Cf", "Cs"} and chr(point) not in "\t\n\r"
    ]
    assert len(hidden) > 2000  # the surrogates, C0 and C1 controls, and the format characters
    for char in [*hidden, OPEN]:  # each is caught, whatever Unicode version this Python has
        assert spell(f"a{char}b") == f"a{OPEN}U+{ord(char):04X}{CLOSE}b", hex(ord(char))
    assert spell_html(f"<p>a{RLO}b</p>", EVERY_GLYPH) == ("<p>a⟦U+202E⟧b</p>", 1)


def test_what_a_chart_draws_from_is_spelled_keys_and_all() -> None:
    value = {"arms": [{"label": f"x{NO_FONT}", "value": 1.5, "runs": (1, 2)}], f"k{RLO}": None}
    assert spell_strings(value, LATIN) == {
        "arms": [{"label": "x⟦U+10FFFD⟧", "value": 1.5, "runs": (1, 2)}],
        "k⟦U+202E⟧": None,
    }
