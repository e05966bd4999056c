"""Comparability contract 1.3 (issue 43, item 5): the scaling axis, and a key column for it.

1.3 adds the scaling axis (a configuration's size is the subject: accelerator count, nodes, world size, processes per
node, the global batch) and splits the size fields, a scaling plan's identity and the software notes out of the groups
that held them, with the roles those groups had on the four earlier axes. No key of those axes changes (their
controlled projections and the keys' version are as they were: tests/registry/test_migrations.py checks it on every
example), so only the new column is filled: every run gets its scaling key, as runs_store writes it for new runs and
`manage.py audit verify` recomputes it.

As 0011 and 0022 do, on PostgreSQL this migration disables the append-only trigger of registry_submission for its own
transaction only and sets only the derived key column, a pure function of the canonical text. The contract 1.3 and the
key function are frozen here (registry/migrations/frozen/comparability-1.3.json); tests/registry/test_migrations.py
checks them against protocol/ while the contract is 1.3. Reversing drops the column.
"""

import hashlib
import importlib
import json
from pathlib import Path

import rfc8785
from django.db import migrations, models

TRIGGER = "registry_submission_no_update_delete"
AXES = {"system": "comparability_key", "software": "comparability_key_software",
        "precision": "comparability_key_precision", "iso-quality": "comparability_key_iso_quality",
        "scaling": "comparability_key_scaling"}
BATCH = 1000
FROZEN_CONTRACT = json.loads((Path(__file__).parent / "frozen" / "comparability-1.3.json").read_text())
m0011 = importlib.import_module("registry.migrations.0011_decisions")


# --- frozen: the key function of contract 1.3, as protocol/ computed it when this migration was written ------------

def _version(groups):
    """The highest `since` among the controlled fields' groups, else the keys' version."""
    versions = {FROZEN_CONTRACT["keys"]["version"], *(g["since"] for g in groups if g is not None and g.get("since"))}
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def _rules(doc):
    """{path: group or None (ignored)}, '{primary}' resolved for this document."""
    primary = (doc.get("metrics") or {}).get("primary")
    name = primary.partition(".")[0] if isinstance(primary, str) else None
    rules = {m0011._split(i["pointer"]): None for i in FROZEN_CONTRACT["ignored"]}
    for group in FROZEN_CONTRACT["groups"]:
        if group.get("primary") is not None and group["primary"] != name:
            continue  # a group for runs with another headline
        for pointer in group["pointers"]:
            if "{primary}" in pointer:
                if name:
                    rules[m0011._split(pointer.replace("{primary}", name))] = group
            else:
                rules[m0011._split(pointer)] = group
    return rules


def comparability_key(doc, axis):
    """'sha256:<hex>' of the canonical {contract version, axis, controlled projection} (contract 1.3)."""
    rules = _rules(doc)
    wild = [p for p in rules if "*" in p]
    controlled, groups = {}, []
    for path, value in m0011._leaves(doc):
        found, group = m0011._governing(path, rules, wild)
        if found and group is None:
            continue  # ignored
        role = group["roles"].get(axis, "") if group is not None else FROZEN_CONTRACT["unlisted_role"]
        if role != "controlled":
            continue
        if group is not None and group.get("compare") == "major" and isinstance(value, str):
            value = value.rsplit(".", 1)[0]
        controlled[m0011._join(path)] = value
        groups.append(group)
    body = {"contract": _version(groups), "axis": axis, "controlled": dict(sorted(controlled.items()))}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()


# --- the new column, filled -------------------------------------------------------------------------------------------

def fill(apps, schema_editor):
    """Set every run's scaling key."""
    submission = apps.get_model("registry", "Submission")
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    ids = list(submission.objects.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        rows = [
            submission(id=pk, comparability_key_scaling=comparability_key(json.loads(canonical), "scaling"))
            for pk, canonical in submission.objects.filter(id__in=ids[start:start + BATCH]).values_list("id",
                                                                                                     "canonical")
        ]
        # Through the base QuerySet class: the model's own refuses updates (it is evidence); the column is read from
        # the canonical text, not part of it.
        models.QuerySet(submission).bulk_update(rows, ["comparability_key_scaling"])
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0028_scaling_plan_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="comparability_key_scaling",
            field=models.CharField(db_index=True, default="", max_length=71),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
