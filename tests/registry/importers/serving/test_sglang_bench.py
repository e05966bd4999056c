"""SGLang's bench_serving results (sglang 0.5.23, tests/fixtures/serving/sglang-0.5.23): recognised and refused in
words through `benchreg import serving`, nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError

from registry.importers.serving import sglang_bench
from registry.models import Submission
from tests.registry.importers.serving.test_vllm_bench import run_import

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "serving" / "sglang-0.5.23"
FILES = [FIXTURES / "rate-detailed" / "results.jsonl", FIXTURES / "concurrency" / "results.jsonl"]

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", FILES, ids=["rate-detailed", "concurrency"])
def test_sglang_results_are_refused_by_name_and_nothing_is_stored(tmp_path, user, path):
    with pytest.raises(CommandError) as refused:
        run_import(tmp_path, path)
    words = str(refused.value)
    assert str(path) in words and "SGLang's bench_serving results" in words and "nothing was stored" in words
    assert Submission.objects.count() == 0


def test_sglang_results_beside_files_that_import_store_nothing(tmp_path, user):
    vllm = Path(__file__).resolve().parents[3] / "fixtures" / "serving" / "vllm-0.33.0" / "rate-sweep"
    with pytest.raises(CommandError, match="SGLang"):
        run_import(tmp_path, vllm, FILES[1])
    assert Submission.objects.count() == 0


def test_only_sglang_files_are_taken_for_sglang_files():
    # every line of the real files has the keys; another tool's JSONL, a closing brace or deep nesting does not
    for path in FILES:
        assert all(sglang_bench.is_sglang(line) for line in path.read_bytes().splitlines())
    assert not sglang_bench.is_sglang(b'{"backend": "vllm", "total_output_tokens_retokenized": 1}\n')
    assert not sglang_bench.is_sglang(b"[" * 100_000 + b'"total_output_tokens_retokenized"')
    assert not sglang_bench.is_sglang(b'{"total_output_tokens_retokenized": ' + b"[" * 100_000)
