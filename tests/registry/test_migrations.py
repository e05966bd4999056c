"""Migrations stand alone: what 0007 and 0011 compute is frozen inside them, and agrees with protocol/.

0007 froze contract 1.0; 0011 froze contract 1.1 (the iso-quality axis) and re-keyed every stored run; 0022 froze
contract 1.2 (the served-model fields) and re-keyed the runs that state them. If the
contract file changes without a new version, the live keys stop matching the frozen copy of the current version
and this test fails: a changed contract is a new contract version (and a migration of its own for stored keys).
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from protocol.comparability import comparability_key, contract, contract_document
from protocol.summary import software_summary
from tests.conftest import EXAMPLES, SHARED

m0007: Any = importlib.import_module("registry.migrations.0007_catalogue_cells")
m0011: Any = importlib.import_module("registry.migrations.0011_decisions")
m0022: Any = importlib.import_module("registry.migrations.0022_contract_1_2")
m0029: Any = importlib.import_module("registry.migrations.0029_contract_1_3")
FROZEN = {m.FROZEN_CONTRACT["version"]: m for m in (m0007, m0011, m0022, m0029)}
EARLIER_AXES = ["software", "precision", "system", "iso-quality"]


def _documents() -> list[dict[str, Any]]:
    paths = sorted(EXAMPLES.glob("*.json")) + sorted((SHARED / "protocol" / "examples").glob("*.json"))
    return [json.loads(p.read_text()) for p in paths]


def _served() -> list[dict[str, Any]]:
    """Served-model levels (protocol 1.2): with every 1.2 addition, and with only a sweep."""
    from tests.protocol.test_protocol_1_2 import level

    only_sweep = level(concurrency=8)
    for name in ("serving",):
        only_sweep["software"].pop(name)
    only_sweep["workload"].pop("request_shape")
    return [level(concurrency=16), only_sweep]


@pytest.mark.parametrize(
    "module",
    [
        m0007,
        m0011,
        importlib.import_module("registry.migrations.0021_measurement_identity"),
        m0022,
        importlib.import_module("registry.migrations.0025_per_accelerator"),
        importlib.import_module("registry.migrations.0026_sweep_id"),
        importlib.import_module("registry.migrations.0028_scaling_plan_index"),
        m0029,
    ],
)
def test_the_migration_imports_no_protocol_code(module: Any) -> None:
    source = module.__loader__.get_source(module.__name__)
    assert "import protocol" not in source and "from protocol" not in source


def _distributed() -> list[dict[str, Any]]:
    """Distributed training runs (protocol 1.3): the sizes of a weak scaling plan."""
    from devtools.documents import scaling_plan_documents

    return scaling_plan_documents("migrations", [1, 2, 4], repeats=1)


@pytest.mark.parametrize("axis", [*EARLIER_AXES, "scaling"])
def test_the_frozen_keys_of_the_current_contract_equal_protocol_keys(axis: str) -> None:
    documents = _documents()
    assert documents
    if contract().version not in FROZEN:
        pytest.fail(f"contract {contract().version} has no migration that freezes it and re-keys the runs")
    frozen = FROZEN[contract().version]
    assert contract_document() == frozen.FROZEN_CONTRACT
    for doc in documents + _served() + _distributed():
        assert frozen.comparability_key(doc, axis) == comparability_key(doc, axis)


@pytest.mark.parametrize("axis", EARLIER_AXES)
def test_0029_changes_no_key_of_the_earlier_axes(axis: str) -> None:
    """1.3 split the size out of the system and scenario groups with their roles: every stored key of the four
    earlier axes is the one 1.2 gave (so 0029 fills only the new column)."""
    for doc in _documents() + _served() + _distributed():
        assert m0029.comparability_key(doc, axis) == m0022.comparability_key(doc, axis)


@pytest.mark.django_db
def test_0029_fills_the_scaling_key_of_a_stored_run(user: Any) -> None:
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection, models

    from registry.models import Submission
    from registry.services.submissions import submission_create

    run, _ = submission_create(document=_distributed()[1], submitted_by=user)
    live = run.comparability_key_scaling
    assert live == comparability_key(run.document, "scaling") and live.startswith("sha256:")
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {m0029.TRIGGER}")
        models.QuerySet(Submission).filter(pk=run.pk).update(comparability_key_scaling="")
        if postgres:
            cursor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {m0029.TRIGGER}")
    m0029.fill(apps, SimpleNamespace(connection=connection, execute=connection.cursor().execute))
    assert Submission.objects.get(pk=run.pk).comparability_key_scaling == live


@pytest.mark.parametrize("axis", ["software", "precision", "system", "iso-quality"])
def test_0022_keeps_the_keys_of_runs_without_served_fields_and_changes_the_served_ones(axis: str) -> None:
    for doc in _documents():
        assert m0022.comparability_key(doc, axis) == m0011.comparability_key(doc, axis)
    for doc in _served():
        assert m0022.comparability_key(doc, axis) != m0011.comparability_key(doc, axis)


@pytest.mark.django_db
def test_0022_rekeys_a_served_run_stored_under_1_1_and_its_cell(user: Any) -> None:
    """A level stored while the contract was 1.1 (its keys as 1.1 gave them) gets 1.2's keys and a cell of its own;
    reversed, it gets 1.1's back."""
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection, models

    from registry.models import CatalogueCell, Submission
    from registry.services.catalogue import catalogue_cells_differ
    from registry.services.submissions import submission_create

    plain, _ = submission_create(document=_documents()[0], submitted_by=user)
    run, _ = submission_create(document=_served()[0], submitted_by=user)
    live = {c: getattr(run, c) for c in m0022.AXES.values()}
    as_1_1 = {c: m0011.comparability_key(run.document, axis) for axis, c in m0022.AXES.items()}
    # Stored as 1.1 left it: on PostgreSQL the append-only trigger is set aside for this, as the migration does.
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:  # the test's own transaction still holds deferred checks of the rows it created: run them now
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {m0022.TRIGGER}")
        models.QuerySet(Submission).filter(pk=run.pk).update(**as_1_1)
        if postgres:
            cursor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {m0022.TRIGGER}")
    CatalogueCell.objects.filter(comparability_key=live["comparability_key"]).update(
        comparability_key=as_1_1["comparability_key"]
    )
    editor = SimpleNamespace(connection=connection, execute=connection.cursor().execute)
    m0022.rekey(apps, editor)
    assert {c: getattr(Submission.objects.get(pk=run.pk), c) for c in live} == live
    assert catalogue_cells_differ() == []
    assert Submission.objects.get(pk=plain.pk).comparability_key == plain.comparability_key
    m0022.rekey_as_before(apps, editor)
    assert {c: getattr(Submission.objects.get(pk=run.pk), c) for c in live} == as_1_1


