"""One deployment format and one parser (runners/serving/deployment.py) for `benchreg run serving` and
`benchreg import serving`: the runner's documented deploy.toml (docs/serving.md, "The deployment file") describes a
measured run and imports the tools' files too, and both commands refuse the same bad file in the same words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from registry.models import Submission
from runners.serving import deployment as runner_deployment
from tests.conftest import ROOT
from tests.registry.importers.serving.test_tool_fixtures import AIPERF

pytestmark = pytest.mark.django_db


def documented_toml(tmp_path: Path) -> Path:
    """The deploy.toml of docs/serving.md, as written there."""
    page = (ROOT / "docs" / "serving.md").read_text()
    (block,) = re.findall(r"```toml\n(# deploy\.toml.*?)```", page, re.DOTALL)
    path = tmp_path / "deploy.toml"
    path.write_text(block)
    return path


def test_the_runners_documented_deploy_toml_describes_a_run(tmp_path):
    deployment = runner_deployment.load(documented_toml(tmp_path))
    assert deployment.accelerator_model == "H100 SXM" and deployment.accelerator_memory_gib == 80
    assert deployment.missing(engine_version_known=False) == []


def test_the_runners_documented_deploy_toml_imports_the_tools_files(tmp_path, user):
    # The workload, which a run takes from its own flags, is named by the import's flag (aiperf's synthetic
    # data has no name); the deployment is the file's alone.
    path = documented_toml(tmp_path)
    call_command("import_results", "serving", str(AIPERF), "--deployment", str(path), "--workload", "synthetic")
    docs = [run.document for run in Submission.objects.all()]
    assert len(docs) == 5
    for doc in docs:
        assert doc["system"]["accelerators"][0]["model"] == "H100 SXM"
        assert doc["system"]["accelerators"][0]["memory_gib"] == 80
        assert doc["software"]["serving"]["engine"] == "benchreg-simulated"
        assert doc["precision"]["kv_cache"] == "bf16"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("count = 1", "count = 0"),
        ('weights = "bf16"', 'weights = "fp9"'),
        ("[parallelism]", "[parallelisms]"),
    ],
)
def test_both_commands_refuse_a_bad_file_in_the_same_words(tmp_path, user, change, words):
    path = documented_toml(tmp_path)
    path.write_text(path.read_text().replace(change, words, 1))
    with pytest.raises(ValueError) as by_run:
        runner_deployment.load(path)
    with pytest.raises(CommandError) as by_import:
        call_command("import_results", "serving", str(AIPERF), "--deployment", str(path), "--workload", "synthetic")
    said = str(by_run.value).removeprefix(f"{path}: ")
    assert said and f"{path}: {said}; nothing was stored" in str(by_import.value)
    assert Submission.objects.count() == 0


def test_a_toml_file_that_is_not_toml_is_refused_by_both_by_name(tmp_path, user):
    path = tmp_path / "deploy.toml"
    path.write_text(json.dumps({"system": {"nodes": 1}}))
    with pytest.raises(ValueError, match=r"deploy\.toml: not valid TOML"):
        runner_deployment.load(path)
    with pytest.raises(CommandError, match=r"deploy\.toml: not valid TOML"):
        call_command("import_results", "serving", str(AIPERF), "--deployment", str(path))
