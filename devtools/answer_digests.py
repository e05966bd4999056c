"""A pytest plugin that records the digest of every decision answer the tests compute, to show that a change to the
answer's code leaves every answer byte for byte as it was.

    BENCHREG_ANSWER_DIGESTS=/tmp/before.tsv pytest -n 0 -p devtools.answer_digests tests/protocol/test_decisions*.py
    (the same in a checkout of the other commit, to /tmp/after.tsv)
    diff /tmp/before.tsv /tmp/after.tsv

One line per answer: the test, the answer's place among the test's answers, which function computed it, and the
SHA-256 and length of its canonical form (protocol.canonical, RFC 8785). Seeded tests compute the same answers on
every run, so two checkouts give equal files exactly when no answer changed.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest

import protocol.decisions
import protocol.decisions.answer
import protocol.decisions.training
from protocol import canonical

_lines: list[str] = []
_test = {"id": "", "count": 0}


def _recorded(compute: Callable[..., Any], name: str) -> Callable[..., Any]:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        out = compute(*args, **kwargs)
        try:
            text = canonical.canonicalize(out)
            seen = f"{hashlib.sha256(text).hexdigest()}\t{len(text)}"
        except Exception as exc:  # an answer canonical form refuses is recorded as such, never hidden
            seen = f"refused: {exc!r}\t0"
        _lines.append(f"{_test['id']}\t{_test['count']}\t{name}\t{seen}")
        _test["count"] += 1
        return out

    return recorded


# The package re-exports `answer`, shadowing its module: the modules are reached through sys.modules.
for _module in (
    protocol.decisions,
    sys.modules["protocol.decisions.answer"],
    sys.modules["protocol.decisions.training"],
):
    for _name in ("answer_question", "answer", "training_answer"):
        if callable(getattr(_module, _name, None)):
            setattr(_module, _name, _recorded(getattr(_module, _name), f"{_module.__name__}.{_name}"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    _test["id"], _test["count"] = item.nodeid, 0


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("BENCHREG_ANSWER_DIGESTS")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in _lines)
