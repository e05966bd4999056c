"""MLCommons' published results table of an Inference round, read as the referee of an import: one
`PublishedRow` per published result, its numbers kept with the digits the table prints (a table value is compared
to the precision it is printed with, never closer).

The table is MLCommons' final-report output (mlcommons/inference tools/submission), one row per result folder
(`Location`), with the published figure and unit, MLPerf Power's figure where measured, the accuracy values the
submission checker read ('ROUGE1: 44.4542  ROUGE2: 22.0419 ...'), whether the result is inferred from another
scenario's run, the weight precision, and how MLCommons cites the result (its `ID`, 'Unique ID (e.g. for
Audit)' and `Details` link, where the round's table has them). Rounds write it in one of the forms of
`TABLE_FORMS`:

* 'results list': `summary_results.json`, a JSON list of rows (v4.x to v6.0); `Location` is written
  'closed/<submitter>/results/<system>/<benchmark>/<Scenario>' (v4.x, v5.x) or
  './closed/.../<Scenario>/performance/run_1' (v6.0): both name the same result folder;
* 'index table': `summary.json` at the round root, index-oriented ({"0": {row}, "1": ...}: pandas'
  `to_json(orient="index")`) with other column names (`Organization`, `Division`, `SystemType`, `Result`,
  `Units`, `MlperfModel`; v6.1).

A table in neither form is refused by name before any row is read, never matched to nothing. MLPerf Training
results repositories ship no such table (training_results_v4.0 and v5.0 have none).

Plain Python (no Django). Every input is bounded (size, nesting, row count, text length, the magnitude of a
number); a row that is not what its form says is refused by row number and field (`PublishedTableError`),
never skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

from .tree import real_dir

MAX_TABLE_BYTES = 64 * 1024 * 1024  # v5.1's whole table, 1448 rows, is 2.2 MB; v6.1's summary.json 0.7 MB
MAX_ROWS = 100_000
MAX_TEXT = 2000  # characters of any one text field
MAX_DEPTH = 8  # nesting of JSON arrays and objects: a table is a list or object of rows of plain values
# The largest published figure is below 1e8 (tokens/s of a rack) and the smallest above 1e-3 (a video per
# second); a number beyond 10**MAX_EXPONENT either way is no figure of MLCommons' (and '1e999999999' would make
# Decimal arithmetic raise).
MAX_EXPONENT = 30

DIVISION_FOLDERS = ("closed", "open", "network")

# One 'NAME: value' pair of the Accuracy column: the checker writes its ACC_PATTERN names and the numbers it
# read, pairs separated by spaces (json.dumps of a dict with ',' '"' '{' '}' removed).
_ACCURACY_PAIR = re.compile(r"([A-Za-z_][\w.\-/]*):\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")

# The Accuracy column of an endpoints result in v6.1's summary.json: a number with no name.
_BARE_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d{1,3})?")
BARE_ACCURACY = ""

# What v6.0 writes after the scenario folder: the folder of the run the figure was read from.
_RUN_FOLDER = re.compile(r"/performance(?:/run_\d+)?$", re.IGNORECASE)


class PublishedTableError(ValueError):
    """The published table cannot be read as MLCommons' format: what is wrong and where (row number, field)."""


@dataclass(frozen=True)
class TableForm:
    """One way a round writes its table: the file name, the JSON shape of the rows ('list' or 'index') and the
    column each `PublishedRow` field is read from (None: the form has no such column)."""

    name: str
    file: str
    shape: str
    columns: dict[str, str | None]

    def describe(self) -> str:
        shape = "a JSON list of rows" if self.shape == "list" else 'an object of rows keyed "0", "1", ...'
        return f"{self.name} ({self.file}: {shape} with {self.columns['result']!r} and {self.columns['units']!r})"


_COMMON = {
    "location": "Location",
    "version": "version",
    "availability": "Availability",
    "scenario": "Scenario",
    "accuracy": "Accuracy",
    "inferred": "inferred",
    "has_power": "has_power",
    "weight_data_types": "weight_data_types",
    "power_result": "Power_Result",
    "power_units": "Power_Units",
}

TABLE_FORMS: tuple[TableForm, ...] = (
    TableForm(
        "results list",
        "summary_results.json",
        "list",
        {
            **_COMMON,
            "division": "Category",
            "model": "Model",
            "used_model": "UsedModel",
            "result": "Performance_Result",
            "units": "Performance_Units",
            "result_id": "ID",
            "unique_id": "Unique ID (e.g. for Audit)",
            "details": "Details",
            "suite": "Suite",
            "submitter": "Submitter",
            "system": "System",
        },
    ),
    TableForm(
        "index table",
        "summary.json",
        "index",
        {
            **_COMMON,
            "division": "Division",
            "model": "MlperfModel",
            "used_model": "Model",
            "result": "Result",
            "units": "Units",
            "result_id": None,  # v6.1's summary.json carries no result ID, audit ID or Details link
            "unique_id": None,
            "details": None,
            "suite": "SystemType",
            "submitter": "Organization",
            "system": "SystemName",
        },
    ),
)
TABLE_NAMES = tuple(form.file for form in TABLE_FORMS)
TABLE_NAME = " or ".join(TABLE_NAMES)  # for messages: what an Inference round's root may hold


