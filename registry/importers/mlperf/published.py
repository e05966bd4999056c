"""MLCommons' published results table of an Inference round (`summary_results.json` at the root of the results
repository), read as the referee of an import: one `PublishedRow` per published result, its numbers kept with
the digits the table prints (a table value is compared to the precision it is printed with, never closer).

The table is MLCommons' `generate_final_report.py` output (mlcommons/inference tools/submission): a JSON list
of rows, one per result folder (`Location`), with the published figure (`Performance_Result`,
`Performance_Units`), MLPerf Power's figure where measured (`Power_Result`, `Power_Units`), the accuracy
values the submission checker read (`Accuracy`, 'ROUGE1: 44.4542  ROUGE2: 22.0419 ...'), whether the result
is inferred from another scenario's run (`inferred`), and the weight precision (`weight_data_types`).
MLPerf Training results repositories ship no such table (training_results_v4.0 and v5.0 have none).

Plain Python (no Django). Every input is bounded; a row that is not what the format says is refused by row
number and field (`PublishedTableError`), never skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

from .tree import real_dir

TABLE_NAME = "summary_results.json"
MAX_TABLE_BYTES = 64 * 1024 * 1024  # v5.1's table, 1448 rows, is 2.2 MB
MAX_ROWS = 100_000
MAX_TEXT = 2000  # characters of any one text field

DIVISION_FOLDERS = ("closed", "open", "network")

# One 'NAME: value' pair of the Accuracy column: the checker writes its ACC_PATTERN names and the numbers it
# read, pairs separated by spaces (json.dumps of a dict with ',' '"' '{' '}' removed).
_ACCURACY_PAIR = re.compile(r"([A-Za-z_][\w.\-/]*):\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


class PublishedTableError(ValueError):
    """The published table cannot be read as MLCommons' format: what is wrong and where (row number, field)."""


@dataclass(frozen=True)
class PublishedRow:
    """One published result. Numbers are `Decimal`s as printed, so their printed precision is known."""

    index: int  # position in the table (0-based), for messages
    location: str  # 'closed/AMD/results/<system>/<benchmark>/<Scenario>', relative to the round root
    version: str  # the round, 'v5.1'
    division: str  # the table's 'Category'
    availability: str
    model: str  # the benchmark MLCommons publishes it under (open results mapped through model_mapping.json)
    used_model: str  # the benchmark folder
    scenario: str
    result: Decimal
    units: str
    accuracy: dict[str, Decimal]  # checker name ('ROUGE1') -> printed value
    accuracy_text: str
    inferred: bool
    has_power: bool
    weight_data_types: str
    power_result: Decimal | None = None
    power_units: str | None = None


class Found(NamedTuple):
    """A table found for a tree: where the tree lies in the round. `scope` is the tree's folder relative to the
    round root ('', 'closed', 'closed/AMD'); `wrapper` the folders between the tree and a round root below it
    (an archive whose one top folder is the results repository: 'inference_results_v5.1')."""

    table: Path
    scope: str
    wrapper: str = ""


def find_table(root: Path) -> Found | None:
    """The table of the round `root` belongs to, or None. Looked for in `root`; where `root` is a division or
    submitter folder of a results repository, in the folders above it up to the round root; and where `root`
    holds a single folder (an unpacked archive), in that folder, two levels down at most."""
    root = Path(root).resolve()
    for folder, prefix in _round_roots(root):
        if _is_table(folder / TABLE_NAME):
            return Found(folder / TABLE_NAME, prefix)
    folder, wrapper = root, ""
    for _ in range(2):
        inner = [p for p in folder.iterdir() if real_dir(p)]
        if len(inner) != 1:
            return None
        folder, wrapper = inner[0], f"{wrapper}{inner[0].name}/"
        if _is_table(folder / TABLE_NAME):
            return Found(folder / TABLE_NAME, "", wrapper.rstrip("/"))
    return None


