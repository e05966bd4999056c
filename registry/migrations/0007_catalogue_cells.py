"""The catalogue without a warm cache: software_summary on runs, the CatalogueCell summary table, search indexes.

On every database: adds Submission.software_summary (indexed) and an index on system_name; creates
CatalogueCell; fills the derived columns of existing runs (software_summary, and the per-axis comparability keys
that 0005 added with default "") from their canonical text; fills the cells from the runs.

On PostgreSQL only: the pg_trgm extension, trigram GIN indexes on UPPER(column) for the searched columns (the
form Django's icontains compiles to), and (headline_value, id) indexes in both sort orders, NULLS LAST as the
catalogue sorts. SQLite has no pg_trgm and no NULLS LAST in an index; it keeps working with plain scans.

Why the evidence table is updated here. registry_submission refuses UPDATE by trigger (0002). The columns set
here are derived index columns, not evidence: each is a pure function of the canonical text, which is what the
digest and the audit log cover, and `manage.py audit verify` recomputes them from that text (software_summary
with the other summary columns). So, on PostgreSQL, this migration disables the trigger for its own transaction,
sets only those columns, and enables it again before the transaction commits; the ALTER TABLE lock keeps every
other session out meanwhile, and an error anywhere rolls the whole migration back, trigger included.
"""

import hashlib
import json
from pathlib import Path

import rfc8785
from django.db import migrations, models
from django.db.models import Count, Exists, Max, Min, OuterRef, Value
from django.db.models.functions import Coalesce

TRIGGER = "registry_submission_no_update_delete"
SEARCH_COLUMNS = ("workload_name", "system_name", "accelerator_model", "submitter")
CELL_KEY = ("comparability_key", "phase", "workload_name", "workload_version", "scenario_kind",
            "precision_weights", "batch_size", "accelerator_model", "accelerator_vendor", "software_summary",
            "headline_metric", "headline_lower_is_better", "withdrawn")
BATCH = 1000


# --- frozen: what this migration computes, as protocol/ computed it when the migration was written --------------
# A migration must not follow later code: a future contract or summary change would otherwise rewrite what this
# step wrote. So the comparability contract 1.0 (data) and the functions below are copies, made at contract 1.0;
# tests/registry/test_migrations.py checks that they agree with protocol/ for as long as the contract is 1.0.

FROZEN_CONTRACT = json.loads((Path(__file__).parent / "frozen" / "comparability-1.0.json").read_text())
SOFTWARE_SUMMARY_MAX = 500


def software_summary(frameworks):
    if not isinstance(frameworks, dict) or not frameworks:
        return ""
    text = ", ".join(name if version is None else f"{name} {version}" for name, version in sorted(frameworks.items()))
    return text if len(text) <= SOFTWARE_SUMMARY_MAX else text[:SOFTWARE_SUMMARY_MAX - 1] + "…"


def _split(pointer):
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]) if pointer else ()


def _join(path):
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _rules(doc):
    """{path: group or None (ignored)}, '{primary}' resolved for this document."""
    primary = (doc.get("metrics") or {}).get("primary")
    name = primary.partition(".")[0] if isinstance(primary, str) else None
    rules = {_split(i["pointer"]): None for i in FROZEN_CONTRACT["ignored"]}
    for group in FROZEN_CONTRACT["groups"]:
        for pointer in group["pointers"]:
            if "{primary}" in pointer:
                if name:
                    rules[_split(pointer.replace("{primary}", name))] = group
            else:
                rules[_split(pointer)] = group
    return rules


def _governing(path, rules, wild):
    for end in range(len(path), 0, -1):
        prefix = path[:end]
        if prefix in rules:
            return True, rules[prefix]
        for pattern in wild:
            if len(pattern) == len(prefix) and all(p in ("*", q) for p, q in zip(pattern, prefix)):
                return True, rules[pattern]
    return False, None


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, (*path, str(key)))
    elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        for i, child in enumerate(value):
            yield from _leaves(child, (*path, str(i)))
    elif value is not None and value != []:
        yield path, value


def comparability_key(doc, axis):
    """'sha256:<hex>' of the canonical {contract version, axis, controlled projection} (protocol 1.0)."""
    rules = _rules(doc)
    wild = [p for p in rules if "*" in p]
    controlled = {}
    for path, value in _leaves(doc):
        found, group = _governing(path, rules, wild)
        if found and group is None:
            continue  # ignored
        role = group["roles"].get(axis, "") if group is not None else FROZEN_CONTRACT["unlisted_role"]
        if role != "controlled":
            continue
        if group is not None and group.get("compare") == "major" and isinstance(value, str):
            value = value.rsplit(".", 1)[0]
        controlled[_join(path)] = value
    body = {"contract": FROZEN_CONTRACT["version"], "axis": axis, "controlled": dict(sorted(controlled.items()))}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()


# -------------------------------------------------------------------------------------------------------------------


def _postgres(schema_editor):
    return schema_editor.connection.vendor == "postgresql"