def test_0007_still_computes_the_1_0_keys_it_wrote() -> None:
    doc = _documents()[0]
    assert m0007.FROZEN_CONTRACT["version"] == "1.0"
    assert m0007.comparability_key(doc, "system") != m0011.comparability_key(doc, "system")


def test_the_frozen_software_summary_equals_protocols() -> None:
    for doc in _documents():
        frameworks = doc["software"]["frameworks"]
        assert m0007.software_summary(frameworks) == software_summary(frameworks)
    long = {f"package-{i}": "1.0" for i in range(100)}
    assert m0007.software_summary(long) == software_summary(long)


def test_0016s_cell_shape_is_the_cell_key_but_withdrawn() -> None:
    """A new cell column must reach the shape (a new migration); otherwise a search joins runs to the wrong cells."""
    from registry.models.catalogue import CELL_KEY

    m0016: Any = importlib.import_module("registry.migrations.0016_search_shape_columns")
    assert sorted(m0016.CELL_SHAPE_COLUMNS) == sorted(c for c in CELL_KEY if c != "withdrawn")


def test_0021s_frozen_measurement_identity_equals_protocols() -> None:
    """0021 backfilled every run with a frozen copy of protocol.measurement_identity: they must agree."""
    import copy

    from protocol import digest, is_derived, measurement_identity

    m0021: Any = importlib.import_module("registry.migrations.0021_measurement_identity")
    documents = _documents()
    imported = copy.deepcopy(documents[0])
    imported["provenance"]["origin"] = {
        "kind": "mlperf-inference",
        "round": "v5.1",
        "benchmark": "llama2-70b-99",
        "mapped_benchmark": None,
        "scenario": "Server",
        "files": {"b/x": "sha256:" + "22" * 32, "a/y": "sha256:" + "11" * 32},
    }
    inferred = copy.deepcopy(imported)
    inferred["provenance"]["origin"]["derivation"] = {"kind": "mlperf-inferred", "rule": "r"}
    for doc in [*documents, imported, inferred]:
        assert m0021.measurement_identity(doc, digest(doc)) == measurement_identity(doc)
        assert (m0021.derivation_kind(doc) is not None) == is_derived(doc)