def _is_table(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def scope_of(root: Path) -> str:
    """`root`'s folder relative to the round root, for a table named on the command line, from the layout of a
    results repository: 'closed' for a division folder, 'closed/AMD' for a submitter folder inside one, else ''
    (the tree is taken as the round root; a bare submitter folder needs its scope named)."""
    return _round_roots(Path(root).resolve())[-1][1]


def _round_roots(root: Path) -> list[tuple[Path, str]]:
    """`root` and the folders above it that may be the round root, each with `root` relative to it."""
    found = [(root, "")]
    if root.name in DIVISION_FOLDERS:
        found.append((root.parent, root.name))
    elif root.parent.name in DIVISION_FOLDERS:
        found.append((root.parent.parent, f"{root.parent.name}/{root.name}"))
    return found


def read_table(path: Path) -> list[PublishedRow]:
    """Every row of the table, or PublishedTableError naming the first row and field that is not readable."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_TABLE_BYTES:
        raise PublishedTableError(f"{path.name}: {size} bytes, more than the {MAX_TABLE_BYTES} read")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"), parse_float=Decimal, parse_int=Decimal)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PublishedTableError(f"{path.name}: not JSON text ({exc})") from None
    if not isinstance(data, list):
        raise PublishedTableError(f"{path.name}: not a JSON list of rows")
    if len(data) > MAX_ROWS:
        raise PublishedTableError(f"{path.name}: {len(data)} rows, more than the {MAX_ROWS} read")
    rows = [_row(index, raw) for index, raw in enumerate(data)]
    _no_location_twice(rows)
    return rows


def _row(index: int, raw: Any) -> PublishedRow:
    if not isinstance(raw, dict):
        raise PublishedTableError(f"row {index}: not a JSON object")
    field = _Fields(index, raw)
    power = raw.get("Power_Result")
    return PublishedRow(
        index=index,
        location=field.text("Location"),
        version=field.text("version"),
        division=field.text("Category"),
        availability=field.text("Availability"),
        model=field.text("Model"),
        used_model=field.text("UsedModel"),
        scenario=field.text("Scenario"),
        result=field.number("Performance_Result"),
        units=field.text("Performance_Units"),
        accuracy=accuracy_values(field.text("Accuracy", empty=True)),
        accuracy_text=field.text("Accuracy", empty=True),
        inferred=field.flag("inferred"),
        has_power=field.flag("has_power"),
        weight_data_types=field.text("weight_data_types", empty=True),
        power_result=None if power is None else field.number("Power_Result"),
        power_units=None if power is None else field.text("Power_Units"),
    )


@dataclass(frozen=True)
class _Fields:
    """Typed reads of one row's fields; each refusal names the row and the field."""

    index: int
    raw: dict[str, Any]

    def _get(self, name: str) -> Any:
        if name not in self.raw:
            raise PublishedTableError(f"row {self.index}: no {name!r}")
        return self.raw[name]

    def text(self, name: str, *, empty: bool = False) -> str:
        value = self._get(name)
        if not isinstance(value, str) or len(value) > MAX_TEXT or not (empty or value.strip()):
            raise PublishedTableError(f"row {self.index}: {name!r} is not a text of 1 to {MAX_TEXT} characters")
        return value.strip()

    def number(self, name: str) -> Decimal:
        value = self._get(name)
        if not isinstance(value, Decimal) or not value.is_finite():
            raise PublishedTableError(f"row {self.index}: {name!r} = {value!r} is not a number")
        return value

    def flag(self, name: str) -> bool:
        value = self._get(name)
        if isinstance(value, bool):
            return value
        if isinstance(value, Decimal) and value in (0, 1):  # 'inferred' is written 0/1
            return bool(value)
        raise PublishedTableError(f"row {self.index}: {name!r} = {value!r} is neither true/false nor 0/1")


def _no_location_twice(rows: list[PublishedRow]) -> None:
    seen: dict[str, int] = {}
    for row in rows:
        key = location_key(row.location)
        if key in seen:
            raise PublishedTableError(f"rows {seen[key]} and {row.index}: the same Location {row.location!r}")
        seen[key] = row.index


def location_key(location: str) -> str:
    """A Location as compared: '/'-separated, the scenario folder (the last part) in lower case, as MLPerf's
    submission checker accepts scenario folders in any case ('Offline', 'offline')."""
    head, _, scenario = location.strip("/").rpartition("/")
    return f"{head}/{scenario.lower()}" if head else scenario.lower()


def accuracy_values(text: str) -> dict[str, Decimal]:
    """'ROUGE1: 44.4542  ROUGE2: 22.0419' -> {'ROUGE1': Decimal('44.4542'), ...}: the checker's names and the
    numbers as printed. Text between pairs is not a value (the checker writes none)."""
    out: dict[str, Decimal] = {}
    for name, number in _ACCURACY_PAIR.findall(text):
        try:
            out[name] = Decimal(number)
        except InvalidOperation:  # the pattern admits only numbers; kept as a guard
            continue
    return out


def half_unit(printed: Decimal) -> Decimal:
    """Half a unit of the last digit printed: what the printed number may differ from the value it rounds.
    A float printed as '102909.0' (Python prints '.0' on every whole float) carries no decimal digit, so
    its half unit is 0.5."""
    exponent = printed.as_tuple().exponent
    assert isinstance(exponent, int)  # finite: checked when read
    if exponent == -1 and printed == printed.to_integral_value():
        exponent = 0
    return Decimal(5).scaleb(exponent - 1)
