"""Protocol 1.3, streams and exports: the time to first output token, the reasoning token total and the files kept
with a run are accepted when declared 1.3, refused by name when declared 1.2, and held to the serving rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.protocol.test_protocol_1_2 import DIST, found, level
from tests.protocol.test_protocol_versions import declaring, put

DIGEST = "sha256:" + "cd" * 32
ADDITIONS_1_3: list[tuple[str, Any]] = [
    ("/metrics/ttfot_ms", DIST),
    ("/metrics/token_counts/reasoning_total", 7),
    (
        "/provenance/artifacts",
        [
            {
                "name": "serving-ab-00-c1-requests-0123456789ab.jsonl",
                "sha256": DIGEST,
                "bytes": 1234,
                "media_type": "application/jsonl",
                "format": "benchreg.serving.requests/1",
                "description": None,
            }
        ],
    ),
]


@pytest.mark.parametrize(("pointer", "value"), ADDITIONS_1_3, ids=lambda x: str(x)[:40])
def test_1_3_accepts_each_addition_and_1_2_refuses_it_naming_1_3(pointer: str, value: Any) -> None:
    doc = put(level(), pointer, copy.deepcopy(value))
    assert found(declaring(doc, "1.3")) == []
    refused = found(doc)  # still declaring 1.2
    assert (pointer, "needs-newer-minor") in refused, refused


def test_the_time_to_first_output_token_needs_a_stream_and_counts_no_more_than_completed() -> None:
    doc = declaring(put(level(), "/metrics/ttfot_ms", {**DIST, "count": 5000}), "1.3")
    assert ("/metrics/ttfot_ms/count", "requests-do-not-add-up") in found(doc)
    doc = put(declaring(put(level(), "/metrics/ttfot_ms", DIST), "1.3"), "/software/serving/streaming", False)
    assert ("/metrics/ttfot_ms", "needs-streaming") in found(doc)


def test_an_artifact_is_a_plain_file_name_with_a_sha256() -> None:
    bad = [{"name": "../etc/passwd", "sha256": DIGEST}, {"name": "a.jsonl", "sha256": "cd" * 32}]
    doc = declaring(put(level(), "/provenance/artifacts", bad), "1.3")
    pointers = {p for p, _ in found(doc)}
    assert {"/provenance/artifacts/0/name", "/provenance/artifacts/1/sha256"} <= pointers
