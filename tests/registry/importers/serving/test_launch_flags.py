"""The engine's launch command a deployment file states (`engine.args`) gives the capacity settings of every level it
imports, through the one parser the run uses (runners/serving/deployment.launch_settings); a flag given twice with
two values is refused by name and nothing is stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from registry.models import Submission
from tests.registry.importers.serving.test_deployment_file import documented_toml
from tests.registry.importers.serving.test_tool_fixtures import AIPERF

pytestmark = pytest.mark.django_db


def _with_args(tmp_path: Path, args: str) -> Path:
    path = documented_toml(tmp_path)
    path.write_text(path.read_text().replace('version = "1.0"', f'version = "1.0"\nargs = "{args}"'))
    return path


def test_the_stated_launch_command_gives_every_imported_level_its_capacity_settings(tmp_path, user):
    path = _with_args(tmp_path, "vllm serve m --max-num-seqs=64 --max-num-batched-tokens 8192 --port 8000")
    call_command("import_results", "serving", str(AIPERF), "--deployment", str(path), "--workload", "synthetic")
    settings = [run.document["software"]["settings"] for run in Submission.objects.all()]
    assert len(settings) == 5 and all(s == {"max_num_seqs": 64, "max_num_batched_tokens": 8192} for s in settings)


def test_a_flag_given_twice_with_two_values_is_refused_and_nothing_stored(tmp_path, user):
    path = _with_args(tmp_path, "vllm serve m --max-num-seqs 64 --max-num-seqs 128")
    with pytest.raises(CommandError, match=r"engine\.args: --max-num-seqs is given twice with different values"):
        call_command("import_results", "serving", str(AIPERF), "--deployment", str(path), "--workload", "synthetic")
    assert not Submission.objects.exists()
