"""docs/protocol.md is normative: every refusal code the protocol's checks can emit is listed there, so the document
cannot fall behind the code. Codes are read from the source (every `Error(pointer, code, message)` built in the
modules below), not from a list kept beside it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocol.md"
# Where run documents are refused: parsing, the schema's translation, the semantic rules.
SOURCES = (
    "protocol/parsing.py",
    "protocol/schema.py",
    "protocol/checks.py",
    "protocol/checks_serving.py",
    "protocol/checks_collectives.py",
    "protocol/checks_distributed.py",
)


def _module_dicts(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level dict literals by name, with their string keys (tables mapping a code to its message)."""
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = keys
    return found


def _codes(expr: ast.expr, message: ast.expr | None, tables: dict[str, list[str]]) -> list[str]:
    """The codes an Error's code argument can take: a literal, a literal prefix (`schema-<keyword>`), or the keys of
    the module table its message is looked up in (`_UNREPRESENTABLE[code]`)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.JoinedStr) and isinstance(expr.values[0], ast.Constant):
        return [f"{expr.values[0].value}<"]
    if (
        isinstance(expr, ast.Name)
        and isinstance(message, ast.Subscript)
        and isinstance(message.value, ast.Name)
        and message.value.id in tables
    ):
        return tables[message.value.id]
    raise AssertionError(f"cannot tell which codes `{ast.unparse(expr)}` stands for: teach this test, then the doc")


def emitted_codes() -> set[str]:
    codes: set[str] = set()
    for source in SOURCES:
        tree = ast.parse((ROOT / source).read_text(), filename=source)
        tables = _module_dicts(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Error":
                code = node.args[1] if len(node.args) > 1 else next(k.value for k in node.keywords if k.arg == "code")
                message = node.args[2] if len(node.args) > 2 else None
                codes.update(_codes(code, message, tables))
    return codes


def test_the_code_reader_finds_the_codes_it_should():
    codes = emitted_codes()
    assert {"malformed-json", "unknown-field", "percentiles-out-of-order", "integer-out-of-range"} <= codes
    assert "schema-<" in codes
    assert len(codes) >= 30


def test_every_refusal_code_is_in_the_protocol_document():
    doc = DOC.read_text()
    missing = sorted(code for code in emitted_codes() if f"`{code}" not in doc)
    assert missing == [], f"docs/protocol.md does not list: {', '.join(missing)}"


def test_every_semantic_rule_is_described():
    """Each rule of protocol.checks.RULES has its row in the rules table."""
    from protocol.checks import RULES

    doc = DOC.read_text()
    assert [rule.__name__ for rule in RULES if f"`{rule.__name__}`" not in doc] == []


def _schema_fields(node: dict, path: str = ""):
    """(pointer, schema node) of every field the schema names, array items as `*` (docs/protocol.md, section 3)."""
    for name, child in (node.get("properties") or {}).items():
        yield f"{path}/{name}", child
        yield from _schema_fields(child, f"{path}/{name}")
    items = node.get("items")
    if isinstance(items, dict) and "properties" in items:
        yield from _schema_fields(items, f"{path}/*")


def _row(doc: str, start: str) -> str:
    return next((line for line in doc.splitlines() if line.startswith(start)), "")


def test_every_field_and_value_of_the_live_schema_has_its_row() -> None:
    """Section 3 lists every field of the live schema, each closed list with all its values, and each shared
    definition; so a field or format a minor adds cannot be left out of the document."""
    from protocol.schema import submission_schema

    doc, schema = DOC.read_text(), submission_schema()
    missing = []
    for at, node in _schema_fields(schema):
        row = _row(doc, f"| `{at}` |")
        missing += [at] if not row else [f"{at} {v}" for v in node.get("enum", []) if v and f"`{v}`" not in row]
    for name, node in schema["$defs"].items():
        section = doc.partition(f"#### `{name}`")[2].partition("####")[0]
        missing += [f"$defs/{name}"] if not section else []
        missing += [f"$defs/{name} {v}" for v in node.get("enum", []) if v and f"`{v}`" not in section]
    assert missing == []
