"""Migration 0008 adds Submission.trust to a table whose rows are evidence (append-only by trigger on PostgreSQL):
existing runs get the level of the path they came in by (job run: vouched; named by an import: imported; else
declared), and the trigger is back in force afterwards."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.utils import DatabaseError
from django.utils import timezone

from devtools.documents import variant
from protocol import canonicalize, digest_of
from tests.conftest import load_example

pytestmark = [pytest.mark.django_db(transaction=True)]
BEFORE, AFTER = [("registry", "0007_catalogue_cells")], [("registry", "0008_submission_trust")]


def _run(apps, user, doc):
    canonical = canonicalize(doc).decode()
    return apps.get_model("registry", "Submission").objects.create(
        digest=digest_of(canonical.encode()),
        document=doc,
        canonical=canonical,
        comparability_key="k",
        protocol_version="1",
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
        source="runner",
        headline_metric="throughput",
        headline_lower_is_better=False,
        submitted_by_id=user.pk,
        submitted_by_name=user.username,
        submitted_at=timezone.now(),
    )


@pytest.fixture(autouse=True)
def _schema_back_at_the_latest_migration(transactional_db):
    """The test leaves the schema at 0008; later tests in this process (an xdist worker, or a subset run without
    one) need every migration, so the schema goes forward again, through the later migrations, with the rows."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_existing_runs_get_the_trust_of_their_path_in(django_user_model):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    user = old.get_model("auth", "User").objects.create(username="m-user")
    base = load_example("inference-server-h100-bf16")
    plain, by_job, imported = (_run(old, user, variant(base, f"lab-{i}", 1000.0 + i)) for i in range(3))
    token = _create(old, "ApiToken", user_id=user.pk)
    agent = _create(old, "Agent", user_id=user.pk, token_id=token.pk, name="agent-m")
    plan = _create(old, "Plan", created_by_id=user.pk)
    _create(old, "Job", plan_id=plan.pk, agent_id=agent.pk, run_id=by_job.pk, status="submitted")
    old.get_model("registry", "AuditEntry").objects.create(
        seq=0,
        created_at=timezone.now(),
        actor="m-user",
        kind="import.completed",
        subject="mlperf:x",
        entry=json.dumps({"kind": "import.completed", "payload": {"runs": [imported.digest]}}),
        leaf_hash="0" * 64,
    )
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("registry", "Submission")
    assert {r.pk: r.trust for r in new.objects.all()} == {
        plain.pk: "declared",
        by_job.pk: "vouched",
        imported.pk: "imported",
    }
    if connection.vendor == "postgresql":  # the append-only trigger is enabled again
        with pytest.raises(DatabaseError), connection.cursor() as cursor:
            cursor.execute("UPDATE registry_submission SET trust = 'example' WHERE id = %s", [plain.pk])


def _create(apps, model_name, **given):
    """A row of the historical model with `given` values, and placeholders for its other required columns (so the
    test follows the model as migration 0007 left it)."""
    model = apps.get_model("registry", model_name)
    values = dict(given)
    for f in model._meta.concrete_fields:
        if f.primary_key or f.null or f.has_default() or f.attname in values or f.is_relation:
            continue
        kind = f.get_internal_type()
        values[f.attname] = {"JSONField": {}, "DateTimeField": timezone.now(), "BooleanField": False}.get(
            kind, 0 if "Integer" in kind or kind == "FloatField" else f"{model_name}-{f.attname}"[: f.max_length or 50]
        )
    return model.objects.create(**values)
