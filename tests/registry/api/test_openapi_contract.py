"""The OpenAPI description is the truth (docs/api.md, "The contract test").

Run alone: DATABASE_URL=postgres://... .venv/bin/python -m pytest tests/registry/api/test_openapi_contract.py
The longer run is `python -m bench.openapi_contract`. A failure prints Schemathesis' own report: the operation,
the check (ST103 undocumented status, ST105 content type, ST108 body vs. schema, ST201/ST202 input rejected or
accepted against the description, ...) and a curl command that replays it against a server with the same seed.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator
from rest_framework.throttling import SimpleRateThrottle

from devtools.contract import agent_pass, failure_report, fetch_schema, schemathesis_command, schemathesis_run, seed
from registry.api.schema import NOT_WHITESPACE

# Bounded so that the whole test stays well under two minutes on two busy cores; the bench runs far more.
MAX_EXAMPLES = int(os.environ.get("BENCHREG_CONTRACT_EXAMPLES", "3"))


def test_the_description_generates_without_warnings_and_validates(capsys: pytest.CaptureFixture[str]) -> None:
    """Unique component names, resolvable serializers, a valid OpenAPI 3 document: drf-spectacular's own checks."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)


def test_an_operation_that_needs_its_body_says_so() -> None:
    """A body the description leaves optional is one Schemathesis may leave out and expect accepted (ST202): the
    report to verify (a multipart `file`) and a run document were found so."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    bodies = {
        (method.upper(), path): operation["requestBody"]
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    }
    assert bodies[("POST", "/api/v1/reports/verify")].get("required") is True
    assert bodies[("POST", "/api/v1/submissions")].get("required") is True
    for operation, body in bodies.items():
        for media in body["content"].values():
            if media.get("schema", {}).get("required"):
                assert body.get("required") is True, f"{operation} lists required properties of an optional body"


@pytest.mark.django_db
def test_a_string_the_server_trims_to_nothing_is_invalid_by_the_description(api: Any) -> None:
    """DRF strips a CharField's surrounding whitespace (str.strip: U+001D too) and refuses what is left blank: the
    description said only minLength 1, so Schemathesis sent {"name": "\\u001d"} and expected it accepted (ST202)."""
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    blank = "\x1d \t"
    for component, field, path in [
        ("TokenInputRequest", "name", "/api/v1/tokens"),
        ("DecisionInputRequest", "title", "/api/v1/decisions"),
    ]:
        described = components[component]["properties"][field]
        assert len(blank) >= described["minLength"] and not re.search(described["pattern"], blank)
        assert re.search(described["pattern"], " a name ")
        answer = api.post(path, {field: blank}, format="json")
        assert answer.status_code == 400, answer.content
        assert {(e["pointer"], e["code"]) for e in answer.json()["errors"]} >= {(f"/{field}", "blank")}
    currency = components["ComparisonInputRequest"]["properties"]["currency"]
    assert currency["pattern"] == "^[A-Z]{3}$"  # a field with its own pattern keeps it


def test_the_pattern_of_a_trimmed_string_finds_exactly_what_python_does_not_strip() -> None:
    """Spelled without `\\s`, whose meaning differs between ECMA-262 (clients, Schemathesis) and Python."""
    not_whitespace = re.compile(NOT_WHITESPACE)
    assert "\\s" not in NOT_WHITESPACE and "\\S" not in NOT_WHITESPACE
    differ = [c for c in range(sys.maxunicode + 1) if bool(not_whitespace.match(chr(c))) == chr(c).isspace()]
    assert differ == []


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_no_server_error_and_no_contract_failure(
    live_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Throttling is documented (429) and tested elsewhere; here it would only starve the generated cases.
    for scope in ("anon", "user", "verify"):
        monkeypatch.setitem(SimpleRateThrottle.THROTTLE_RATES, scope, "1000000/min")
    seeded = seed()
    schema = fetch_schema(live_server.url, tmp_path)
    # One worker: Schemathesis' workers are threads, and Hypothesis parsing source in two threads at once trips
    # CPython 3.11's "AST constructor recursion depth mismatch" (a RuntimeError reported against a random operation).
    command = schemathesis_command(
        live_server.url, seeded["token"], schema=schema, max_examples=MAX_EXAMPLES, workers=1, report_dir=tmp_path
    )
    # The agent-only operations with the seeded agent's token first (their success paths, on the seeded job), while
    # the agent and its job are as seeded: the admin's pass revokes agents and cancels jobs.
    for name, run in (("agent", agent_pass(command, seeded)), ("admin", command)):
        result = schemathesis_run(run, timeout=300, job=seeded["job"])
        output = result.stdout + result.stderr
        assert "Tested: " in output, f"Schemathesis did not test anything ({name}'s token):\n{output[-5000:]}"
        assert result.returncode == 0, (
            f"the served OpenAPI description and the server disagree ({name}'s token; "
            f"replay: {' '.join(run[:3])} ...):\n{failure_report(output)}"
        )
