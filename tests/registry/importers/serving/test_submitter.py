"""`benchreg import serving` records the submitter it is given on every level it stores: `--submitter`, else the
deployment file's `submitter:`, else the importing user (docs/serving.md, "The submitter"). It used to record the
importing user ("serving-import") whatever was given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry import cli
from registry.models import Submission
from tests.conftest import ROOT

# transaction=True: `benchreg` closes the database connections when its command ends, as it does for a user
pytestmark = pytest.mark.django_db(transaction=True)
SWEEP = ROOT / "tests" / "fixtures" / "serving" / "guidellm" / "concurrent" / "benchmarks.json"  # three levels
DEPLOYMENT = {
    "system": {"name": "simulated endpoint", "accelerators": {"vendor": "NVIDIA", "model": "H100", "count": 1}},
    "engine": {"name": "benchreg-simulated", "version": "1"},
    "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "bf16"},
    "parallelism": {"tensor": 1},
    "workload": {"name": "simulated-64-32"},
}


def import_serving(tmp_path: Path, *flags: str, **deployment: Any) -> list[Submission]:
    """`benchreg import serving` of the three-level sweep through `benchreg`'s main(); the runs it stored."""
    path = tmp_path / "deployment.json"
    path.write_text(json.dumps({**DEPLOYMENT, **deployment}))
    assert cli.main(["import", "serving", str(SWEEP), "--deployment", str(path), *flags]) == 0
    runs = list(Submission.objects.order_by("pk"))
    assert len(runs) == 3
    return runs


def submitters(runs: list[Submission]) -> set[tuple[str, str]]:
    """(the indexed column, the document's provenance.submitter) of each run."""
    return {(run.submitter, run.document["provenance"]["submitter"]) for run in runs}


def test_the_deployment_files_submitter_is_every_levels_submitter(tmp_path, api):
    runs = import_serving(tmp_path, submitter="Example Lab")
    assert submitters(runs) == {("Example Lab", "Example Lab")}
    listed = api.get("/api/v1/submissions?submitter=Example Lab")  # how a reader finds them
    assert listed.status_code == 200
    assert {r["id"] for r in listed.json()["results"]} == {run.pk for run in runs}


def test_the_submitter_flag_wins_over_the_deployment_file(tmp_path):
    runs = import_serving(tmp_path, "--submitter", "Other Lab", submitter="Example Lab")
    assert submitters(runs) == {("Other Lab", "Other Lab")}


def test_the_submitter_flag_alone_is_every_levels_submitter(tmp_path):
    runs = import_serving(tmp_path, "--submitter", "Other Lab")
    assert submitters(runs) == {("Other Lab", "Other Lab")}


def test_without_a_submitter_the_importing_user_is_named(tmp_path):
    assert submitters(import_serving(tmp_path)) == {("serving-import", "serving-import")}
    assert {run.submitted_by.username for run in Submission.objects.all()} == {"serving-import"}
