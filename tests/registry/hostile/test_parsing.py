"""Hostile input gets a clear answer, never a 500: nesting, text and numbers no store can keep, bodies too large,
cron fields, a run named twice, and submitter text that a spreadsheet would run as a formula."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from devtools.documents import variant
from registry.models import Plan, Submission
from registry.services.submissions import submission_create
from tests.registry.authz.conftest import build_world_rows, world  # noqa: F401 (the fixture: one of everything, every principal)
from tests.registry.authz.test_matrix import RULES

pytestmark = pytest.mark.django_db


@pytest.fixture
def world_rows(db: None) -> dict[str, Any]:
    """The world made per test, inside the test's own transaction: this module's tests check that a refusal
    stores nothing, so no run of the world may outlive the test that asked for it (the authorization tests keep one
    world a module)."""
    return build_world_rows()


PROBLEM = "application/problem+json"
DEEP = "[" * 1000 + "]" * 1000  # about 2 KB
BIG = 6 * 1024 * 1024


def _quiet(client: Any) -> Any:
    client.raise_request_exception = False  # a 500 must show as a status here, not as the view's exception
    return client


def _knock(world: dict[str, Any], name: str) -> Any:  # noqa: F811
    return next(k for k in world["knocks"] if k.name == name)


def _pointers(response: Any) -> list[str]:
    return [e["pointer"] for e in response.json().get("errors", [])]


# --- nesting ------------------------------------------------------------------------------------------------


def test_deep_nesting_on_the_anonymous_enrolment_is_a_400_with_a_pointer(anonymous: APIClient) -> None:
    response = _quiet(anonymous).post("/api/v1/agents/enroll", DEEP, content_type="application/json")
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    assert response.json()["errors"][0]["code"] == "too-deep"
    shallow_but_over = "[" * 40 + "]" * 40  # parses, but deeper than BENCHREG_MAX_JSON_DEPTH (32)
    response = anonymous.post(
        "/api/v1/agents/enroll", {"token": "x", "name": "n", "inventory": json.loads(shallow_but_over)}, format="json"
    )
    assert response.status_code == 400 and "/inventory/0/0/0" in _pointers(response)[0]


def _every_body_door(world: dict[str, Any], body: str) -> Iterator[tuple[str, str, Any]]:  # noqa: F811
    """(rule name, "METHOD path as principal", response) for `body` sent to every door of the URL conf that takes a
    JSON body (test_matrix.RULES) as every principal, each in a transaction rolled back afterwards. Pages (forms)
    and the multipart report upload are left out."""
    for name, cases in sorted(RULES.items()):
        for method, path_of, body_of, _, _ in cases:
            path = path_of(world)
            if body_of is None or not path.startswith("/api/") or path.endswith("/reports/verify"):
                continue
            for knock in world["knocks"]:
                with transaction.atomic():
                    response = getattr(_quiet(knock.api), method)(path, body, content_type="application/json")
                    transaction.set_rollback(True)
                yield name, f"{method.upper()} {path} as {knock.name}", response


def test_deep_nesting_is_refused_on_every_json_endpoint_for_every_principal(world: dict[str, Any]) -> None:  # noqa: F811
    """Each door of the URL conf that takes a JSON body (test_matrix.RULES), each principal: never a 5xx, and every
    principal the door lets through is told where the nesting is too deep."""
    wrong, reached = [], set()
    for name, where, response in _every_body_door(world, DEEP):
        if response.status_code >= 500 or response["Content-Type"] != PROBLEM:
            wrong.append(f"{where}: {response.status_code}")
        elif response.status_code == 400 and "too-deep" in response.content.decode():
            reached.add(name)
    assert not wrong, "\n".join(wrong)
    bodied = {
        n
        for n, cases in RULES.items()
        for c in cases
        if c[2] is not None and c[1](world).startswith("/api/") and not c[1](world).endswith("/verify")
    }
    ignores_its_body = {
        "api-decision-reports",  # POST with no request body: issues the report, reads nothing
        "api-submission-artifact",  # PUT of a file's raw bytes, never parsed as JSON (tests/registry/artifacts)
    }
    assert reached == bodied - ignores_its_body, f"never reached the parser: {bodied - reached}"


# --- text and numbers no store can keep, alone and in a batch -------------------------------------------------

HOSTILE = {
    "nul": ('"lab\\u0000x"', "unstorable-text"),
    "lone surrogate": ('"lab\\ud800"', "unstorable-text"),
    "4,000 digits": ("9" * 4000, "integer-out-of-range"),
    "5,000 digits": ("-" + "9" * 5000, "integer-out-of-range"),
}


def _hostile_line(document: dict[str, Any], literal: str) -> str:
    text = json.dumps(variant(document, "PLACEHOLDER"))
    return text.replace('"PLACEHOLDER"', literal)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_value_in_a_submission_is_refused_with_its_pointer(
    api: APIClient, server_example: dict[str, Any], kind: str
) -> None:
    literal, code = HOSTILE[kind]
    response = _quiet(api).post(
        "/api/v1/submissions", _hostile_line(server_example, literal), content_type="application/json"
    )
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM, response.content[:300]
    assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [("/system/name", code)]
    assert not Submission.objects.exists()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_line_in_a_batch_is_refused_alone(api: APIClient, server_example: dict[str, Any], kind: str) -> None:
    literal, code = HOSTILE[kind]
    body = (
        "\n".join(
            [
                json.dumps(variant(server_example, "lab-a")),
                _hostile_line(server_example, literal),
                json.dumps(variant(server_example, "lab-b")),
            ]
        )
        + "\n"
    )
    response = _quiet(api).post("/api/v1/submissions", body, content_type="application/x-ndjson")
    assert response.status_code == 200, response.content[:300]
    lines = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [(x["line"], x["result"]) for x in lines] == [(1, "stored"), (2, "refused"), (3, "stored")]
    assert [(e["pointer"], e["code"]) for e in lines[1]["problem"]["errors"]] == [("/system/name", code)]
    assert sorted(Submission.objects.values_list("system_name", flat=True)) == ["lab-a", "lab-b"]


SURROGATE_KEY = '{"\\ud800": 1}'  # JSON text: an object whose key is an unpaired surrogate


def test_a_surrogate_key_is_refused_on_every_json_endpoint_in_an_answer_that_encodes(world: dict[str, Any]) -> None:  # noqa: F811
    """The refusal names the key; quoting it as is made the answer itself fail to encode (a 500 everywhere, the
    anonymous enrolment included). Every door, every principal: a 4xx problem+json that is valid UTF-8."""
    wrong = []
    for _, where, response in _every_body_door(world, SURROGATE_KEY):
        if response.status_code >= 500 or response["Content-Type"] != PROBLEM:
            wrong.append(f"{where}: {response.status_code}")
        else:
            response.content.decode("utf-8")  # strict: a lone surrogate cannot have been written
    assert not wrong, "\n".join(wrong)


def test_a_surrogate_key_in_a_batch_line_is_refused_alone_and_the_stored_lines_are_reported(
    api: APIClient, server_example: dict[str, Any]
) -> None:
    """The batch stored lines 1 and 3, then failed to write its answer (a 500 hiding two stored runs)."""
    hostile = json.dumps(variant(server_example, "lab-x")).replace('"settings": {', '"settings": {"\\ud800": 1, ', 1)
    assert "\\ud800" in hostile
    body = (
        "\n".join([json.dumps(variant(server_example, "lab-a")), hostile, json.dumps(variant(server_example, "lab-b"))])
        + "\n"
    )
    response = _quiet(api).post("/api/v1/submissions", body, content_type="application/x-ndjson")
    assert response.status_code == 200, response.content[:300]
    lines = [json.loads(line) for line in response.content.decode("utf-8").splitlines()]
    assert [(x["line"], x["result"]) for x in lines] == [(1, "stored"), (2, "refused"), (3, "stored")]
    assert [e["pointer"] for e in lines[1]["problem"]["errors"]] == ["/software/settings/\\ud800"]
    assert sorted(Submission.objects.values_list("system_name", flat=True)) == ["lab-a", "lab-b"]


def test_run_ids_beyond_any_row_are_unknown_runs_not_a_500(
    api: APIClient, user: Any, server_example: dict[str, Any]
) -> None:
    run = submission_create(document=variant(server_example, "lab-a"), submitted_by=user)[0]
    response = _quiet(api).post("/api/v1/comparisons", {"runs": [2**70, run.pk]}, format="json")
    assert response.status_code in (400, 422) and response["Content-Type"] == PROBLEM, response.content[:300]
    assert _pointers(response) == ["/runs/0"]
    page = APIClient(SERVER_NAME="localhost")
    page.force_login(user)
    page.raise_request_exception = False
    answer = page.post("/compare/", {"runs": f"{run.pk}, 99999999999999999999", "axis": "system"})
    assert answer.status_code == 400 and b"There is no run 99999999999999999999" in answer.content


def test_an_agent_id_beyond_any_row_is_an_invalid_choice_on_the_plan_form() -> None:
    from registry.models import Agent
    from registry.web.forms import RowChoiceField

    field = RowChoiceField(queryset=Agent.objects.all())
    for hostile in (["99999999999999999999"], ["-1"], ["1e3"]):
        with pytest.raises(Exception) as refused:
            field.clean(hostile)
        assert getattr(refused.value, "code", None) == "invalid_choice", hostile


def test_comparison_prices_have_the_report_prices_range(
    api: APIClient, user: Any, server_example: dict[str, Any]
) -> None:
    runs = [submission_create(document=variant(server_example, n), submitted_by=user)[0].pk for n in ("a", "b")]
    response = _quiet(api).post("/api/v1/comparisons", {"runs": runs, "prices": {"a": 1e308}}, format="json")
    assert response.status_code == 400 and _pointers(response) == ["/prices/a"], response.content[:300]


@pytest.mark.postgres
def test_nul_never_reaches_a_postgresql_text_column(api: APIClient, server_example: dict[str, Any]) -> None:
    """PostgreSQL refuses NUL in text and JSONB (a 500 at the INSERT): each path in is refused before it."""
    client = _quiet(api)
    token = client.post("/api/v1/tokens", '{"name": "a\\u0000b", "scopes": ["read"]}', content_type="application/json")
    assert token.status_code == 422 and _pointers(token) == ["/name"]
    query = client.get("/api/v1/submissions", {"system_name": "a\x00b"})
    assert query.status_code == 422 and query["Content-Type"] == PROBLEM
    with pytest.raises(Exception) as refused:
        submission_create(
            document=variant(server_example, "a\x00b"),
            submitted_by=Submission._meta.get_field("submitted_by").related_model.objects.get(username="lab-7"),
        )
    assert getattr(refused.value, "errors", None) == [
        {"pointer": "/system/name", "code": "unstorable-text", "message": refused.value.errors[0]["message"]}
    ]
    assert not Submission.objects.exists()


# --- cron -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cron", ["-1 * * * *", "0 -2 * * *", "0 0 -5-3 * *", "*/0 * * * *", "1,,2 * * * *"])
def test_a_cron_field_no_schedule_can_keep_is_a_400(world: dict[str, Any], cron: str) -> None:  # noqa: F811
    client = _quiet(_knock(world, "submitter").api)
    response = client.post(
        "/api/v1/schedules", {"plan": world["plan"].pk, "cron": cron, "agents": ["rig-a"]}, format="json"
    )
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM, response.content[:300]
    assert _pointers(response) == ["/cron"]
    change = client.patch(f"/api/v1/schedules/{world['schedule'].pk}", {"cron": cron}, format="json")
    assert change.status_code == 400 and _pointers(change) == ["/cron"]


# --- bodies too large -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "path"),
    [
        ("anonymous", "/api/v1/agents/enroll"),
        ("submitter", "/api/v1/tokens"),
        ("submitter", "/api/v1/comparisons"),
        ("submitter", "/api/v1/decisions"),
        ("submitter", "/api/v1/schedules"),
        ("agent", "/api/v1/agents/heartbeat"),
    ],
)
def test_a_6_mib_body_is_413_problem_json_on_every_endpoint(
    world: dict[str, Any],  # noqa: F811
    who: str,
    path: str,
) -> None:
    body = b'{"name": "' + b"x" * BIG + b'"}'
    response = _quiet(_knock(world, who).api).post(path, body, content_type="application/json")
    assert response.status_code == 413 and response["Content-Type"] == PROBLEM, (path, response.content[:300])
    assert response.json()["code"] == "payload-too-large"


def test_a_6_mib_form_is_a_plain_413_page(world: dict[str, Any]) -> None:  # noqa: F811
    web = _quiet(_knock(world, "submitter").web)
    response = web.post("/tokens/", {"name": "x" * BIG, "scopes": ["read"]})
    assert response.status_code == 413 and response["Content-Type"].startswith("text/html")
    assert b"Payload too large" in response.content


# --- a comparison names each run once ---------------------------------------------------------------------------


def test_the_same_run_twice_in_a_comparison_is_a_400_with_its_pointer(world: dict[str, Any]) -> None:  # noqa: F811
    client = _quiet(_knock(world, "submitter").api)
    a, b = world["runs"]
    for runs, pointer in (([a.pk, a.pk], "/runs/1"), ([a.pk, b.pk, a.digest], "/runs/2")):
        response = client.post("/api/v1/comparisons", {"runs": runs, "axis": "system"}, format="json")
        assert response.status_code == 400 and response["Content-Type"] == PROBLEM, response.content[:300]
        assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [(pointer, "duplicate-run")]


# --- CSV exports ------------------------------------------------------------------------------------------------

FORMULAS = ['=HYPERLINK("http://evil")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx"]


def _cells(content: bytes) -> list[str]:
    text = content.decode()
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row if not row[0].startswith("#")]


def _no_formula(cells: list[str]) -> None:
    from registry.presentation.spreadsheet import FORMULA_START, PLAIN_NUMBER

    live = [c for c in cells if c.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(c)]
    assert not live, live


def test_csv_exports_never_carry_a_formula_and_keep_numbers(
    django_user_model: Any, server_example: dict[str, Any]
) -> None:
    from django.contrib.auth.models import Group
    from django.test import Client

    from registry.services.comparisons import comparison_create

    admin = django_user_model.objects.create_user("ada", password="pw")
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    accelerators = [{**server_example["system"]["accelerators"][0], "model": FORMULAS[0]}]
    runs = [
        submission_create(
            document=variant(server_example, name, 1000.0 + i, **{"system.accelerators": accelerators}),
            submitted_by=admin,
        )[0]
        for i, name in enumerate(FORMULAS)
    ]
    comparison, _ = comparison_create(runs=runs[:2], axis="system", created_by=admin)
    web = Client()
    web.force_login(admin)
    exports = {
        "catalogue": web.get("/?format=csv"),
        "matrix": web.get("/matrix/?format=csv"),
        "comparison": web.get(f"/comparisons/{comparison.pk}/?format=csv"),
    }
    for name, response in exports.items():
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), name
        cells = _cells(response.content)
        _no_formula(cells)
        assert f"'{FORMULAS[0]}" in cells or f"'{FORMULAS[1]}" in cells, name  # shown as typed, with the prefix
    assert "'" + FORMULAS[2] in _cells(exports["catalogue"].content)
    assert "1000.0" in _cells(exports["catalogue"].content)  # numbers stay numbers
    api = APIClient()
    api.force_authenticate(admin)
    question = {
        "workload": server_example["workload"]["name"],
        "scenario": "server",
        "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
        "demand": {"value": 20000, "unit": "tokens/s"},
        "prices": {"accelerator_hour": {FORMULAS[0]: 98.0}},
    }
    decision = api.post("/api/v1/decisions", {"title": "=1+1", "question": question}, format="json")
    assert decision.status_code == 201, decision.content[:500]
    exported = api.get(f"/api/v1/decisions/{decision.json()['id']}/export")
    assert exported.status_code == 200
    cells = _cells(exported.content)
    _no_formula(cells)
    assert any(c.startswith("'=HYPERLINK") for c in cells), cells[:20]


def test_csv_safe_prefixes_text_only() -> None:
    from registry.presentation.spreadsheet import csv_safe

    assert [csv_safe(v) for v in ("=1", "+x", "-x", "@x", "\tx", "\rx", "-1.5", "+3", "1e5", "lab", "")] == [
        "'=1",
        "'+x",
        "'-x",
        "'@x",
        "'\tx",
        "'\rx",
        "-1.5",
        "+3",
        "1e5",
        "lab",
        "",
    ]
    assert [csv_safe(v) for v in (-1.5, -3, None, True)] == [-1.5, -3, None, True]


def test_plan_fixture_is_unchanged_by_refusals(world: dict[str, Any]) -> None:  # noqa: F811
    """Nothing partial: the refused requests above leave the world's plan and schedule as they were."""
    client = _quiet(_knock(world, "submitter").api)
    client.post(
        "/api/v1/schedules", {"plan": world["plan"].pk, "cron": "-1 * * * *", "agents": ["rig-a"]}, format="json"
    )
    assert Plan.objects.count() == 1 and world["schedule"].__class__.objects.count() == 1


