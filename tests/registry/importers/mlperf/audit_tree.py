"""Small authored MLPerf Inference trees with audit (compliance) test results, for the importer's and the run page's
tests. Every file is written here in the published format with made-up numbers (nothing copied from a round).

A resnet Offline result (resnet needs TEST01 and TEST04 in v5.1 and v6.0, by MLCommons' checker), with verdict files
put where the round puts them: beside the result under compliance/ (`layout="compliance"`, v4.x-v5.x) or inside the
result folder (`layout="inside"`, v6.0 on).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.registry.importers.mlperf.test_layouts import SYSTEM, submission_tree

# What the verification scripts write (compliance/TEST01/verify_*.py, TEST04/verify_performance.py, ...): made-up
# counts and scores in their format.
TEST01_ACCURACY_PASS = (
    "Verifying accuracy. This might take a while...\nnum_acc_log_entries = 120\nnum_acc_log_duplicate_keys = 0\n"
    "num_acc_log_data_mismatch = 0\nnum_perf_log_entries = 300\nnum_perf_log_qsl_idx_match = 300\n"
    "num_perf_log_data_mismatch = 0\nnum_missing_qsl_idxs = 0\nTEST PASS\n\n"
)
TEST01_ACCURACY_FAIL = TEST01_ACCURACY_PASS.replace("data_mismatch = 0\nnum_missing", "data_mismatch = 7\nnum_missing")
TEST01_ACCURACY_FAIL = TEST01_ACCURACY_FAIL.replace("TEST PASS", "TEST FAIL")
PERFORMANCE_PASS = "Verifying performance.\nReference score = 1234.5\nTest score = 1230.1\nTEST PASS\n"
PERFORMANCE_FAIL = (
    "Verifying performance.\nreference score = 1234.5\ntest score = 1801.2\nTEST FAIL: Test score invalid\n"
)


def resnet_result(
    tmp_path: Path,
    *,
    round_name: str = "v6.0",
    layout: str = "inside",
    division: str = "closed",
    audits: dict[str, dict[str, str]] | None = None,
) -> Path:
    """The round folder (named inference_results_<round>, as MLCommons names it) holding one resnet result with the
    given verdict files ({"TEST01": {"verify_accuracy.txt": text, ...}})."""
    tree = tmp_path / f"inference_results_{round_name}"
    root = submission_tree(tree)
    if division != "closed":
        system = root / "systems" / f"{SYSTEM}.json"
        system.write_text(json.dumps({**json.loads(system.read_text()), "division": division}))
    result = root / "results" / SYSTEM / "resnet50" / "Offline"
    folder = result if layout == "inside" else root / "compliance" / SYSTEM / "resnet50" / "Offline"
    for test, files in (audits or {}).items():
        (folder / test).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / test / name).write_text(text)
    return tree


def passing() -> dict[str, dict[str, str]]:
    return {
        "TEST01": {"verify_accuracy.txt": TEST01_ACCURACY_PASS, "verify_performance.txt": PERFORMANCE_PASS},
        "TEST04": {"verify_performance.txt": PERFORMANCE_PASS},
    }
