"""One measurement, counted once: Submission.measurement and Submission.derived, CatalogueCell.independent.

- `measurement`: the measurement identity of the run's document (protocol/identity.py, docs/protocol.md section
  6): for imported evidence the digest of what was measured and of its source files' contents, never of where the
  files lay, so the same published result read from two folders is one measurement; for any other run its digest.
- `derived`: the run was derived from another by the publisher's rule (provenance.origin.derivation), not measured.
- `independent` on catalogue cells: how many of the cell's runs count as independent evidence (measured, and the
  newest document of their measurement among runs not withdrawn). The cells' log sums (the matrix's estimates) are
  re-read over those runs only, so every cell is rebuilt.

Both run columns are pure functions of the canonical text (`manage.py audit verify` recomputes them). As 0008 and
0011 do, on PostgreSQL this migration disables the append-only trigger of registry_submission for its own
transaction only and sets only these columns. The identity function is frozen here (a migration must not follow
later code); tests/registry/test_migrations.py checks it against protocol/. Reversing drops the columns: the
backfill has nothing to undo.
"""

import hashlib
import json
import math

import rfc8785
from django.db import migrations, models
from django.db.models import Exists, OuterRef, Q

TRIGGER = "registry_submission_no_update_delete"
BATCH = 1000
IDENTITY_FIELDS = ("kind", "round", "benchmark", "mapped_benchmark", "scenario")
# registry.models.catalogue.CELL_KEY as of this migration
CELL_KEY = ("comparability_key", "phase", "workload_name", "workload_version", "scenario_kind",
            "precision_weights", "batch_size", "accelerator_model", "accelerator_vendor", "software_summary",
            "headline_metric", "headline_unit", "headline_lower_is_better", "withdrawn", "accelerator_count",
            "steady_state", "trust", "origin_round", "origin_division", "origin_availability")


# --- frozen: protocol.identity.measurement_identity and protocol.is_derived as of this migration -----------------

def _digest(value):
    return "sha256:" + hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def _origin(doc):
    provenance = doc.get("provenance")
    origin = provenance.get("origin") if isinstance(provenance, dict) else None
    return origin if isinstance(origin, dict) else {}


def derivation_kind(doc):
    """provenance.origin.derivation.kind as text ("" when stated without a kind), or None when not derived."""
    found = _origin(doc).get("derivation")
    return str(found.get("kind") or "") if isinstance(found, dict) else None


def measurement_identity(doc, own_digest):
    files = _origin(doc).get("files")
    files = sorted(str(v) for v in files.values()) if isinstance(files, dict) else []
    if not files:
        return own_digest
    origin = _origin(doc)
    return _digest({
        "identity": "source files",
        **{name: None if origin.get(name) is None else str(origin.get(name)) for name in IDENTITY_FIELDS},
        "derivation": derivation_kind(doc),
        "files": files,
    })


# --- the backfill ---------------------------------------------------------------------------------------------------

def backfill(apps, schema_editor):
    submission = apps.get_model("registry", "Submission")
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    ids = list(submission.objects.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        rows = []
        for pk, digest, canonical in (submission.objects.filter(id__in=ids[start:start + BATCH])
                                      .values_list("id", "digest", "canonical")):
            doc = json.loads(canonical)
            rows.append(submission(id=pk, measurement=measurement_identity(doc, digest),
                                   derived=derivation_kind(doc) is not None))
        # Through the base QuerySet class: the model's own refuses updates (it is evidence); these columns are read
        # from the canonical text, not part of it.
        models.QuerySet(submission).bulk_update(rows, ["measurement", "derived"])
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")


def rebuild_cells(apps, schema_editor, count_all=False):
    """As registry.services.catalogue.catalogue_rebuild does (copied: a migration must not follow later code).
    `count_all`: as before this migration, every run in the log sums (the reverse)."""
    submission, withdrawal = apps.get_model("registry", "Submission"), apps.get_model("registry", "Withdrawal")
    cell = apps.get_model("registry", "CatalogueCell")
    newer = submission.objects.filter(measurement=OuterRef("measurement"), pk__gt=OuterRef("pk"),
                                      withdrawal__isnull=True)
    reached = "document__conditions__steady_state__reached"
    runs = (submission.objects
            .annotate(withdrawn=Exists(withdrawal.objects.filter(submission=OuterRef("pk"))),
                      superseded=Exists(newer),
                      reached_yes=Q(**{reached: True}), reached_no=Q(**{reached: False}))
            .values_list(*(n for n in CELL_KEY if n not in ("steady_state", "withdrawn")), "withdrawn",
                         "reached_yes", "reached_no", "derived", "superseded", "headline_value"))
    cells = {}
    for *key, withdrawn, yes, no, derived, superseded, value in runs.iterator(chunk_size=BATCH):
        names = [n for n in CELL_KEY if n not in ("steady_state", "withdrawn")]
        row = dict(zip(names, key, strict=True))
        row["headline_unit"] = row["headline_unit"] or ""
        row.update(withdrawn=withdrawn, steady_state="yes" if yes else "no" if no else "")
        sums = cells.setdefault(tuple(row[n] for n in CELL_KEY), {
            **row, "runs": 0, "independent": 0, "headline_low": None, "headline_high": None, "valued": 0,
            "log_sum": 0.0, "log_sq_sum": 0.0})
        sums["runs"] += 1
        if value is not None:
            sums["headline_low"] = value if sums["headline_low"] is None else min(sums["headline_low"], value)
            sums["headline_high"] = value if sums["headline_high"] is None else max(sums["headline_high"], value)
        if (derived or superseded) and not count_all:
            continue
        sums["independent"] += 1
        if value is not None and value > 0:
            sums["valued"] += 1
            sums["log_sum"] += math.log(value)
            sums["log_sq_sum"] += math.log(value) ** 2
    cell.objects.all().delete()
    cell.objects.bulk_create([cell(**sums) for sums in cells.values()], batch_size=BATCH)


def rebuild_cells_as_before(apps, schema_editor):
    rebuild_cells(apps, schema_editor, count_all=True)


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0020_work_bounds"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="measurement",
            field=models.CharField(db_index=True, default="", max_length=71),
        ),
        migrations.AddField(
            model_name="submission",
            name="derived",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="cataloguecell",
            name="independent",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.RunPython(rebuild_cells, rebuild_cells_as_before),
    ]