@dataclass(frozen=True)
class Citation:
    """How MLCommons cites a published result (its results messaging guidelines: result ID, suite, version,
    division, benchmark, scenario and where to see it). Fields a round's table lacks are empty."""

    result_id: str  # '5.1-0001' (the table's ID); '' where the table has none (v6.1)
    unique_id: str  # 'datacenter/closed/AMD/8xMI300X_2xEPYC_9575F': the audit ID
    details: str  # the Details link to the system's results folder
    suite: str  # 'datacenter', 'edge'
    submitter: str
    system: str


@dataclass(frozen=True)
class PublishedRow:
    """One published result. Numbers are `Decimal`s as printed, so their printed precision is known."""

    index: int  # position in the table (0-based), for messages
    location: str  # the result folder, 'closed/AMD/results/<system>/<benchmark>/<Scenario>', from the round root
    version: str  # the round, 'v5.1'
    division: str  # the table's 'Category' ('Division' in v6.1)
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
    citation: Citation | None = None
    published_location: str = ""  # `Location` as the table writes it ('./closed/.../performance/run_1')


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
    holds a single folder (an unpacked archive), in that folder, two levels down at most. In each folder the
    names of `TABLE_FORMS` are tried in order."""
    root = Path(root).resolve()
    for folder, prefix in _round_roots(root):
        if (table := _table_in(folder)) is not None:
            return Found(table, prefix)
    folder, wrapper = root, ""
    for _ in range(2):
        inner = [p for p in folder.iterdir() if real_dir(p)]
        if len(inner) != 1:
            return None
        folder, wrapper = inner[0], f"{wrapper}{inner[0].name}/"
        if (table := _table_in(folder)) is not None:
            return Found(table, "", wrapper.rstrip("/"))
    return None


def _table_in(folder: Path) -> Path | None:
    return next((folder / name for name in TABLE_NAMES if _is_table(folder / name)), None)


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
    """Every row of the table, or PublishedTableError naming the first row and field that is not readable (or,
    for a table in no form of `TABLE_FORMS`, what it is and the forms known)."""
    path = Path(path)
    return parse_table(path.name, read_table_bytes(path))


def read_table_bytes(path: Path) -> bytes:
    """The table file's bytes, refused before reading when larger than MAX_TABLE_BYTES."""
    size = path.stat().st_size
    if size > MAX_TABLE_BYTES:
        raise PublishedTableError(f"{path.name}: {size} bytes, more than the {MAX_TABLE_BYTES} read")
    return path.read_bytes()


def parse_table(name: str, text: bytes) -> list[PublishedRow]:
    """The rows of a table's bytes (`name` for messages): read_table without the file."""
    _bounded_depth(name, text)
    try:
        data = json.loads(text.decode("utf-8"), parse_float=Decimal, parse_int=Decimal)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PublishedTableError(f"{name}: not JSON text ({exc})") from None
    form, raws = table_form(name, data)
    if len(raws) > MAX_ROWS:
        raise PublishedTableError(f"{name}: {len(raws)} rows, more than the {MAX_ROWS} read")
    rows = [_row(index, raw, form) for index, raw in enumerate(raws)]
    _no_location_twice(rows)
    return rows


