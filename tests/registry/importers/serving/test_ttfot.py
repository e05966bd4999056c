"""Time to first output (answer) token, protocol 1.3's `metrics.ttfot_ms`, imported field for field from the tools
that write it: aiperf's `time_to_first_output_token` (0.8.0 and 0.13.0: summary and per-request records) and
guidellm 0.8's `time_to_first_output_token_ms`. A level carrying it declares 1.3 (the field exists only there); a
level without it keeps 1.2 and the document (and digest) it always had; importing the same files again stores
nothing new (issue 41, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

import protocol
from registry.models import Submission
from tests.registry.importers.serving.test_aiperf_sweeps import DATA, KIMI, deployment_file
from tests.registry.importers.serving.test_tool_fixtures import AIPERF, GUIDELLM, copy_of, run_import

pytestmark = pytest.mark.django_db
AIPERF_LEVEL = AIPERF / "concurrency" / "concurrency_1"


def _without_ttfot(tmp_path: Path) -> tuple[Path, Path]:
    """Copies of an aiperf level and a guidellm report as tools that do not write TTFO/TTFOT write them."""
    folder = copy_of(tmp_path, AIPERF_LEVEL)
    summary = folder / "profile_export_aiperf.json"
    data = json.loads(summary.read_text())
    del data["time_to_first_output_token"]
    summary.write_text(json.dumps(data))
    records = folder / "profile_export.jsonl"
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    for line in lines:
        line["metrics"].pop("time_to_first_output_token", None)
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = copy_of(tmp_path, GUIDELLM / "poisson" / "benchmarks.json")
    data = json.loads(report.read_text())
    for bench in data["benchmarks"]:
        del bench["metrics"]["time_to_first_output_token_ms"]
    report.write_text(json.dumps(data))
    return folder, report


def test_a_level_without_ttfot_keeps_protocol_1_2_and_is_known_when_imported_again(tmp_path, user):
    folder, report = _without_ttfot(tmp_path)
    docs = run_import(tmp_path, folder, report)
    assert [d["protocol"] for d in docs] == ["benchreg.submission/1.2"] * 2
    assert all("ttfot_ms" not in d["metrics"] and protocol.errors(d) == [] for d in docs)
    assert all("ttfot_ms" not in (d["provenance"]["origin"]["unparsed"] or {}) for d in docs)
    run_import(tmp_path, folder, report)
    assert Submission.objects.count() == 2


def test_a_level_with_ttfot_declares_1_3_and_is_known_when_imported_again(tmp_path, user, capsys):
    docs = run_import(tmp_path, AIPERF_LEVEL, GUIDELLM / "poisson" / "benchmarks.json")
    assert [d["protocol"] for d in docs] == ["benchreg.submission/1.3"] * 2
    digests = {run.digest for run in Submission.objects.all()}
    capsys.readouterr()
    run_import(tmp_path, AIPERF_LEVEL, GUIDELLM / "poisson" / "benchmarks.json")
    assert "2 known" in capsys.readouterr().out
    assert {run.digest for run in Submission.objects.all()} == digests


def test_a_level_with_ttfot_in_a_1_2_document_is_refused_by_the_protocol(tmp_path, user):
    """Why the version is raised: 1.2 has no ttfot_ms, and a reader of 1.2 would refuse the document."""
    (doc,) = run_import(tmp_path, AIPERF_LEVEL)
    codes = {(e.pointer, e.code) for e in protocol.errors({**doc, "protocol": "benchreg.submission/1.2"})}
    assert ("/metrics/ttfot_ms", "needs-newer-minor") in codes


def test_aiperf_ttfo_of_a_reasoning_model_is_imported_beside_ttft_with_its_request_count(tmp_path, user):
    """The Kimi K2.5 sweep (aiperf 0.8.0, a reasoning model, agentic tool calls): TTFO is seconds after TTFT and
    covers only the requests whose answer carried text; the per-request records give the summary's figures back."""
    if not DATA.exists():
        pytest.skip("the shared serving data is not beside this checkout")
    level = next((DATA / KIMI).glob("agentic_*_conc1_*/aiperf_artifacts"))
    summary = json.loads((level / "profile_export_aiperf.json").read_text())
    records = [json.loads(line) for line in (level / "profile_export.jsonl").read_text().splitlines() if line]
    ttfo = [
        r["metrics"]["time_to_first_output_token"]["value"]
        for r in records
        if r["metrics"].get("time_to_first_output_token")
    ]
    call_command("import_results", "serving", str(level), "--deployment", str(deployment_file(tmp_path, KIMI)))
    (run,) = Submission.objects.all()
    metrics = run.document["metrics"]
    assert run.document["protocol"] == "benchreg.submission/1.3"
    assert metrics["ttfot_ms"]["count"] == len(ttfo) == summary["time_to_first_output_token"]["count"] == 25
    assert metrics["ttft_ms"]["count"] == 66
    assert metrics["ttfot_ms"]["mean"] == pytest.approx(sum(ttfo) / len(ttfo), rel=1e-9)
    assert metrics["ttfot_ms"]["p50"] > 5 * metrics["ttft_ms"]["p50"]  # the reasoning before the answer
    assert "the 25 of 66 requests" in run.document["provenance"]["origin"]["unparsed"]["ttfot_ms"]


def _records_altered(tmp_path: Path, change) -> Path:
    folder = copy_of(tmp_path, AIPERF_LEVEL)
    records = folder / "profile_export.jsonl"
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    change(lines)
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_aiperf_per_request_ttfo_disagreeing_with_the_summary_is_refused(tmp_path, user):
    def slower(lines):
        lines[0]["metrics"]["time_to_first_output_token"]["value"] += 500.0

    with pytest.raises(CommandError, match="mean time_to_first_output_token from the per-request records"):
        run_import(tmp_path, _records_altered(tmp_path, slower))
    assert Submission.objects.count() == 0


def test_aiperf_per_request_ttfo_without_one_in_the_summary_is_refused(tmp_path, user):
    folder = copy_of(tmp_path, AIPERF_LEVEL)
    summary = folder / "profile_export_aiperf.json"
    data = json.loads(summary.read_text())
    del data["time_to_first_output_token"]
    summary.write_text(json.dumps(data))
    with pytest.raises(CommandError, match="have a time_to_first_output_token, the summary has none"):
        run_import(tmp_path, folder)
    assert Submission.objects.count() == 0
