"""CSV text that a spreadsheet opens without running any of it: what every CSV export of the registry writes.

Both doors export CSV (the pages' catalogue, matrix and comparison files, the API's decision file), so the writer
lives below both.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# A cell a spreadsheet would run as a formula (OWASP "CSV Injection"): text starting with one of these. Numbers
# stay numbers: only text is ever prefixed, and text that is a plain decimal number ("-1.5") is left as it is.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_safe(value: Any) -> Any:
    """`value` for a CSV cell: text a spreadsheet would evaluate gets a leading apostrophe, shown as typed."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_text(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], *, preamble: str = "") -> str:
    """CSV of `rows` under a header of `columns` (other keys ignored, None as empty), every cell csv_safe."""
    buffer = io.StringIO()
    buffer.write(preamble)
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else csv_safe(v)) for k, v in row.items()})
    return buffer.getvalue()
