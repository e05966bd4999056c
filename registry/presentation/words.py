"""Words for readers: labels of metrics, document sections, fields and units, and numbers as changes or ranges.

Pure: the pages, the reports and the charts read the same labels from here; numbers themselves are written by
protocol.numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol import comparability
from protocol.numbers import Style, number

# A metric family in a chart's or a report's words (the comparison's sentences use protocol.comparability's).
METRIC_LABELS = {
    "latency_ms": "request latency",
    "ttft_ms": "time to first token",
    "tpot_ms": "time per output token",
    "step_time_ms": "step time",
    "throughput": "throughput",
    "goodput": "goodput",
    "request_rate": "request rate",
    "time_to_quality": "time to quality",
}
# The run page's sections of a document, in page order, with their headings.
SECTION_TITLES = (
    ("workload", "Workload"),
    ("scenario", "Scenario"),
    ("precision", "Precision"),
    ("system", "System"),
    ("software", "Software"),
    ("conditions", "Conditions"),
    ("provenance", "Provenance"),
)
FIELD_HEADINGS = {"p999": "p99.9"}  # a distribution's field as a column heading, where it differs from its name
# Units of metric fields named by their suffix (the protocol's naming: average_power_w, peak_bytes, joules, ...).
UNIT_SUFFIXES = (
    ("_ms", "ms"),
    ("_seconds", "s"),
    ("_s", "s"),
    ("_wh", "Wh"),
    ("_w", "W"),
    ("_j", "J"),
    ("_bytes", "bytes"),
    ("_pct", "%"),
    ("_percent", "%"),
    ("_mhz", "MHz"),
    ("_c", "°C"),
)
UNIT_NAMES = {"joules": "J", "watts": "W", "seconds": "s", "bytes": "bytes"}


def metric_label(metric: Any, document: Mapping[str, Any] | None = None) -> str:
    """ "latency_ms.p99" -> "p99 request latency"; with the run's `document`, an offline run's latency is its
    batches' ("p99 batch latency"): an offline run times batches, not requests."""
    family, _, part = str(metric or "value").partition(".")
    words = METRIC_LABELS.get(family, family.replace("_", " "))
    words = f"{part} {words}" if part else words
    if document is not None and family == "latency_ms" and (document.get("scenario") or {}).get("kind") == "offline":
        return words.replace("request latency", "batch latency")
    return words


def field_label(path: Sequence[str]) -> str:
    """A field's path within its section exactly as the document spells it: `torch.num_threads`,
    `accelerators[0].model` (keys are never reworded: an underscore stays an underscore)."""
    out = ""
    for part in path:
        out += f"[{part}]" if part.isascii() and part.isdigit() else (f".{part}" if out else part)
    return out


def unit_of(name: str) -> str:
    """The unit a metric field's name states ("average_power_w" -> "W"); "" where it states none."""
    if name in UNIT_NAMES:
        return UNIT_NAMES[name]
    return next((unit for suffix, unit in UNIT_SUFFIXES if name.endswith(suffix)), "")


def measured(value: Any) -> str:
    """A measured number with a few significant digits (counts exact); anything else as the document has it."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        return number(value, Style.SIGNIFICANT)
    return comparability.display(value)


def interval(low: float | None, high: float | None, style: Style) -> str:
    """ "low–high" with both ends in `style`; "" unless both ends are there."""
    return "" if low is None or high is None else f"{number(low, style)}–{number(high, style)}"


def percent_change(ratio: float) -> str:
    """1.21 -> "+21%"; 0.85 -> "−15%"; 1.004 -> "+0.4%" (two significant digits below 10%)."""
    change = (ratio - 1.0) * 100.0
    shown = f"{abs(change):.0f}" if abs(change) >= 10 else number(round(abs(change), 1), Style.SIGNIFICANT, digits=2)
    if shown in ("0", "0.0"):
        return "±0%"
    return ("+" if change > 0 else "−") + shown + "%"
