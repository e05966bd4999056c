"""Migration 0021 gives every stored run its measurement identity and whether it was derived, read from its
canonical text, and rebuilds the catalogue's cells so that one measurement stored twice before it counts once and a
derived run not at all; the append-only trigger is back in force afterwards."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.utils import DatabaseError
from django.utils import timezone

from devtools.documents import variant
from protocol import canonicalize, digest_of, measurement_identity
from tests.conftest import load_example

pytestmark = [pytest.mark.django_db(transaction=True)]
BEFORE, AFTER = [("registry", "0020_work_bounds")], [("registry", "0021_measurement_identity")]
FILES = {"detail": "sha256:" + "11" * 32, "summary": "sha256:" + "22" * 32}


def _imported(root: str) -> dict[str, Any]:
    doc = variant(load_example("inference-server-h100-bf16"), "mlperf-box", 1000.0)
    doc["provenance"]["source"] = "import"
    doc["provenance"]["origin"] = {
        "kind": "mlperf-inference",
        "round": "v5.1",
        "benchmark": "llama2-70b-99",
        "scenario": "Server",
        "files": {f"{root}/{name}": value for name, value in FILES.items()},
    }
    return doc


def _run(apps: Any, user: Any, doc: dict[str, Any]) -> Any:
    canonical = canonicalize(doc).decode()
    return apps.get_model("registry", "Submission").objects.create(
        digest=digest_of(canonical.encode()),
        document=doc,
        canonical=canonical,
        comparability_key="k",
        protocol_version="1.1",
        phase="inference",
        workload_name="w",
        workload_version="1",
        scenario_kind="server",
        precision_weights="bf16",
        precision_activations="bf16",
        batch_size=1,
        system_name=doc["system"]["name"],
        accelerator_vendor="v",
        accelerator_model="m",
        accelerator_count=1,
        submitter="s",
        source="import",
        headline_metric="throughput",
        headline_value=doc["metrics"]["throughput"]["value"],
        headline_lower_is_better=False,
        trust="imported",
        submitted_by_id=user.pk,
        submitted_by_name=user.username,
        submitted_at=timezone.now(),
    )


@pytest.fixture(autouse=True)
def _schema_back_at_the_latest_migration(transactional_db: Any) -> Any:
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_stored_runs_get_their_measurement_and_one_measurement_stored_twice_counts_once() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    user = old.get_model("auth", "User").objects.create(username="m-user")
    sample, round_copy = _run(old, user, _imported("results")), _run(old, user, _imported("measurements"))
    derived_doc = copy.deepcopy(_imported("results"))
    derived_doc["provenance"]["origin"]["derivation"] = {
        "kind": "mlperf-inferred",
        "rule": "Offline from Server",
        "from_scenario": "Server",
        "from_location": "closed/x",
        "from_digest": sample.digest,
    }
    derived = _run(old, user, derived_doc)
    lab = _run(old, user, variant(load_example("inference-server-h100-bf16"), "lab", 900.0))
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    rows = {r.pk: r for r in new.get_model("registry", "Submission").objects.all()}
    assert rows[sample.pk].measurement == rows[round_copy.pk].measurement == measurement_identity(sample.document)
    assert rows[lab.pk].measurement == lab.digest
    assert rows[derived.pk].derived and not rows[sample.pk].derived
    assert rows[derived.pk].measurement not in (rows[sample.pk].measurement, lab.digest)
    cells = new.get_model("registry", "CatalogueCell").objects.all()
    assert sum(c.runs for c in cells) == 4
    assert sum(c.independent for c in cells) == 2  # the newer of the two copies, and the lab's run
    if connection.vendor == "postgresql":  # the append-only trigger is enabled again
        with pytest.raises(DatabaseError), connection.cursor() as cursor:
            cursor.execute("UPDATE registry_submission SET derived = true WHERE id = %s", [lab.pk])