def test_0024s_frozen_per_accelerator_columns_equal_protocols() -> None:
    """0025 backfilled every run with a frozen copy of protocol.per_accelerator: they must agree."""
    import copy

    from protocol.summary import summarize
    from tests.conftest import load_example

    m0025: Any = importlib.import_module("registry.migrations.0025_per_accelerator")
    served = copy.deepcopy(load_example("inference-server-h100-bf16"))
    served["protocol"] = "benchreg.submission/1.2"
    served["system"]["accelerators"][0]["count"] = 8
    served["metrics"]["token_counts"] = {"input_total": 1_200_000, "output_total": 151_296, "counted_by": "tool-report"}
    served["provenance"]["origin"] = {"kind": "mlperf-inference"}
    names = ("inference-server-h100-bf16", "inference-offline-cpu-int8", "training-h100-bf16")
    for doc in [*(load_example(n) for n in names), served]:
        columns = summarize(doc).columns()
        assert m0025.per_accelerator_columns(doc) == {k: columns[k] for k in m0025.per_accelerator_columns(doc)}


@pytest.mark.django_db
def test_0025_backfills_the_figures_of_runs_stored_before_it(user: Any) -> None:
    """A run stored before 0025 (its new columns at their defaults) gets the figures protocol gives, past the
    append-only trigger on PostgreSQL, and nothing else of it changes."""
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection, models

    from registry.models import Submission
    from registry.services.submissions import submission_create

    m0025: Any = importlib.import_module("registry.migrations.0025_per_accelerator")
    runs = [submission_create(document=doc, submitted_by=user)[0] for doc in (_documents()[0], _served()[0])]
    names = ["origin_kind", "per_accelerator_unit", *m0025.SORTED]
    live = {run.pk: {n: getattr(run, n) for n in names} for run in runs}
    assert any(v["per_accelerator_output_tokens"] for v in live.values())
    defaults = dict.fromkeys(m0025.SORTED) | {"origin_kind": "", "per_accelerator_unit": ""}
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {m0025.TRIGGER}")
        models.QuerySet(Submission).update(**defaults)
        if postgres:
            cursor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {m0025.TRIGGER}")
    editor = SimpleNamespace(connection=connection, execute=connection.cursor().execute)
    m0025.backfill(apps, editor)
    again = {r.pk: {n: getattr(r, n) for n in names} for r in Submission.objects.all()}
    assert again == live


def test_0026s_frozen_sweep_id_equals_protocols() -> None:
    """0026 backfilled every level with a frozen copy of protocol.summary.sweep_id: they must agree, for levels,
    runs of no sweep and malformed sweeps alike."""
    from protocol.summary import summarize, sweep_id

    m0026: Any = importlib.import_module("registry.migrations.0026_sweep_id")
    documents = [*_documents(), *_served()]
    assert any(sweep_id(d) for d in documents) and not all(sweep_id(d) for d in documents)
    for doc in documents:
        assert m0026.sweep_id_column(doc) == summarize(doc).columns()["sweep_id"]
    for odd in ({}, {"scenario": None}, {"scenario": {"sweep": "s"}}, {"scenario": {"sweep": {"id": 7}}}):
        assert m0026.sweep_id_column(odd) == (sweep_id(odd) or "")


@pytest.mark.django_db
def test_0026_backfills_the_sweep_id_of_levels_stored_before_it(user: Any) -> None:
    """A level stored before 0026 (its sweep_id at the default "") gets its sweep id back, past the append-only
    trigger on PostgreSQL; a run of no sweep keeps ""."""
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection, models

    from registry.models import Submission
    from registry.services.submissions import submission_create

    m0026: Any = importlib.import_module("registry.migrations.0026_sweep_id")
    runs = [submission_create(document=doc, submitted_by=user)[0] for doc in (_documents()[0], _served()[0])]
    live = {run.pk: run.sweep_id for run in runs}
    assert sorted(bool(v) for v in live.values()) == [False, True]
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {m0026.TRIGGER}")
        models.QuerySet(Submission).update(sweep_id="")
        if postgres:
            cursor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {m0026.TRIGGER}")
    editor = SimpleNamespace(connection=connection, execute=connection.cursor().execute)
    m0026.backfill(apps, editor)
    assert dict(Submission.objects.values_list("pk", "sweep_id")) == live