def test_a_number_beyond_every_double_in_any_body_is_a_400_with_its_pointer(world: dict[str, Any]) -> None:  # noqa: F811
    """1e400 parses as Infinity, which no JSON column and no statistic takes; a large integer is the field's call."""
    client = _quiet(_knock(world, "submitter").api)
    a, b = world["runs"]
    body = f'{{"runs": [{a.pk}, {b.pk}], "prices": {{"lab-h200-02": 1e400}}}}'
    response = client.post("/api/v1/comparisons", body, content_type="application/json")
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [
        ("/prices/lab-h200-02", "non-finite-number")
    ]
    huge = client.post("/api/v1/comparisons", f'{{"runs": [{a.pk}, {"9" * 400}]}}', content_type="application/json")
    assert huge.status_code == 400 and _pointers(huge) == ["/runs/1"]


# --- values the schema allows but a column cannot hold --------------------------------------------------------

INT4 = 2**31 - 1  # PostgreSQL's int4, which a PositiveIntegerField is: the refusal is the same on SQLite
BEYOND_COLUMNS = {
    "batch size 2^31": (
        {"workload.shape.batch_size": INT4 + 1},
        "/workload/shape/batch_size",
        "integer-out-of-range",
        f"{INT4 + 1} is beyond what this registry stores for workload.shape.batch_size (at most {INT4})",
    ),
    "accelerator count 2^53": (
        {"system.accelerators.0.count": 2**53},
        "/system/accelerators/0/count",
        "integer-out-of-range",
        f"at most {INT4}",
    ),
    "vendor of 201 characters": (
        {"system.accelerators.0.vendor": "v" * 201},
        "/system/accelerators/0/vendor",
        "too-long",
        "201 characters is beyond what this registry stores for system.accelerators[0].vendor (at most 200)",
    ),
}


