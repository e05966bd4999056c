"""The published table as the referee of an import: every document an Inference import would store is compared
with MLCommons' own row for the same result folder, and each difference is listed as a `Disagreement`.

Plain Python (no Django), run on the `ImportPlan` before anything is stored (registry/services/imports.py
stores nothing it disagrees about unless told to). What is compared, per row of the table whose `Location` is
inside the imported tree (the scenario folder matched in any case, as MLPerf's checker accepts it):

* the result folder: a published row whose folder is in the tree but yields no stored run is a disagreement
  ('not-imported', with the importer's reason); one whose folder was refused is listed with the refusal
  ('refused': the refusal already fails the import); a row whose folder is not in the tree at all (a trimmed
  copy of a round) is counted as absent, not judged. A run the import would store that the table does not
  publish is a disagreement ('unpublished');
* the headline figure (`metrics.<primary>`) and its unit, at the precision the table prints;
* every accuracy value the table prints, against `metrics.quality.values`;
* the verdict: a published closed or network result passed MLPerf's accuracy check, LoadGen's validity and the
  audit tests whose verdict files the tree holds;
* whether the result is inferred (`provenance.origin.derivation`), whether it has power measurements
  (`metrics.energy`, the average power where the table prints Watts), the weight precision, the division and
  the availability.

Nothing is defaulted: a unit, precision word or accuracy name the referee does not know is itself reported.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from .plan import ImportItem, ImportPlan
from .published import BARE_ACCURACY, PublishedRow, half_unit, location_key
from .rules import RuleMissing, round_rules, weights_format
from .tree import real_dir

# The table's Performance_Units -> the protocol units a stored headline may carry, each with the factor that
# turns the stored number into the published one. LoadGen's Server and Interactive scenarios send one sample per
# query, so MLPerf's 'Queries/s' (result_completed_samples_per_sec, submission checker RESULT_FIELD_NEW) is the
# samples/s figure; protocol latencies are in ms ('Latency (s)': wan-2.2's SingleStream from v6.0).
PUBLISHED_UNITS: dict[str, dict[str, Decimal]] = {
    "Tokens/s": {"tokens/s": Decimal(1)},
    "Samples/s": {"samples/s": Decimal(1)},
    "Queries/s": {"samples/s": Decimal(1), "queries/s": Decimal(1)},
    "Latency (ms)": {"ms": Decimal(1)},
    "Latency (s)": {"ms": Decimal("0.001")},
}


@dataclass(frozen=True)
class Erratum:
    """A unit the table prints for a benchmark and scenario that is not the unit of the figure it prints."""

    rounds: frozenset[str]
    printed: str
    meant: str
    why: str


# The table's label comes from generate_final_report's SPECIAL_UNIT_DICT (default UNIT_DICT), its number from the
# checker's RESULT_FIELD_BENCHMARK_OVERWRITE: where the two tables disagree, the label is wrong.
UNIT_ERRATA: dict[tuple[str, str], Erratum] = {
    ("llama3.1-8b", "Interactive"): Erratum(
        frozenset({"v5.1"}),
        "Queries/s",
        "Tokens/s",
        "v5.1's SPECIAL_UNIT_DICT had no Interactive entry for llama3.1-8b, so its tokens/s figure is labelled "
        "with the default 'Queries/s' (fixed in mlcommons/inference@6d0cf9dc, #2564)",
    ),
    ("whisper", "Offline"): Erratum(
        frozenset({"v5.1", "v6.0", "v6.1"}),
        "Samples/s",
        "Tokens/s",
        "the checker publishes whisper's result_tokens_per_second (RESULT_FIELD_BENCHMARK_OVERWRITE), but "
        "SPECIAL_UNIT_DICT has no whisper entry, so the label is the default 'Samples/s' "
        "(mlcommons/inference@b66003e1 tools/submission/submission_checker/constants.py)",
    ),
}

# The table's accuracy names are the keys of the submission checker's ACC_PATTERN; each pattern reads one value
# name of accuracy.txt, the name the importer stores in metrics.quality.values (mlcommons/inference@b66003e1
# tools/submission/submission_checker/constants.py ACC_PATTERN). Names not listed are matched to a stored value
# of the same name in any case ('exact_match', 'mAP', 'AUC', 'DICE', 'CLIP_SCORE', 'FID_SCORE').
ACCURACY_NAMES: dict[str, str] = {
    "acc": "accuracy",
    "ACCURACY": "accuracy",  # whisper: 'Word Error Rate: ..., accuracy=97.83%'
    "meanAcc": "mean-accuracy",
    "F1": "f1",
    "F1_HIERARCHICAL": "f1",
    "ROUGE1": "rouge1",
    "ROUGE2": "rouge2",
    "ROUGEL": "rougeL",
    "ROUGELSUM": "rougeLsum",
    "GEN_LEN": "gen_len",
    "TOKENS_PER_SAMPLE": "tokens_per_sample",
    "gsm8k_accuracy": "gsm8k",
    "mbxp_accuracy": "mbxp",
    "bleu": "BLEU",
    "E2E_ACCURACY": "Accuracy",
}

# The table's weight_data_types words are read by the importer's own table (rules.weights_format): the table and the
# measurements.json a document is built from write the same words, so one table keeps the two readings equal.
UNSPECIFIED = "unspecified"

AVAILABILITIES = {"available": "available", "preview": "preview", "rdi": "research"}

POWER_FIELDS = {"Watts": "average_power_w"}  # millijoules (energy per query, Single/MultiStream): presence only

VERDICT_DIVISIONS = frozenset({"closed", "network"})  # open results have no accuracy target to pass


@dataclass(frozen=True)
class Disagreement:
    """One difference between the published table and what the import would store."""

    location: str  # the result folder, relative to the round root, as the table writes it
    field: str  # 'headline', 'unit', 'accuracy.ROUGE1', 'verdict', 'not-imported', ...
    published: str
    stored: str
    note: str = ""
    item: int | None = None  # the position in plan.items of the item it is about

    @property
    def kind(self) -> str:
        return self.field.split(".", 1)[0]

    def line(self) -> str:
        note = f" ({self.note})" if self.note else ""
        return f"{self.location}: {self.field}: published {self.published}, stored {self.stored}{note}"


@dataclass(frozen=True)
class RefereeReport:
    """What the referee found: disagreements, the published rows refused by the import, and counts."""

    table: str
    scope: str  # the imported tree relative to the round root ('' for the whole round)
    rows: int  # rows in the table
    in_scope: int  # rows inside the imported tree
    compared: int  # rows compared with a document
    absent: list[str]  # rows in scope whose folder is not in the tree (a trimmed copy of a round)
    refused: list[Disagreement]
    disagreements: list[Disagreement]
    held: frozenset[int] = frozenset()  # positions in plan.items of the items a disagreement is about
    notes: list[str] = field(default_factory=list)
    matched: dict[int, PublishedRow] = field(default_factory=dict)  # position in plan.items -> its published row

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(d.kind for d in self.disagreements).items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "scope": self.scope,
            "rows": self.rows,
            "in_scope": self.in_scope,
            "compared": self.compared,
            "absent": len(self.absent),
            "counts": self.counts(),
            "notes": self.notes,
            "refused": [d.__dict__ for d in self.refused],
            "disagreements": [d.__dict__ for d in self.disagreements],
        }

    def lines(self) -> list[str]:
        head = (
            f"published table {self.table} (scope {self.scope or 'the whole round'}): {self.in_scope} of "
            f"{self.rows} rows in scope, {self.compared} compared, {len(self.absent)} not in the tree, "
            f"{len(self.disagreements)} disagreement(s)"
        )
        counts = ", ".join(f"{n} {kind}" for kind, n in self.counts().items())
        return [
            head + (f": {counts}" if counts else ""),
            *(f"  note: {n}" for n in self.notes),
            *(f"  REFUSED {d.line()}" for d in self.refused),
            *(f"  DISAGREES {d.line()}" for d in self.disagreements),
        ]


def referee(
    plan: ImportPlan, rows: list[PublishedRow], *, root: Path, scope: str, table: str, wrapper: str = ""
) -> RefereeReport:
    """Compare the plan of the tree at `root` with the published `rows` of its round. The tree is the folder
    `scope` of the round ('' for the round root), or holds the round root in its folder `wrapper`."""
    scoped = [row for row in rows if _inside(row.location, scope)]
    items = _items_by_location(plan, scope, wrapper)
    found: list[Disagreement] = []
    refused: list[Disagreement] = []
    absent: list[str] = []
    compared: list[PublishedRow] = []
    matched: dict[int, PublishedRow] = {}
    for row in scoped:
        read = items.pop(location_key(row.location), None)
        if read is None:
            _unmatched(row, root / wrapper, scope, found, absent)
            continue
        index, item = read[0], plan.items[read[0]]
        if item.document is None:
            (refused if item.status == "refused" else found).append(_not_imported(row, item))
            continue
        compared.append(row)
        matched[index] = row
        found += [replace(d, item=index) for d in compare(row, item.document)]
    found += [
        _unpublished(plan.items[index], index, location)
        for index, location in sorted(items.values())
        if plan.items[index].document is not None
    ]
    found += _round(plan, scoped)
    held = {d.item for d in found if d.item is not None}
    return RefereeReport(
        table=table,
        scope=scope,
        rows=len(rows),
        in_scope=len(scoped),
        compared=len(compared),
        absent=absent,
        refused=refused,
        disagreements=found,
        held=frozenset(held),
        notes=_notes(compared),
        matched=matched,
    )


def _inside(location: str, scope: str) -> bool:
    return not scope or location_key(location).startswith(scope.strip("/") + "/")


def _items_by_location(plan: ImportPlan, scope: str, wrapper: str) -> dict[str, tuple[int, str]]:
    """The items that read a result folder, by that folder's Location key: (position, Location)."""
    out: dict[str, tuple[int, str]] = {}
    prefix, wrapped = scope.strip("/"), f"{wrapper.strip('/')}/" if wrapper.strip("/") else ""
    for index, item in enumerate(plan.items):
        where = item_location(item)
        if where is not None and where.startswith(wrapped):
            where = where[len(wrapped) :]
            location = f"{prefix}/{where}" if prefix else where
            out[location_key(location)] = (index, location)
    return out


