"""Decisions (issue 14): the iso-quality axis (comparability contract 1.1), decisions and their answers, webhooks.

Contract 1.1 adds the iso-quality axis. Every comparability key hashes the contract version, so every stored
run gets new keys on all four axes, and the catalogue's cells (keyed by the system axis's key) are rebuilt.
As 0007 and 0008_submission_trust do, on PostgreSQL this migration disables the append-only trigger of
registry_submission for its own transaction only and sets only derived key columns, each a pure function of
the canonical text (`manage.py audit verify` recomputes them). The contract 1.1 and the key function are
frozen here (registry/migrations/frozen/comparability-1.1.json); tests/registry/test_migrations.py checks them
against protocol/ while the contract is 1.1.
"""

import hashlib
import json
from pathlib import Path

import django.db.models.deletion
import rfc8785
from django.conf import settings
from django.db import migrations, models
from django.db.models import Count, Exists, Max, Min, OuterRef, Value
from django.db.models.functions import Coalesce

TRIGGER = "registry_submission_no_update_delete"
AXES = {"system": "comparability_key", "software": "comparability_key_software",
        "precision": "comparability_key_precision", "iso-quality": "comparability_key_iso_quality"}
CELL_KEY = ("comparability_key", "phase", "workload_name", "workload_version", "scenario_kind",
            "precision_weights", "batch_size", "accelerator_model", "accelerator_vendor", "software_summary",
            "headline_metric", "headline_lower_is_better", "withdrawn")
BATCH = 1000
FROZEN_CONTRACT = json.loads((Path(__file__).parent / "frozen" / "comparability-1.1.json").read_text())


# --- frozen: the key function of contract 1.1, as protocol/ computed it when this migration was written ------------

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
    """'sha256:<hex>' of the canonical {contract version, axis, controlled projection} (contract 1.1)."""
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


def _postgres(schema_editor):
    return schema_editor.connection.vendor == "postgresql"


def reindex_keys(apps, schema_editor):
    submission = apps.get_model("registry", "Submission")
    if _postgres(schema_editor):
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    ids = list(submission.objects.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        rows = []
        for pk, canonical in submission.objects.filter(id__in=ids[start:start + BATCH]).values_list("id", "canonical"):
            doc = json.loads(canonical)
            rows.append(submission(id=pk, **{column: comparability_key(doc, axis) for axis, column in AXES.items()}))
        submission.objects.bulk_update(rows, list(AXES.values()))
    if _postgres(schema_editor):
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")


def rebuild_cells(apps, schema_editor):
    """As registry.services.catalogue.catalogue_rebuild does (copied: a migration must not follow later code)."""
    submission, withdrawal = apps.get_model("registry", "Submission"), apps.get_model("registry", "Withdrawal")
    cell = apps.get_model("registry", "CatalogueCell")
    cell.objects.all().delete()
    grouped = (submission.objects
               .annotate(withdrawn=Exists(withdrawal.objects.filter(submission=OuterRef("pk"))),
                         cell_unit=Coalesce("headline_unit", Value("")))
               .values(*CELL_KEY, "cell_unit")
               .annotate(runs=Count("*"), headline_low=Min("headline_value"), headline_high=Max("headline_value"))
               .order_by())
    cell.objects.bulk_create([cell(**{n: row[n] for n in CELL_KEY}, headline_unit=row["cell_unit"],
                                   runs=row["runs"], headline_low=row["headline_low"],
                                   headline_high=row["headline_high"]) for row in grouped], batch_size=BATCH)


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0010_comparison_request_key'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='WebhookDelivery',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('message_id', models.CharField(max_length=64, unique=True)),
                ('url', models.URLField(max_length=500)),
                ('secret', models.CharField(max_length=100)),
                ('event', models.CharField(max_length=100)),
                ('body', models.JSONField()),
                ('state', models.CharField(choices=[('pending', 'pending'), ('delivered', 'delivered'), ('failed', 'failed')], default='pending', max_length=20)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('last_status', models.IntegerField(blank=True, null=True)),
                ('last_error', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField()),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
        migrations.AddField(
            model_name='submission',
            name='comparability_key_iso_quality',
            field=models.CharField(db_index=True, default='', max_length=71),
        ),
        migrations.CreateModel(
            name='Decision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('title', models.CharField(max_length=200)),
                ('question', models.JSONField()),
                ('status', models.CharField(choices=[('current', 'current'), ('evidence-changed', 'evidence changed')], default='current', max_length=20)),
                ('change', models.JSONField(blank=True, help_text='what changed and what would change in the answer', null=True)),
                ('changed_at', models.DateTimeField(blank=True, null=True)),
                ('webhook_url', models.URLField(blank=True, default='', max_length=500)),
                ('webhook_secret', models.CharField(blank=True, default='', help_text='Standard Webhooks signing secret (whsec_…), shown to the owner once', max_length=100)),
                ('workload_name', models.CharField(db_index=True, max_length=200)),
                ('scenario_kind', models.CharField(max_length=40)),
                ('created_at', models.DateTimeField()),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='decisions', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
        migrations.CreateModel(
            name='DecisionAnswer',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('answer', models.JSONField()),
                ('digest', models.CharField(max_length=71)),
                ('created_at', models.DateTimeField()),
                ('decision', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='answers', to='registry.decision')),
            ],
            options={
                'ordering': ['decision', '-number'],
            },
        ),
        migrations.CreateModel(
            name='DecisionEvidence',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('answer', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='evidence', to='registry.decisionanswer')),
                ('submission', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='registry.submission')),
            ],
        ),
        migrations.AddField(
            model_name='decisionanswer',
            name='runs',
            field=models.ManyToManyField(related_name='decision_answers', through='registry.DecisionEvidence', to='registry.submission'),
        ),
        migrations.AddConstraint(
            model_name='decisionevidence',
            constraint=models.UniqueConstraint(fields=('answer', 'submission'), name='decision_evidence_once'),
        ),
        migrations.AddConstraint(
            model_name='decisionanswer',
            constraint=models.UniqueConstraint(fields=('decision', 'number'), name='decision_answer_number'),
        ),
        migrations.CreateModel(
            name='DecisionReport',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('answer', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='registry.decisionanswer')),
                ('decision', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reports', to='registry.decision')),
                ('report', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='decision_record', to='registry.report')),
            ],
            options={
                'abstract': False,
            },
        ),
        migrations.RunPython(reindex_keys, migrations.RunPython.noop),
        migrations.RunPython(rebuild_cells, migrations.RunPython.noop),
    ]
