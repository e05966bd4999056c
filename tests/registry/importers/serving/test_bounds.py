"""`benchreg import serving` on files past the bounds a tool's file keeps (registry/importers/serving/reading.py):
nesting too deep, a 400-digit integer, NaN (a series of per-request ITLs of NaN), in JSON, JSONL and YAML. Each is
refused through the command with the file, the JSON pointer and the reason; nothing is stored, not even the good
files named beside it."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError

from registry.models import Submission
from tests.registry.importers.serving.test_tool_fixtures import AIPERF, GUIDELLM
from tests.registry.importers.serving.test_vllm_bench import CONCURRENCY, RATES, run_import

pytestmark = pytest.mark.django_db


def _refused(tmp_path: Path, *files: Path) -> str:
    with pytest.raises(CommandError) as refused:
        run_import(tmp_path, RATES / "rate-8qps.json", *files)
    assert Submission.objects.count() == 0
    assert "nothing was stored" in str(refused.value)
    return str(refused.value)


def _vllm(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "altered.json"
    path.write_text(text)
    return path


def test_json_nested_deeper_than_the_parser_follows_is_refused_with_where(tmp_path, user):
    source = json.loads((CONCURRENCY / "concurrency-4.json").read_text())
    text = json.dumps(source)[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    bad = _vllm(tmp_path, text)
    said = _refused(tmp_path, bad)
    assert f"{bad}: arrays and objects nested more than 64 levels deep from line 1, column" in said


def test_json_nested_past_the_bound_is_refused_with_its_pointer(tmp_path, user):
    source = json.loads((CONCURRENCY / "concurrency-4.json").read_text())
    nest: list[object] = []
    for _ in range(80):
        nest = [nest]
    source["metadata"] = {"deep": nest}
    bad = _vllm(tmp_path, json.dumps(source))
    said = _refused(tmp_path, bad)
    assert f"{bad}: /metadata/deep/0/0/0/" in said and "nested more than 64 levels deep" in said


def test_a_400_digit_integer_is_refused_with_its_pointer(tmp_path, user):
    source = (CONCURRENCY / "concurrency-4.json").read_text()
    completed = json.loads(source)["completed"]
    bad = _vllm(tmp_path, source.replace(f'"completed": {completed},', f'"completed": {"9" * 400},', 1))
    said = _refused(tmp_path, bad)
    assert f"{bad}: /completed: an integer beyond the largest double: no measurement" in said


def test_per_request_itls_of_nan_are_refused_not_dropped(tmp_path, user):
    source = json.loads((CONCURRENCY / "concurrency-4.json").read_text())
    source["itls"] = [[math.nan for _ in gaps] for gaps in source["itls"]]
    bad = _vllm(tmp_path, json.dumps(source))
    said = _refused(tmp_path, bad)
    assert f"{bad}: /itls/" in said and "NaN, Infinity or a number beyond the largest double" in said
    assert "refused rather than dropped" in said and "(and " in said  # every request's gaps, the first three named


def test_a_jsonl_record_past_a_bound_is_refused_with_its_line_and_pointer(tmp_path, user):
    level = tmp_path / "concurrency_1"
    shutil.copytree(AIPERF / "concurrency" / "concurrency_1", level)
    records = (level / "profile_export.jsonl").read_text().splitlines()
    record = json.loads(records[1])
    record["metrics"]["time_to_first_token"]["value"] = math.inf
    records[1] = json.dumps(record)
    (level / "profile_export.jsonl").write_text("\n".join(records) + "\n")
    with pytest.raises(CommandError) as refused:
        run_import(tmp_path, level)
    assert f"{level / 'profile_export.jsonl'}: line 2, /metrics/time_to_first_token/value: NaN, Infinity" in str(
        refused.value
    )
    assert Submission.objects.count() == 0


def test_a_yaml_report_with_a_nan_is_refused_with_its_pointer(tmp_path, user):
    report = (GUIDELLM / "sweep" / "benchmarks.yaml").read_text()
    assert "guidellm_version" in report
    bad = tmp_path / "benchmarks.yaml"
    bad.write_text(report.replace("benchmarks:", "nan_here: .nan\nbenchmarks:", 1))
    said = _refused(tmp_path, bad)
    assert f"{bad}: /nan_here: NaN, Infinity" in said