def backfill_derived_columns(apps, schema_editor):
    submission = apps.get_model("registry", "Submission")
    if _postgres(schema_editor):
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    ids = list(submission.objects.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        rows = []
        for pk, canonical in submission.objects.filter(id__in=ids[start:start + BATCH]).values_list("id", "canonical"):
            doc = json.loads(canonical)
            rows.append(submission(id=pk, software_summary=software_summary((doc.get("software") or {})
                                                                            .get("frameworks")),
                                   comparability_key_software=comparability_key(doc, "software"),
                                   comparability_key_precision=comparability_key(doc, "precision")))
        submission.objects.bulk_update(rows, ["software_summary", "comparability_key_software",
                                              "comparability_key_precision"])
    if _postgres(schema_editor):
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")


def fill_cells(apps, schema_editor):
    """As registry.services.catalogue.catalogue_rebuild does (copied: a migration must not follow later code)."""
    submission, withdrawal = apps.get_model("registry", "Submission"), apps.get_model("registry", "Withdrawal")
    cell = apps.get_model("registry", "CatalogueCell")
    grouped = (submission.objects
               .annotate(withdrawn=Exists(withdrawal.objects.filter(submission=OuterRef("pk"))),
                         cell_unit=Coalesce("headline_unit", Value("")))
               .values(*CELL_KEY, "cell_unit")
               .annotate(runs=Count("*"), headline_low=Min("headline_value"), headline_high=Max("headline_value"))
               .order_by())
    cell.objects.bulk_create([cell(**{n: row[n] for n in CELL_KEY}, headline_unit=row["cell_unit"],
                                   runs=row["runs"], headline_low=row["headline_low"],
                                   headline_high=row["headline_high"]) for row in grouped], batch_size=BATCH)


def create_postgres_indexes(apps, schema_editor):
    if not _postgres(schema_editor):
        return
    # pg_trgm is a trusted extension (PostgreSQL 13+): the database owner may create it. Not dropped on the way
    # back: other objects may use it by then. (Not Django's TrigramExtension: its reverse fails on SQLite.)
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for column in SEARCH_COLUMNS:
        schema_editor.execute(f"CREATE INDEX registry_sub_{column}_trgm ON registry_submission "
                              f"USING gin (UPPER({column}::text) gin_trgm_ops)")
    schema_editor.execute("CREATE INDEX registry_sub_headline_asc ON registry_submission "
                          "(headline_value ASC NULLS LAST, id DESC)")
    schema_editor.execute("CREATE INDEX registry_sub_headline_desc ON registry_submission "
                          "(headline_value DESC NULLS LAST, id DESC)")


def drop_postgres_indexes(apps, schema_editor):
    if not _postgres(schema_editor):
        return
    names = [f"registry_sub_{column}_trgm" for column in SEARCH_COLUMNS]
    for name in [*names, "registry_sub_headline_asc", "registry_sub_headline_desc"]:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0006_reports"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="software_summary",
            field=models.CharField(db_index=True, default="", max_length=500),
        ),
        migrations.AddIndex(
            model_name="submission",
            index=models.Index(fields=["system_name"], name="registry_su_system__d92af5_idx"),
        ),
        migrations.CreateModel(
            name="CatalogueCell",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("comparability_key", models.CharField(max_length=71)),
                ("phase", models.CharField(max_length=20)),
                ("workload_name", models.CharField(max_length=200)),
                ("workload_version", models.CharField(max_length=100)),
                ("scenario_kind", models.CharField(max_length=40)),
                ("precision_weights", models.CharField(max_length=20)),
                ("batch_size", models.PositiveIntegerField()),
                ("accelerator_model", models.CharField(max_length=500)),
                ("accelerator_vendor", models.CharField(max_length=200)),
                ("software_summary", models.CharField(max_length=500)),
                ("headline_metric", models.CharField(max_length=60)),
                ("headline_unit", models.CharField(help_text='"" where the runs state no unit (NULL on runs)',
                                                   max_length=20)),
                ("headline_lower_is_better", models.BooleanField()),
                ("withdrawn", models.BooleanField()),
                ("runs", models.PositiveIntegerField()),
                ("headline_low", models.FloatField(help_text="smallest headline value of the cell's runs",
                                                   null=True)),
                ("headline_high", models.FloatField(help_text="largest headline value of the cell's runs",
                                                    null=True)),
            ],
            options={
                "constraints": [models.UniqueConstraint(
                    fields=["comparability_key", "phase", "workload_name", "workload_version", "scenario_kind",
                            "precision_weights", "batch_size", "accelerator_model", "accelerator_vendor",
                            "software_summary", "headline_metric", "headline_unit", "headline_lower_is_better",
                            "withdrawn"],
                    name="catalogue_cell_key")],
            },
        ),
        migrations.RunPython(backfill_derived_columns, migrations.RunPython.noop),
        migrations.RunPython(fill_cells, migrations.RunPython.noop),
        migrations.RunPython(create_postgres_indexes, drop_postgres_indexes),
    ]
