"""`benchreg import nccl-tests`: a cluster team's nccl-tests logs stored as collective runs through the one path in,
with trust `declared`; a log that does not reproduce its own printed figures is refused naming line and column, and
nothing is stored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import protocol
from registry import cli
from registry.models import AuditEntry, Submission
from tests.conftest import ROOT

# transaction=True: `benchreg` closes the database connections when its command ends, as it does for a user
pytestmark = pytest.mark.django_db(transaction=True)
FIXTURES = ROOT / "tests" / "fixtures" / "nccl_tests"
SYSTEM = {
    "name": "two H100 nodes",
    "nodes": 2,
    "accelerators": [{"vendor": "NVIDIA", "model": "H100 80GB HBM3", "count": 16, "interconnect": "NVLink 4"}],
    "host": None,
}


def test_a_log_becomes_one_run_holding_its_printed_figures(tmp_path: Path) -> None:
    system = tmp_path / "system.json"
    system.write_text(json.dumps(SYSTEM))
    log = FIXTURES / "all_reduce_16ranks_2024.txt"
    argv = ["import", "nccl-tests", str(log), "--collective", "all_reduce", "--system", str(system)]
    argv += ["--submitter", "Example Lab"]
    assert cli.main(argv) == 0
    run = Submission.objects.get()
    assert (run.trust, run.phase, run.workload_name, run.submitter) == (
        "declared",
        "collective",
        "all_reduce",
        "Example Lab",
    )
    doc = protocol.check(run.canonical).document
    block = doc["metrics"]["collectives"]
    assert block["ranks"] == 16 and len(block["sizes"]) == 62 and block["time_statistic"] == "mean-over-ranks"
    last = block["sizes"][-1]
    printed = next(line for line in log.read_text().splitlines() if line.strip().startswith("8589934592"))
    assert last["printed"]["busbw_gbs"] in printed.split() and last["printed"]["time_us"] in printed.split()
    assert run.headline_value == max(s["busbw_gbs"] for s in block["sizes"] if s["size_bytes"] == 8 << 30)
    topology = doc["system"]["topology"]
    assert topology["nodes"] == 2 and topology["processes_per_node"] == 8
    assert "device matrix" in topology["hosts"][0]["absent"]["device_matrix"]
    assert doc["system"]["name"] == "two H100 nodes"
    assert doc["provenance"]["origin"]["files"] == {log.name: "sha256:" + hashlib.sha256(log.read_bytes()).hexdigest()}
    assert AuditEntry.objects.filter(subject__startswith="nccl-tests:").count() == 1
    assert cli.main(argv) == 0 and Submission.objects.count() == 1  # the same log again: known, nothing new


def test_without_a_system_file_the_system_is_read_from_the_device_lines() -> None:
    assert cli.main(["import", "nccl-tests", str(FIXTURES / "all_gather_8ranks_2025.txt")]) == 0
    doc = Submission.objects.get().document
    assert doc["system"]["accelerators"][0]["vendor"] == "NVIDIA" and doc["system"]["accelerators"][0]["count"] == 8
    assert doc["software"]["communication"] == {
        "library": "nccl",
        "version": "2.28.7",
        "nccl_tests_version": "2.17.6",
        "env": {},
    }


def test_a_log_that_does_not_reproduce_its_own_figures_is_refused_naming_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = (FIXTURES / "all_reduce_16ranks_2024.txt").read_text().splitlines()
    number = next(i for i, line in enumerate(good) if line.strip().startswith("1073741824"))
    fields = good[number].split()
    moved = f"{float(fields[7]) + 0.05:.2f}"  # the out-of-place busbw, moved by 0.05 GB/s
    good[number] = good[number].replace(f" {fields[7]} ", f" {moved} ", 1)
    broken = tmp_path / "all_reduce.log"
    broken.write_text("\n".join(good) + "\n")
    fine = FIXTURES / "all_reduce_4ranks_2021.txt"
    assert cli.main(["import", "nccl-tests", str(fine), str(broken), "--collective", "all_reduce"]) != 0
    said = capsys.readouterr().err
    assert (
        f"line {number + 1}: out-of-place busbw {moved} GB/s does not follow" in said and "nothing was stored" in said
    )
    assert Submission.objects.count() == 0  # the good log first, the broken second: neither is stored


def test_a_system_file_the_protocol_refuses_stores_nothing_and_names_the_pointer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    system = tmp_path / "system.yaml"
    system.write_text("name: lab\nnodes: 2\naccelerators: [{vendor: NVIDIA, model: H100, count: 0}]\nhost: null\n")
    argv = ["import", "nccl-tests", str(FIXTURES / "all_reduce_16ranks_2024.txt"), "--collective", "all_reduce"]
    assert cli.main([*argv, "--system", str(system)]) != 0
    assert "/system/accelerators/0/count" in capsys.readouterr().err and Submission.objects.count() == 0


def test_an_imported_collective_run_reads_on_its_page_in_the_api_and_the_catalogue(admin_client: Any) -> None:
    assert cli.main(["import", "nccl-tests", str(FIXTURES / "all_gather_8ranks_2025.txt")]) == 0
    run = Submission.objects.get()
    for url in (f"/runs/{run.pk}/", f"/api/v1/submissions/{run.pk}", "/", "/api/v1/submissions?phase=collective"):
        assert admin_client.get(url).status_code == 200, url


def test_the_run_page_shows_every_size_as_nccl_tests_printed_it(client, django_user_model) -> None:
    """Through the door users take: the imported log's page has one table row per size and side, with the printed
    bus bandwidth, and the summary figures each with its unit (not each marked as the headline)."""
    log = FIXTURES / "all_reduce_16ranks_2024.txt"
    assert cli.main(["import", "nccl-tests", str(log), "--collective", "all_reduce"]) == 0
    run = Submission.objects.get()
    client.force_login(django_user_model.objects.create_user("reader", password="x"))
    page = client.get(f"/runs/{run.pk}/").content.decode()
    sizes = run.document["metrics"]["collectives"]["sizes"]
    table = page.split("Every message size of the collective sweep")[1].split("</table>")[0]
    assert table.count("<tr>") == len(sizes) + 1  # the header and a row a size
    last = next(line for line in log.read_text().splitlines() if line.strip().startswith("8589934592"))
    assert last.split()[-2] in table.split("8589934592")[-1]  # the in-place busbw as printed
    metrics = page.split('id="metrics-heading"')[1].split("Every message size")[0]
    assert "collectives.avg_busbw_gbs" in metrics and "GB/s" in metrics and metrics.count("headline</span>") == 0


def test_a_log_that_cannot_be_read_is_named_with_the_reason_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "all_reduce.log"
    fine = str(FIXTURES / "all_reduce_4ranks_2021.txt")
    assert cli.main(["import", "nccl-tests", fine, str(missing), "--collective", "all_reduce"]) != 0
    said = capsys.readouterr().err
    assert f"{missing}: cannot read the log (No such file or directory); nothing was stored" in said
    assert "Errno" not in said and Submission.objects.count() == 0