def _beyond(document: dict[str, Any], system: str, edits: dict[str, Any]) -> dict[str, Any]:
    doc = variant(document, system)
    for path, value in edits.items():  # `variant` walks dicts only; these paths pass through a list
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    return doc


@pytest.mark.parametrize("kind", sorted(BEYOND_COLUMNS))
def test_a_value_beyond_its_column_is_refused_with_its_pointer(
    api: APIClient, server_example: dict[str, Any], kind: str
) -> None:
    """The schema allowed it and PostgreSQL refused the row (int4, varchar(200)): a 500 storing nothing."""
    edits, where, code, message = BEYOND_COLUMNS[kind]
    response = _quiet(api).post("/api/v1/submissions", _beyond(server_example, "lab-x", edits), format="json")
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM, response.content[:300]
    [error] = response.json()["errors"]
    assert (error["pointer"], error["code"]) == (where, code) and message in error["message"]
    assert not Submission.objects.exists()


@pytest.mark.parametrize("kind", sorted(BEYOND_COLUMNS))
def test_a_value_beyond_its_column_in_a_batch_is_refused_alone(
    api: APIClient, server_example: dict[str, Any], kind: str
) -> None:
    edits, where, code, _ = BEYOND_COLUMNS[kind]
    body = (
        "\n".join(
            json.dumps(d)
            for d in (
                variant(server_example, "lab-a"),
                _beyond(server_example, "lab-x", edits),
                variant(server_example, "lab-b"),
            )
        )
        + "\n"
    )
    response = _quiet(api).post("/api/v1/submissions", body, content_type="application/x-ndjson")
    assert response.status_code == 200, response.content[:300]
    lines = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [(x["line"], x["result"]) for x in lines] == [(1, "stored"), (2, "refused"), (3, "stored")]
    assert [(e["pointer"], e["code"]) for e in lines[1]["problem"]["errors"]] == [(where, code)]
    assert sorted(Submission.objects.values_list("system_name", flat=True)) == ["lab-a", "lab-b"]


