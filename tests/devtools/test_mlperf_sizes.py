"""devtools.mlperf_sizes: the authored multi-size MLPerf Training tree keeps what the importer and MLCommons' checker
read consistent (initialization untouched, records in order, quality unchanged) and hits the chosen times exactly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from devtools.mlperf_sizes import sized_training_round
from registry.importers.mlperf import training
from tests.conftest import SHARED

ROUND = Path(os.environ.get("BENCHREG_MLPERF_ROUNDS") or SHARED / "data" / "mlperf-rounds") / "training_v4.0"
SUBMITTER, SYSTEM, BENCHMARK = "Quanta_Cloud_Technology", "D54U-3U", "dlrm_dcnv2"

pytestmark = pytest.mark.skipif(
    not (ROUND / SUBMITTER / "results" / SYSTEM).is_dir(), reason=f"no shared MLPerf Training v4.0 round at {ROUND}"
)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line.split(":::MLLOG", 1)[1]) for line in path.read_text().splitlines() if ":::MLLOG" in line]


def test_each_size_scores_the_chosen_time_with_its_logs_in_order(tmp_path: Path) -> None:
    tree = sized_training_round(ROUND, SUBMITTER, SYSTEM, BENCHMARK, {1: 36, 3: 13.3335}, tmp_path)
    plan = training.parse_tree(tree)
    by_key = {item.key: item for item in plan.items}
    assert sorted(by_key) == [f"{SYSTEM}/{BENCHMARK}", f"{SYSTEM}_n3/{BENCHMARK}"]
    for key, seconds, nodes in ((f"{SYSTEM}/{BENCHMARK}", 2160, 1), (f"{SYSTEM}_n3/{BENCHMARK}", 800.01, 3)):
        document = by_key[key].document
        assert by_key[key].errors == [] and document is not None
        assert document["metrics"]["time_to_quality"]["seconds"] == pytest.approx(seconds, abs=1e-9)
        assert document["system"]["nodes"] == nodes and document["system"]["accelerators"][0]["count"] == 4 * nodes
    published = _records(ROUND / SUBMITTER / "results" / SYSTEM / BENCHMARK / "result_0.txt")
    sized = _records(tree / SUBMITTER / "results" / f"{SYSTEM}_n3" / BENCHMARK / "result_0.txt")
    assert [r["key"] for r in sized] == [r["key"] for r in published]
    start = next(i for i, r in enumerate(published) if r["key"] == "run_start")
    assert sized[:start] != published[:start]  # the platform names 3 nodes
    assert [r["time_ms"] for r in sized[: start + 1]] == [r["time_ms"] for r in published[: start + 1]]
    assert [r["time_ms"] for r in sized] == sorted(r["time_ms"] for r in sized)
    assert [r["value"] for r in sized if r["key"] == "eval_accuracy"] == [
        r["value"] for r in published if r["key"] == "eval_accuracy"
    ]


def test_a_time_that_is_not_whole_milliseconds_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a whole number of milliseconds"):
        sized_training_round(ROUND, SUBMITTER, SYSTEM, BENCHMARK, {2: 0.000001}, tmp_path)
