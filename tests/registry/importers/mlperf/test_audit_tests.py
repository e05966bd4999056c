"""MLPerf's audit (compliance) tests, imported through `benchreg import mlperf` on authored trees: each verdict file is
read from where its round puts it, its verdict is stored in conditions.validity.checks, and a test the round's rules
require that the tree lacks is stated missing; which tests are required is the round's rule data, from the checker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from registry.models import Submission
from tests.registry.importers.mlperf.audit_tree import (
    PERFORMANCE_FAIL,
    PERFORMANCE_PASS,
    TEST01_ACCURACY_FAIL,
    passing,
    resnet_result,
)

pytestmark = pytest.mark.django_db

RULES = Path(__file__).resolve().parents[4] / "registry" / "importers" / "mlperf" / "rounds"


def _import(tree: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Import through the command; the stored document and the item of the command's JSON report."""
    report = tmp_path / "report.json"
    call_command("import_results", "mlperf", str(tree), "--no-progress", "--report", str(report))
    (item,) = json.loads(report.read_text())["items"]
    return Submission.objects.order_by("-pk").first().document, item  # the run this import stored


def _audits(document: dict[str, Any]) -> dict[str, bool]:
    checks = document["conditions"]["validity"]["checks"]
    return {k: v for k, v in checks.items() if k.startswith(("audit_", "test06_"))}


@pytest.mark.parametrize(("round_name", "layout"), [("v5.1", "compliance"), ("v6.0", "inside")])
def test_passed_audit_tests_are_read_from_where_the_round_puts_them(tmp_path, round_name, layout):
    document, item = _import(resnet_result(tmp_path, round_name=round_name, layout=layout, audits=passing()), tmp_path)
    assert _audits(document) == {
        "audit_test01_accuracy": True,
        "audit_test01_performance": True,
        "audit_test04_performance": True,
    }
    used = {f["path"] for f in item["files"] if f["status"] == "used"}
    where = "compliance/tiny-sut/resnet50/Offline" if layout == "compliance" else "results/tiny-sut/resnet50/Offline"
    assert f"closed/Acme/{where}/TEST01/verify_accuracy.txt" in used
    assert f"closed/Acme/{where}/TEST04/verify_performance.txt" in used
    # each verdict file is part of the run's evidence, by digest
    assert f"{where}/TEST04/verify_performance.txt" in document["provenance"]["origin"]["files"]


def test_a_failed_test_is_false_and_a_required_test_the_tree_lacks_is_stated_missing(tmp_path):
    tree = resnet_result(tmp_path, audits={"TEST04": {"verify_performance.txt": PERFORMANCE_FAIL}})
    document, item = _import(tree, tmp_path)
    assert _audits(document) == {"audit_test01_present": False, "audit_test04_performance": False}
    missing = [w for w in item["warnings"] if w.startswith("TEST01 is required")]
    assert missing and "models_TEST01" in missing[0] and "verify_accuracy.txt, verify_performance.txt" in missing[0]
    assert document["conditions"]["validity"]["valid"] is True  # LoadGen's verdict is its own, unchanged


def test_a_test_with_one_of_its_two_verdict_files_is_read_and_stated_incomplete(tmp_path):
    audits = passing()
    del audits["TEST01"]["verify_accuracy.txt"]
    document, _item = _import(resnet_result(tmp_path, audits=audits), tmp_path)
    assert _audits(document) == {
        "audit_test01_performance": True,
        "audit_test01_present": False,
        "audit_test04_performance": True,
    }


def test_test01s_deterministic_accuracy_fail_is_kept_verbatim_not_called_a_fail(tmp_path):
    """MLPerf's checker does not fail TEST01 on it: it then compares baseline and compliance accuracy."""
    audits = passing()
    audits["TEST01"]["verify_accuracy.txt"] = TEST01_ACCURACY_FAIL
    document, item = _import(resnet_result(tmp_path, audits=audits), tmp_path)
    assert "audit_test01_accuracy" not in _audits(document)
    assert document["provenance"]["origin"]["unparsed"]["TEST01.audit_test01_accuracy"] == "TEST FAIL"
    assert any("deterministic mode" in w for w in item["warnings"])


def test_the_open_division_is_not_required_to_run_audit_tests_but_its_verdicts_are_kept(tmp_path):
    tree = resnet_result(tmp_path, division="open", audits={"TEST04": {"verify_performance.txt": PERFORMANCE_PASS}})
    document, item = _import(tree, tmp_path)
    assert _audits(document) == {"audit_test04_performance": True}
    assert not any("is required" in w for w in item["warnings"])


def test_v41_requires_test05_too_as_its_checker_did(tmp_path):
    audits = {**passing(), "TEST05": {"verify_performance.txt": PERFORMANCE_PASS}}
    document, _item = _import(resnet_result(tmp_path, round_name="v4.1", layout="compliance", audits=audits), tmp_path)
    assert _audits(document)["audit_test05_performance"] is True
    assert "audit_test05_present" not in _audits(document)
    del audits["TEST05"]
    document, _item = _import(
        resnet_result(tmp_path / "again", round_name="v4.1", layout="compliance", audits=audits), tmp_path
    )
    assert _audits(document)["audit_test05_present"] is False