def _bounded_depth(name: str, text: bytes) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH before parsing it (a parser recurses once per level). Brackets
    inside strings are skipped; the count is of the text as written."""
    depth, in_string, escaped = 0, False, False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > MAX_DEPTH:
                raise PublishedTableError(
                    f"{name}: JSON nested deeper than {MAX_DEPTH} levels: not a results table (rows of plain values)"
                )
        elif byte in (0x5D, 0x7D):
            depth -= 1


def table_form(name: str, data: Any) -> tuple[TableForm, list[Any]]:
    """The form of a parsed table and its rows in order, or PublishedTableError naming what the table is and
    the forms the importer reads. The form is told by the shape and by the columns of the first row."""
    if isinstance(data, list):
        shape, raws = "list", data
    elif isinstance(data, dict) and data and all(isinstance(k, str) and k.isdigit() for k in data):
        shape, raws = "index", [data[k] for k in sorted(data, key=int)]
    else:
        what = "an empty object" if data == {} else f"a JSON {_json_kind(data)}"
        if isinstance(data, dict):
            what += (
                f" with keys {', '.join(repr(k) for k in sorted(map(str, data))[:5])}{', ...' if len(data) > 5 else ''}"
            )
        raise PublishedTableError(f"{name}: {what}, not a results table: {_forms_known()}")
    own = next(form for form in TABLE_FORMS if form.shape == shape)
    first = raws[0] if raws and isinstance(raws[0], dict) else None
    if first is None or _columns_fit(own, first):
        return own, raws  # a row that is not an object, or lacks a column, is refused by row and field
    columns = ", ".join(repr(k) for k in sorted(first)[:8])
    raise PublishedTableError(
        f"{name}: a table form the importer does not know ({'a list' if shape == 'list' else 'an index'} of rows "
        f"with columns {columns}{', ...' if len(first) > 8 else ''}): {_forms_known()}"
    )


def _columns_fit(form: TableForm, row: dict[str, Any]) -> bool:
    """Whether a row is of `form`: it has the form's figure column, or its Location and no other form's figure
    column (then a missing column is that row's error, by name)."""
    if form.columns["result"] in row:
        return True
    others = {other.columns["result"] for other in TABLE_FORMS if other is not form}
    return form.columns["location"] in row and not others & set(row)


def _forms_known() -> str:
    return "the forms read are " + "; ".join(form.describe() for form in TABLE_FORMS)


def _json_kind(data: Any) -> str:
    kinds = {dict: "object", list: "list", str: "string", bool: "true/false", Decimal: "number"}
    return "null" if data is None else kinds.get(type(data), type(data).__name__)


def _row(index: int, raw: Any, form: TableForm) -> PublishedRow:
    if not isinstance(raw, dict):
        raise PublishedTableError(f"row {index}: not a JSON object")
    field = _Fields(index, raw, form.columns)
    has_power_result = raw.get(form.columns["power_result"] or "") is not None
    published_location = field.text("location")
    return PublishedRow(
        index=index,
        location=result_folder(published_location),
        published_location=published_location,
        version=field.text("version"),
        division=field.text("division"),
        availability=field.text("availability"),
        model=field.text("model"),
        used_model=field.text("used_model"),
        scenario=field.text("scenario"),
        result=field.number("result"),
        units=field.text("units"),
        accuracy=accuracy_values(field.text("accuracy", empty=True)),
        accuracy_text=field.text("accuracy", empty=True),
        inferred=field.flag("inferred"),
        has_power=field.flag("has_power"),
        weight_data_types=field.text("weight_data_types", empty=True),
        power_result=field.number("power_result") if has_power_result else None,
        power_units=field.text("power_units") if has_power_result else None,
        citation=Citation(
            result_id=field.optional_text("result_id"),
            unique_id=field.optional_text("unique_id"),
            details=field.optional_text("details"),
            suite=field.optional_text("suite"),
            submitter=field.optional_text("submitter"),
            system=field.optional_text("system"),
        ),
    )


def result_folder(location: str) -> str:
    """The result folder a `Location` names, relative to the round root: './closed/A/results/s/b/Offline/
    performance/run_1' (v6.0, v6.1) and 'closed/A/results/s/b/Offline' (v4.x, v5.x) both name
    'closed/A/results/s/b/Offline'."""
    folder = location.strip().replace("\\", "/")
    while folder.startswith("./"):
        folder = folder[2:]
    return _RUN_FOLDER.sub("", folder.strip("/"))


@dataclass(frozen=True)
class _Fields:
    """Typed reads of one row's fields, by the `PublishedRow` field name; each refusal names the row and the
    table's column."""

    index: int
    raw: dict[str, Any]
    columns: dict[str, str | None]

    def _get(self, name: str) -> tuple[str, Any]:
        column = self.columns[name]
        if column is None or column not in self.raw:
            raise PublishedTableError(f"row {self.index}: no {column or name!r}")
        return column, self.raw[column]

    def text(self, name: str, *, empty: bool = False) -> str:
        column, value = self._get(name)
        if value is None and empty:  # v6.1 writes a missing text as null
            return ""
        if not isinstance(value, str) or len(value) > MAX_TEXT or not (empty or value.strip()):
            raise PublishedTableError(f"row {self.index}: {column!r} is not a text of 1 to {MAX_TEXT} characters")
        return value.strip()

    def optional_text(self, name: str) -> str:
        """A citation field: '' where the form or the row has none; a value that is there must be a text."""
        column = self.columns[name]
        if column is None or self.raw.get(column) is None:
            return ""
        return self.text(name, empty=True)

    def number(self, name: str) -> Decimal:
        column, value = self._get(name)
        if not isinstance(value, Decimal) or not value.is_finite():
            raise PublishedTableError(f"row {self.index}: {column!r} = {_shown(value)} is not a number")
        if value and abs(value.adjusted()) > MAX_EXPONENT:
            raise PublishedTableError(
                f"row {self.index}: {column!r} = {_shown(value)} is beyond 1e{MAX_EXPONENT} either way: no "
                "published figure"
            )
        return value

    def flag(self, name: str) -> bool:
        column, value = self._get(name)
        if isinstance(value, bool):
            return value
        if isinstance(value, Decimal) and value in (0, 1):  # 'inferred' is written 0/1
            return bool(value)
        raise PublishedTableError(f"row {self.index}: {column!r} = {_shown(value)} is neither true/false nor 0/1")


def _shown(value: Any) -> str:
    """A value for a message, cut short (a hostile table may hold a text of megabytes or a 400-digit number)."""
    text = repr(value) if not isinstance(value, Decimal) else str(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


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
    numbers as printed. Text between pairs is not a value (the checker writes none). A bare number (v6.1's rows of
    endpoints results: '81.35824977210574') is the result's one accuracy figure, under the name BARE_ACCURACY."""
    if _BARE_NUMBER.fullmatch(text.strip()):
        return {BARE_ACCURACY: Decimal(text.strip())}
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
