"""The report's own words are drawn, never spelled: every character beyond ASCII that the registry itself writes into
a report (its templates, and the string literals of the code that words reports, pages and protocol messages) is in
the report's fonts. A sentence given a "✅" would otherwise read "⟦U+2705⟧" in every signed report."""

from __future__ import annotations

import ast
import unicodedata
from pathlib import Path

from registry.reports.glyphs import font_coverage

ROOT = Path(__file__).resolve().parents[3]
# Their docstrings and examples hold characters for the very purpose of being spelled.
SPELLING = {"registry/presentation/codepoints.py", "registry/reports/glyphs.py"}


def _literals(path: Path) -> str:
    """The string literals of a module, docstrings left out (they are never shown)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return "".join(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    )


def test_every_character_the_registry_writes_into_a_report_is_in_its_fonts() -> None:
    sources = [
        *(ROOT / "registry/templates/reports").iterdir(),
        *sorted((ROOT / "registry/presentation").glob("*.py")),
        *sorted((ROOT / "registry/reports").glob("*.py")),
        *sorted((ROOT / "protocol").rglob("*.py")),
    ]
    used: dict[str, str] = {}
    for path in sources:
        name = str(path.relative_to(ROOT))
        if name in SPELLING:
            continue
        text = path.read_text() if path.suffix != ".py" else _literals(path)
        for char in text:
            # controls, surrogates and spaces here are patterns' material (schema.py, errors.py), never words
            if ord(char) > 0x7E and not char.isspace() and unicodedata.category(char) not in {"Cc", "Cf", "Cs"}:
                used.setdefault(char, name)
    assert len(used) >= 10  # the walk found the registry's own typography (×, –, …, °)
    drawn = font_coverage()
    missing = {f"U+{ord(char):04X} {char!r} ({where})" for char, where in used.items() if ord(char) not in drawn}
    assert not missing, "characters the report's fonts do not draw:\n" + "\n".join(sorted(missing))