def item_location(item: ImportItem) -> str | None:
    """The item's result folder relative to the imported tree, from the paths of its files: the item's key is
    '<system>/<benchmark>/<scenario>', its folder '.../results/<key>'."""
    marker = f"results/{item.key}/"
    for report in item.files:
        if report.path.startswith(marker):
            return marker.rstrip("/")
        at = report.path.find("/" + marker)
        if at >= 0:
            return report.path[: at + len(marker)]
    return None


def _unmatched(row: PublishedRow, root: Path, scope: str, found: list[Disagreement], absent: list[str]) -> None:
    """A published row no item read: absent from the tree (a trimmed copy), or missed by the importer."""
    relative = row.location.strip("/")[len(scope.strip("/")) :].strip("/")
    if not _folder_exists(root, relative):
        absent.append(row.location)
        return
    found.append(
        Disagreement(row.location, "not-imported", _figure(row), "nothing", "the folder is in the tree, no run read it")
    )


def _folder_exists(root: Path, relative: str) -> bool:
    head, _, scenario = relative.rpartition("/")
    parent = root / head
    return real_dir(parent) and any(real_dir(p) and p.name.lower() == scenario.lower() for p in parent.iterdir())


def _not_imported(row: PublishedRow, item: ImportItem) -> Disagreement:
    why = item.skipped or "; ".join(item.errors) or "no document"
    return Disagreement(
        row.location, "refused" if item.status == "refused" else "not-imported", _figure(row), item.status, why[:1000]
    )