def test_the_largest_values_a_column_holds_are_stored(user: Any, server_example: dict[str, Any]) -> None:
    run, created = submission_create(
        document=_beyond(
            server_example,
            "lab-x",
            {
                "workload.shape.batch_size": INT4,
                "system.accelerators.0.count": INT4,
                "system.accelerators.0.vendor": "v" * 200,
            },
        ),
        submitted_by=user,
    )
    run.refresh_from_db()
    assert created and (run.batch_size, run.accelerator_count, len(run.accelerator_vendor)) == (INT4, INT4, 200)


def test_accelerator_counts_summing_beyond_the_column_are_refused_at_the_list(
    user: Any, server_example: dict[str, Any]
) -> None:
    from registry.services.submissions import InvalidDocument

    first = server_example["system"]["accelerators"][0]
    document = variant(server_example, "lab-x", **{"system.accelerators": [{**first, "count": 2**30}] * 2})
    with pytest.raises(InvalidDocument) as refused:
        submission_create(document=document, submitted_by=user)
    assert [(e["pointer"], e["code"]) for e in refused.value.errors] == [
        ("/system/accelerators", "integer-out-of-range")
    ]
    assert "the sum of system.accelerators[*].count" in refused.value.errors[0]["message"]


def test_an_mlperf_system_beyond_a_column_refuses_its_results_alone(tmp_path: Any, user: Any) -> None:
    """The admin upload and `benchreg import mlperf` store through the same batch: each result is reported."""
    from registry.services.imports import mlperf_import
    from tests.registry.importers.test_import_service import SAMPLE, SYSTEM, add_second_system, import_submission

    if not SAMPLE.exists():
        pytest.skip("the shared MLPerf sample tree is not beside this checkout")
    root = tmp_path / "mlperf"
    shutil.copytree(SAMPLE, root)
    add_second_system(root)
    systems = import_submission(root) / "systems"
    system = json.loads((systems / f"{SYSTEM}.json").read_text())
    (systems / f"{SYSTEM}.json").write_text(json.dumps({**system, "number_of_nodes": 2**31}))
    result = mlperf_import(root=root, submitted_by=user)
    assert result.counts == {"stored": 3, "refused": 3}
    for outcome in result.outcomes:
        assert (outcome.status == "refused") == outcome.key.startswith(f"{SYSTEM}/"), outcome.key
        if outcome.status == "refused":
            assert [e.split(":")[0] for e in outcome.errors] == ["/system/accelerators/0/count"], outcome.errors
    assert Submission.objects.count() == 3
