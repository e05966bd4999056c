"""Function and module sizes of the product code (registry, protocol, runners, verifier; migrations aside).

    python scripts/function_lengths.py            the p90 of function length and every function over 20 lines
    python scripts/function_lengths.py registry/web   only functions under these paths are listed

A function's length is its body without the docstring (and, second figure, with it); STYLE.md asks for short
functions and modules under about 500 lines, and docs/contributing.md says how they are split.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("registry", "protocol", "runners", "verifier")
LIMIT = 20


def _docstring_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


def main(prefixes: list[str]) -> None:
    bodies, wholes, long_ones, modules = [], [], [], []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = str(path.relative_to(ROOT))
            text = path.read_text()
            modules.append((text.count("\n"), name))
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    whole = (node.end_lineno or node.lineno) - node.lineno + 1
                    body = whole - _docstring_lines(node)
                    bodies.append(body)
                    wholes.append(whole)
                    if body > LIMIT and (not prefixes or name.startswith(tuple(prefixes))):
                        long_ones.append((body, f"{name}:{node.lineno} {node.name}"))
    for body, where in sorted(long_ones, reverse=True):
        print(f"{body:4d}  {where}")
    print(
        f"{len(bodies)} functions: p90 {np.percentile(bodies, 90):.0f} lines without the docstring, "
        f"{np.percentile(wholes, 90):.0f} with it; {len(long_ones)} listed over {LIMIT}"
    )
    lines, largest = max(modules)
    print(f"{len(modules)} modules; the largest is {largest} ({lines} lines)")


if __name__ == "__main__":
    main(sys.argv[1:])
