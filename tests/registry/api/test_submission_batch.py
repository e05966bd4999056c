"""A batch of runs in one request (application/x-ndjson), one result line per document."""

from __future__ import annotations

import copy
import json

import pytest

import protocol
from registry.models import AuditEntry, Submission

pytestmark = pytest.mark.django_db

NDJSON = "application/x-ndjson"


def _variant(document, i):
    out = copy.deepcopy(document)
    out["system"]["name"] = f"batch-node-{i:04d}"
    return out


def post_batch(api, lines, **extra):
    body = b"\n".join(line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines) + b"\n"
    return api.generic("POST", "/api/v1/submissions", body, content_type=NDJSON, **extra)


def results(response):
    assert response["Content-Type"] == NDJSON
    return [json.loads(line) for line in response.content.decode().splitlines()]


def test_each_document_of_a_batch_stands_or_falls_alone(api, server_example):
    known = api.generic(
        "POST", "/api/v1/submissions", json.dumps(server_example).encode(), content_type="application/json"
    ).json()
    bad = _variant(server_example, 2)
    bad["phase"] = "serving"
    response = post_batch(
        api, [_variant(server_example, 1), server_example, bad, b"{not json", b"", _variant(server_example, 5)]
    )
    assert response.status_code == 200
    lines = results(response)
    assert [(r["line"], r["status"], r["result"]) for r in lines] == [
        (1, 201, "stored"),
        (2, 200, "known"),
        (3, 400, "refused"),
        (4, 400, "refused"),
        (6, 201, "stored"),
    ]
    assert lines[1]["id"] == known["id"] and lines[1]["digest"] == known["digest"]
    assert lines[0]["digest"] == protocol.digest(_variant(server_example, 1))
    assert lines[0]["url"].endswith(f"/api/v1/submissions/{lines[0]['id']}")
    assert lines[2]["problem"]["errors"][0]["pointer"] == "/phase"
    assert Submission.objects.count() == 3  # the known one and two new; the refused ones stored nothing
    assert AuditEntry.objects.filter(kind="run.submitted").count() == 3


def test_a_refused_line_gets_the_problem_details_a_single_submission_would(api, server_example):
    bad = _variant(server_example, 1)
    bad["precision"]["weights"] = "int8"
    del bad["system"]["name"]
    for body in (json.dumps(bad).encode(), b'{"a": 1, "a": 2}', b"[1, NaN]"):
        single = api.generic("POST", "/api/v1/submissions", body, content_type="application/json")
        (line,) = results(post_batch(api, [body]))
        assert single.status_code == 400 and line["status"] == 400
        assert line["problem"] == single.json()
        assert line["problem"]["errors"] and all("pointer" in e for e in line["problem"]["errors"])


def test_an_oversized_line_is_refused_alone(api, server_example, settings):
    settings.MAX_SUBMISSION_BYTES = 4000
    huge = _variant(server_example, 1)
    huge["notes"] = "x" * 5000
    lines = results(post_batch(api, [_variant(server_example, 0), huge]))
    assert [r["status"] for r in lines] == [201, 413]
    assert lines[1]["problem"]["code"] == "payload-too-large"


def test_the_batch_limits_are_problem_details(api, server_example, settings):
    settings.MAX_BATCH_DOCUMENTS = 3
    response = post_batch(api, [_variant(server_example, i) for i in range(4)])
    assert response.status_code == 413 and response["Content-Type"] == "application/problem+json"
    assert "limit is 3" in response.json()["detail"]
    settings.MAX_BATCH_BYTES = 100
    response = post_batch(api, [_variant(server_example, 0)])
    assert response.status_code == 413 and "100 bytes" in response.json()["detail"]
    empty = api.generic("POST", "/api/v1/submissions", b"\n\n", content_type=NDJSON)
    assert empty.status_code == 400 and empty.json()["code"] == "invalid-document"
    assert not Submission.objects.exists()


def test_a_batch_needs_the_submit_scope(anonymous, user, server_example):
    from rest_framework.test import APIClient

    from registry.services.tokens import token_create

    assert post_batch(anonymous, [server_example]).status_code in (401, 403)
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='r', scopes='read')[1]}")
    assert post_batch(reader, [server_example]).status_code == 403
    assert not Submission.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_batch_through_the_api_is_integrated_into_the_log_on_commit(api, server_example):
    lines = results(post_batch(api, [_variant(server_example, i) for i in range(30)]))
    assert {r["status"] for r in lines} == {201}
    entries = AuditEntry.objects.filter(kind="run.submitted").order_by("seq")
    assert [e.subject for e in entries] == [r["digest"] for r in lines]  # in line order, gapless


def test_a_document_twice_in_one_batch_is_stored_once(api, server_example):
    first = _variant(server_example, 1)
    lines = results(post_batch(api, [first, _variant(server_example, 2), first]))
    assert [(r["status"], r["result"]) for r in lines] == [(201, "stored"), (201, "stored"), (200, "known")]
    assert lines[2]["id"] == lines[0]["id"]
    assert AuditEntry.objects.filter(kind="run.submitted", subject=lines[0]["digest"]).count() == 1
