"""Comparability contract 1.2 (issue 32): the served-model fields of protocol 1.2 governed.

The request shape, the served model and the sweep mode are controlled; which sweep a level belongs to (id, index,
levels, stop reason) is disclosed, as are the load generator and the address it reached. A key hashes the contract
version its controlled fields need: 1.1 for a run without served-model fields (their keys are unchanged, so this
migration leaves them alone), 1.2 for a run with a sweep, a request shape or a served model. Only those runs are
re-keyed, and the catalogue's cells (keyed by the system axis's key) are rebuilt when any of their keys changed.

As 0011 and 0021 do, on PostgreSQL this migration disables the append-only trigger of registry_submission for its own
transaction only and sets only derived key columns, each a pure function of the canonical text (`manage.py audit
verify` recomputes them). The contract 1.2 and the key function are frozen here (registry/migrations/frozen/
comparability-1.2.json); tests/registry/test_migrations.py checks them against protocol/ while the contract is 1.2.
Reversing re-keys the same runs under the frozen 1.1 of 0011.
"""

import hashlib
import importlib
import json
from pathlib import Path

import rfc8785
from django.db import migrations, models
from django.db.models import Q

TRIGGER = "registry_submission_no_update_delete"
AXES = {"system": "comparability_key", "software": "comparability_key_software",
        "precision": "comparability_key_precision", "iso-quality": "comparability_key_iso_quality"}
BATCH = 1000
FROZEN_CONTRACT = json.loads((Path(__file__).parent / "frozen" / "comparability-1.2.json").read_text())
# The runs whose keys 1.2 may change: those stating a field protocol 1.2 added that the contract now governs.
SERVED = (Q(document__scenario__has_key="sweep") | Q(document__workload__has_key="request_shape")
          | Q(document__software__has_key="serving"))
m0011 = importlib.import_module("registry.migrations.0011_decisions")
m0021 = importlib.import_module("registry.migrations.0021_measurement_identity")


# --- frozen: the key function of contract 1.2, as protocol/ computed it when this migration was written ------------

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
        for pointer in group["pointers"]:
            if "{primary}" in pointer:
                if name:
                    rules[m0011._split(pointer.replace("{primary}", name))] = group
            else:
                rules[m0011._split(pointer)] = group
    return rules


def comparability_key(doc, axis):
    """'sha256:<hex>' of the canonical {contract version, axis, controlled projection} (contract 1.2)."""
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


# --- the re-keying ----------------------------------------------------------------------------------------------------

def _rekey(apps, schema_editor, key):
    """Set the key columns of the served runs to `key(doc, axis)`; rebuild the cells if a system key changed."""
    submission = apps.get_model("registry", "Submission")
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    ids = list(submission.objects.filter(SERVED).order_by("id").values_list("id", flat=True))
    cells_changed = False
    for start in range(0, len(ids), BATCH):
        rows = []
        for pk, canonical, old in (submission.objects.filter(id__in=ids[start:start + BATCH])
                                   .values_list("id", "canonical", "comparability_key")):
            doc = json.loads(canonical)
            keys = {column: key(doc, axis) for axis, column in AXES.items()}
            cells_changed |= keys["comparability_key"] != old
            rows.append(submission(id=pk, **keys))
        # Through the base QuerySet class: the model's own refuses updates (it is evidence); these columns are read
        # from the canonical text, not part of it.
        models.QuerySet(submission).bulk_update(rows, list(AXES.values()))
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")
    if cells_changed:
        m0021.rebuild_cells(apps, schema_editor)


def rekey(apps, schema_editor):
    _rekey(apps, schema_editor, comparability_key)


def rekey_as_before(apps, schema_editor):
    _rekey(apps, schema_editor, m0011.comparability_key)


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0021_measurement_identity"),
    ]

    operations = [
        migrations.RunPython(rekey, rekey_as_before),
    ]