def _unpublished(item: ImportItem, index: int, location: str) -> Disagreement:
    value, unit = headline(item.document or {})
    return Disagreement(location, "unpublished", "no row", f"{value} {unit}", "imported, but not in the table", index)


def _round(plan: ImportPlan, rows: list[PublishedRow]) -> list[Disagreement]:
    versions = sorted({row.version for row in rows})
    if not versions or versions == [plan.round]:
        return []
    return [Disagreement("", "round", ", ".join(versions), str(plan.round), "the table is of another round")]


def _notes(rows: list[PublishedRow]) -> list[str]:
    per_query = sum(1 for row in rows if row.power_units and row.power_units not in POWER_FIELDS)
    if not per_query:
        return []
    return [
        f"{per_query} published energy figures per query (millijoules) are checked for presence only: the "
        "protocol has no per-query energy field"
    ]


def _figure(row: PublishedRow) -> str:
    return f"{row.result} {row.units}"


# --- one published row against one document ----------------------------------------------------------------------


def compare(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    """Every difference between a published row and the document of the same result folder."""
    return [
        *_headline(row, document),
        *_accuracy(row, document),
        *_verdict(row, document),
        *_inferred(row, document),
        *_power(row, document),
        *_precision(row, document),
        *_facets(row, document),
    ]


def headline(document: dict[str, Any]) -> tuple[Any, str | None]:
    """The document's headline figure and unit: `metrics[primary]`, a dotted primary naming one percentile
    ('latency_ms.p90') of a distribution whose unit is the distribution's."""
    metrics = document.get("metrics") or {}
    name, _, part = str(metrics.get("primary", "")).partition(".")
    node = metrics.get(name)
    if not isinstance(node, dict):
        return None, None
    if part:
        return node.get(part), node.get("unit")
    return node.get("value"), node.get("unit")


def _headline(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    units, note = _published_units(row)
    value, unit = headline(document)
    stored = f"{value} {unit}"
    if units is None:
        return [Disagreement(row.location, "unit", row.units, stored, "a published unit the referee does not know")]
    if unit not in units:
        return [Disagreement(row.location, "unit", _figure(row), stored, note)]
    if not isinstance(value, int | float) or not _agrees(row.result, Decimal(repr(value)) * units[unit]):
        return [Disagreement(row.location, "headline", _figure(row), stored, _margin(row.result))]
    return []


def _published_units(row: PublishedRow) -> tuple[dict[str, Decimal] | None, str]:
    """The protocol units the row's figure may be stored in, and a note when the table's label is an erratum."""
    erratum = UNIT_ERRATA.get((row.model, row.scenario))
    if erratum and row.version in erratum.rounds and row.units == erratum.printed:
        return PUBLISHED_UNITS[erratum.meant], f"read as {erratum.meant}: {erratum.why}"
    return PUBLISHED_UNITS.get(row.units), ""


def _agrees(printed: Decimal, stored: Any, relative: Decimal = Decimal("1e-9")) -> bool:
    """The stored number rounds to the printed one: within half a unit of the printed last digit (and a
    billionth, for binary floating point)."""
    if isinstance(stored, bool) or not isinstance(stored, int | float | Decimal):
        return False
    number = stored if isinstance(stored, Decimal) else Decimal(repr(float(stored)))
    return abs(number - printed) <= half_unit(printed) + abs(printed) * relative


def _margin(printed: Decimal) -> str:
    return f"beyond the printed precision, +-{half_unit(printed)}"


def _accuracy(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    quality = (document.get("metrics") or {}).get("quality") or {}
    values = quality.get("values") or {}
    out = []
    for name, printed in row.accuracy.items():
        stored_name = stored_accuracy_name(name, values)
        stored = values.get(stored_name) if stored_name else None
        if stored is None:
            wanted = ACCURACY_NAMES.get(name, name) if name != BARE_ACCURACY else "single"
            field = f"accuracy.{name}" if name != BARE_ACCURACY else "accuracy"
            out.append(Disagreement(row.location, field, str(printed), "absent", f"no {wanted!r} value"))
        elif not _agrees(printed, stored):
            field = f"accuracy.{name}" if name != BARE_ACCURACY else "accuracy"
            out.append(Disagreement(row.location, field, str(printed), str(stored), _margin(printed)))
    return out


def stored_accuracy_name(published: str, values: dict[str, Any]) -> str | None:
    """The stored value name a published accuracy name reads: the checker's pattern's name, else the same name
    in any case; None when the document has neither. A bare published figure (no name) reads the document's one
    value, and nothing where it holds several."""
    if published == BARE_ACCURACY:
        return next(iter(values)) if len(values) == 1 else None
    wanted = ACCURACY_NAMES.get(published, published)
    if wanted in values:
        return wanted
    lowered = {name.lower(): name for name in values}
    return lowered.get(wanted.lower()) or lowered.get(published.lower())


def _verdict(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    out = []
    valid = ((document.get("conditions") or {}).get("validity") or {}).get("valid")
    if valid is not True:
        out.append(Disagreement(row.location, "validity", "valid", str(valid), "a published result is VALID"))
    if row.division in VERDICT_DIVISIONS:
        quality = (document.get("metrics") or {}).get("quality") or {}
        passed = quality.get("passed")
        if passed is not True:
            why = "a published closed result passed MLPerf's accuracy check"
            out.append(Disagreement(row.location, "verdict", "passed", _verdict_word(passed, quality), why))
        out += _audit(row, document)
    return out


def _audit(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    """A published closed or network result passed the audit tests its checker ran (a verdict file read as failed
    disagrees). A test missing from the tree is not judged (a trimmed copy drops files); the table's own
    `compliance` column is not read: v6.0 writes the division there."""
    checks = ((document.get("conditions") or {}).get("validity") or {}).get("checks") or {}
    failed = sorted(
        k
        for k, v in checks.items()
        if v is False and k.startswith(("audit_", "test06_")) and not k.endswith("_present")
    )
    if not failed:
        return []
    why = "a published closed result passed its audit tests (the checker's compliance check)"
    return [Disagreement(row.location, "audit", "passed", "failed: " + ", ".join(failed), why)]


def _verdict_word(passed: Any, quality: dict[str, Any]) -> str:
    if not quality:
        return "no accuracy stored"
    return {False: "failed", None: "not judged"}.get(passed, str(passed))


def _inferred(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    """The table's `inferred` against what the round's table writes for the stored run (RoundRules.table_inferred):
    from v6.0 MLCommons marks every result whose run's scenario word differs from its folder's, so an Interactive
    result run as LoadGen's Server, or an endpoints result (config.yaml type 'offline'), is published as inferred
    while it is stored as the measured run it is."""
    origin = (document.get("provenance") or {}).get("origin") or {}
    derivation = origin.get("derivation")
    stored = isinstance(derivation, dict) and derivation.get("kind") == "mlperf-inferred"
    expected = _table_inferred(origin, document, stored)
    if expected == row.inferred:
        return []
    words = {True: "inferred", False: "measured"}
    note = "" if expected == stored else f"the round's table would write {words[expected]} for this run"
    return [Disagreement(row.location, "inferred", words[row.inferred], words[stored], note)]


def _table_inferred(origin: dict[str, Any], document: dict[str, Any], stored: bool) -> bool:
    """What the round's published table writes in `inferred` for this document: the scenario word its run
    logged (the derivation's measured scenario, LoadGen's effective scenario, the endpoint's config type) against
    its folder's; the stored label where the round or the run's scenario is not known."""
    settings = (document.get("software") or {}).get("settings") or {}
    derivation = origin.get("derivation") if stored else None
    ran = (derivation or {}).get("from_scenario") or settings.get("loadgen.scenario") or settings.get("endpoints.type")
    if not isinstance(ran, str) or not isinstance(origin.get("scenario"), str):
        return stored
    try:
        return round_rules(str(origin.get("round"))).table_inferred(ran, origin["scenario"])
    except RuleMissing:
        return stored


def _power(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    energy = (document.get("metrics") or {}).get("energy")
    if not row.has_power:
        return [] if not energy else [Disagreement(row.location, "power", "no power result", "metrics.energy")]
    published = f"{row.power_result} {row.power_units}"
    if not energy:
        return [Disagreement(row.location, "power", published, "no metrics.energy")]
    name = POWER_FIELDS.get(row.power_units or "")
    if name is None or row.power_result is None:
        return []
    if not _agrees(row.power_result, energy.get(name), Decimal("1e-6")):
        return [
            Disagreement(row.location, f"power.{name}", published, str(energy.get(name)), _margin(row.power_result))
        ]
    return []


def _precision(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    stored = (document.get("precision") or {}).get("weights")
    word = row.weight_data_types.strip().lower()
    stated = weights_format(word)
    expected = stated or UNSPECIFIED
    if stored == expected:
        return []
    note = "" if stated else "no single format of the protocol's: stored weights must be unspecified"
    return [Disagreement(row.location, "precision", row.weight_data_types, str(stored), note)]


def _facets(row: PublishedRow, document: dict[str, Any]) -> list[Disagreement]:
    origin = (document.get("provenance") or {}).get("origin") or {}
    out = []
    if origin.get("division") != row.division:
        out.append(Disagreement(row.location, "division", row.division, str(origin.get("division"))))
    availability = AVAILABILITIES.get(row.availability.lower())
    if availability is None or origin.get("availability") != availability:
        out.append(Disagreement(row.location, "availability", row.availability, str(origin.get("availability"))))
    return out
