"""Figures per accelerator (issue 40, item 4): Submission.origin_kind and the per_accelerator_* columns.

- `origin_kind`: provenance.origin.kind ("" when not stated); an MLPerf result's figures per accelerator are labelled
  "derived, not an MLPerf metric".
- `per_accelerator_throughput` (with `per_accelerator_unit`), `per_accelerator_output_tokens`,
  `per_accelerator_total_tokens`: the run's throughput, output tokens/s and input+output tokens/s divided by its
  accelerators (protocol.per_accelerator), null when the run cannot give them. Stored so that the catalogue sorts on
  them without reading documents.

All are pure functions of the canonical text (`manage.py audit verify` recomputes them with protocol.summary). As
0021 does, on PostgreSQL this migration disables the append-only trigger of registry_submission for its own
transaction only and sets only these columns. The function is frozen here (a migration must not follow later code);
tests/registry/test_migrations.py checks it against protocol/. On PostgreSQL, (value DESC NULLS LAST, id DESC)
indexes serve the catalogue's "highest first" sorts. Reversing drops the columns: the backfill has nothing to undo.
"""

import json
import math

from django.db import migrations, models

TRIGGER = "registry_submission_no_update_delete"
BATCH = 1000
MLPERF_KINDS = ("mlperf-inference", "mlperf-training")
SORTED = ("per_accelerator_throughput", "per_accelerator_output_tokens", "per_accelerator_total_tokens")


# --- frozen: protocol.per_accelerator and protocol.summary's origin_kind as of this migration ----------------------

def _at(doc, *path):
    for key in path:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _number(value):
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _rate(doc, name):
    metric = _at(doc, "metrics", name)
    value = metric.get("value") if isinstance(metric, dict) else None
    if not _number(value) or value <= 0:
        return None, ""
    return float(value), str(metric.get("unit") or "")


def _count(doc):
    listed = _at(doc, "system", "accelerators")
    listed = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
    counts = [a.get("count") for a in listed]
    if not listed or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in counts):
        return 0
    if len({(a.get("vendor"), a.get("model")) for a in listed}) > 1:
        return 0
    return sum(counts)


def per_accelerator_columns(doc):
    kind = str(_at(doc, "provenance", "origin", "kind") or "")[:40]
    count = _count(doc)
    if not count:
        return {"origin_kind": kind, "per_accelerator_throughput": None, "per_accelerator_unit": "",
                "per_accelerator_output_tokens": None, "per_accelerator_total_tokens": None}
    rate, unit = _rate(doc, "throughput")
    output = None
    if doc.get("phase") != "training":
        output = _rate(doc, "tokens_per_second")[0]
        if output is None and rate is not None and unit == "tokens/s":
            output = rate
    total = None
    inputs, window = _at(doc, "metrics", "token_counts", "input_total"), _at(doc, "conditions", "window", "seconds")
    if output is not None and _number(inputs) and _number(window) and inputs >= 0 and window > 0:
        total = output + float(inputs) / float(window)
    return {
        "origin_kind": kind,
        "per_accelerator_throughput": rate / count if rate is not None else None,
        "per_accelerator_unit": unit if rate is not None else "",
        "per_accelerator_output_tokens": output / count if output is not None else None,
        "per_accelerator_total_tokens": total / count if total is not None else None,
    }


# --- the backfill ---------------------------------------------------------------------------------------------------

def backfill(apps, schema_editor):
    submission = apps.get_model("registry", "Submission")
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    ids = list(submission.objects.order_by("id").values_list("id", flat=True))
    names = ["origin_kind", "per_accelerator_unit", *SORTED]
    for start in range(0, len(ids), BATCH):
        rows = [
            submission(id=pk, **per_accelerator_columns(json.loads(canonical)))
            for pk, canonical in submission.objects.filter(id__in=ids[start:start + BATCH]).values_list("id",
                                                                                                        "canonical")
        ]
        # Through the base QuerySet class: the model's own refuses updates (it is evidence); these columns are read
        # from the canonical text, not part of it.
        models.QuerySet(submission).bulk_update(rows, names)
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")


def create_postgres_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in SORTED:
        schema_editor.execute(f"CREATE INDEX registry_sub_{column}_desc ON registry_submission "
                              f"({column} DESC NULLS LAST, id DESC)")


def drop_postgres_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in SORTED:
        schema_editor.execute(f"DROP INDEX IF EXISTS registry_sub_{column}_desc")


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0024_audit_kind_seq_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="origin_kind",
            field=models.CharField(default="", max_length=40),
        ),
        migrations.AddField(
            model_name="submission",
            name="per_accelerator_throughput",
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name="submission",
            name="per_accelerator_unit",
            field=models.CharField(default="", max_length=20),
        ),
        migrations.AddField(
            model_name="submission",
            name="per_accelerator_output_tokens",
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name="submission",
            name="per_accelerator_total_tokens",
            field=models.FloatField(null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.RunPython(create_postgres_indexes, drop_postgres_indexes),
    ]