def test_console_bytes_that_are_not_utf8_in_a_verdict_file_are_reported_not_fatal(tmp_path):
    tree = resnet_result(tmp_path, audits=passing())
    path = (
        tree / "closed" / "Acme" / "results" / "tiny-sut" / "resnet50" / "Offline" / "TEST04" / "verify_performance.txt"
    )
    path.write_bytes(b"Verifying performance.\n\xff\xfe progress\nTEST PASS\n")
    document, item = _import(tree, tmp_path)
    assert _audits(document)["audit_test04_performance"] is True
    assert any("not UTF-8" in w for w in item["warnings"])


def test_test08_passes_only_on_a_line_that_is_test_pass_as_the_checker_reads_it(tmp_path):
    audits = {**passing(), "TEST08": {"verify_accuracy.txt": "num_ne_mismatch = 3\nexpected TEST PASS\n\nTEST FAIL\n"}}
    document, _item = _import(resnet_result(tmp_path, audits=audits), tmp_path)
    assert _audits(document)["audit_test08_accuracy"] is False


def test_which_tests_a_round_requires_is_the_checkers_rule_data():
    """The rule tables hold the checker's lists: v6.0's models_TEST0x constants, v5.1's check_compliance_dir."""
    v60 = json.loads((RULES / "inference_v6.0.json").read_text())
    assert v60["audit_tests"]["by_model"]["gpt-oss-120b"] == ["TEST07", "TEST09"]
    assert v60["audit_tests"]["by_model"]["dlrm-v3"] == ["TEST08"]
    assert set(v60["audit_tests"]["by_model"]) >= set(v60["model_config"]["models"])
    for test in ("TEST01", "TEST04", "TEST06", "TEST07", "TEST08", "TEST09"):
        listed = v60["model_config"][f"models_{test}"]
        assert {m for m, tests in v60["audit_tests"]["by_model"].items() if test in tests} == set(listed)
    v51 = json.loads((RULES / "inference_v5.1.json").read_text())
    assert "check_compliance_dir" in v51["audit_tests"]["source"]
    assert v51["audit_tests"]["by_model"]["llama2-70b-99"] == ["TEST06"]
    assert v51["audit_tests"]["by_model"]["resnet"] == ["TEST01", "TEST04"]
    for table in (v60, v51):
        assert table["audit_tests"]["divisions"] == ["closed", "network"]


@pytest.fixture
def round_without_audit_rules(tmp_path, monkeypatch):
    """The rule tables, with v6.0's audit_tests taken out (a round whose checker tables do not say which tests)."""
    from registry.importers.mlperf import rules

    tables = tmp_path / "rounds"
    tables.mkdir()
    for path in RULES.glob("inference_v*.json"):
        data = json.loads(path.read_text())
        if path.name == "inference_v6.0.json":
            del data["audit_tests"]
        (tables / path.name).write_text(json.dumps(data))
    monkeypatch.setattr(rules, "ROUNDS_DIR", tables)
    rules.round_rules.cache_clear()
    yield
    rules.round_rules.cache_clear()


def test_a_round_whose_rules_do_not_list_audit_tests_says_so_and_states_nothing_missing(
    tmp_path, round_without_audit_rules
):
    tree = resnet_result(tmp_path, audits={"TEST04": {"verify_performance.txt": PERFORMANCE_FAIL}})
    document, item = _import(tree, tmp_path)
    assert _audits(document) == {"audit_test04_performance": False}  # what was found is stored all the same
    assert any("rules do not say which audit tests 'resnet' needs" in w for w in item["warnings"])


def test_the_referee_disagrees_when_a_published_closed_result_failed_an_audit_test_here(tmp_path, user, capsys):
    """MLCommons publishes closed results that passed their compliance check: a verdict file read as failed is a
    disagreement, and that run is held back (AMD's v5.1 sample with its Offline TEST06 EOS line turned False)."""
    from django.core.management import CommandError

    from tests.registry.importers.mlperf.test_referee import SAMPLE, SYSTEM, every_row, write_table

    if not SAMPLE.is_dir():
        pytest.skip(f"no MLPerf sample at {SAMPLE}")
    tree = tmp_path / "inference_results_v5.1"
    shutil.copytree(SAMPLE, tree / "closed" / "AMD")
    write_table(tree / "summary_results.json", every_row())
    verdict = (
        tree
        / "closed"
        / "AMD"
        / "results"
        / SYSTEM.split("/results/")[1]
        / "Offline"
        / "TEST06"
        / "verify_accuracy.txt"
    )
    verdict.write_text(verdict.read_text().replace("EOS check pass: True", "EOS check pass: False"))
    with pytest.raises(CommandError, match="1 disagreement"):
        call_command("import_results", "mlperf", str(tree), "--no-progress")
    assert f"DISAGREES {SYSTEM}/Offline: audit: published passed, stored failed: test06_eos" in capsys.readouterr().out
    assert Submission.objects.count() == 2 and not Submission.objects.filter(scenario_kind="offline").exists()
