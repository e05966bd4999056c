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
    "ttfot_ms": "time to first output token (reasoning excluded)",
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


# A run's headline is the value its document states for metrics.primary (Submission.headline_value), written
# with HEADLINE_STYLE wherever it is printed: the catalogue, the run page, the matrix, the history, a comparison and
# a report read "292.2" for one run, never 293.2 on one page and 293.25 on another. A page that shows another
# statistic of the run (the geometric mean of its repetitions, an interval's centre) writes it in the same style
# and names it with `statistic_words`.
HEADLINE_STYLE = Style.SIGNIFICANT


def headline_text(value: Any, unit: Any = None) -> str:
    """A headline (or an estimate set beside one) as every page and report prints it: '292.2 samples/s'."""
    text = number(value, HEADLINE_STYLE)
    return f"{text} {unit}" if unit and value is not None else text


def statistic_words(estimate: Mapping[str, Any]) -> str:
    """Which statistic an estimate (protocol.statistics.Estimate.as_dict) is, in a few words: 'as reported',
    'geometric mean of 3 repetitions', 'geometric mean of 2 runs' (the method says how, in full)."""
    n = estimate.get("independent_values") or 0
    source, unit = estimate.get("source"), estimate.get("value_unit") or "repetition"
    if source == "summary":
        return "as reported"
    method = str(estimate.get("method") or "")
    if method.startswith("geometric mean") and n:
        return f"geometric mean of {n} {unit}{'s' if n != 1 else ''}"
    return method.split(" (", 1)[0] or "as reported"


# A verdict in words, one text wherever it is printed: the comparison page, its sentences, the signed report's
# conclusion, its pairwise table and its cover. The codes are protocol.comparability's conclusion and pair verdicts,
# and protocol.statistics' pair outcomes (better, worse, indistinguishable, unknown).
OUTCOME_WORDS = {
    "distinguishable": "distinguishable from noise",
    "indistinguishable": "not distinguishable from noise",
    "not-enough-evidence": "not enough evidence",
    "inconclusive": "inconclusive",
    "single-configuration": "one configuration only",
    "refused": "not comparable",
    "better": "better, distinguishable from noise",
    "worse": "worse, distinguishable from noise",
    "unknown": "no interval, so not weighed against noise",
}


def outcome_words(code: Any) -> str:
    """'not-enough-evidence' -> 'not enough evidence': a conclusion's code as a reader reads it."""
    return OUTCOME_WORDS.get(str(code), str(code).replace("-", " "))


def axis_words(axis: Any) -> str:
    """An axis of comparison as readers read it: the contract's label ('system under test', 'equal quality')."""
    return comparability.axis_label(str(axis))


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


def caveat_rows(caveats: Sequence[Mapping[str, Any]], run_ids: Sequence[Any]) -> list[dict[str, Any]]:
    """A comparison's caveats in words, one row per message with every run it concerns named by its registry id
    ("Runs 3, 12: …"; "All runs: …" for a caveat of no one run), in first-seen order: the comparison page and the
    signed report say them alike. A caveat names its run by position in the comparison; `run_ids` maps each
    position to the run's id (a reader looks a run up by its id, never by where it stood in a list)."""
    rows: dict[tuple[str, str], list[Any]] = {}
    for c in caveats:
        run = c.get("run")
        rows.setdefault((str(c.get("code")), str(c.get("message"))), []).extend(
            [run_ids[run]] if isinstance(run, int) and 0 <= run < len(run_ids) else []
        )
    return [
        {"code": code, "message": message, "run_label": _runs_label(ids), "run_ids": list(dict.fromkeys(ids))}
        for (code, message), ids in rows.items()
    ]


def _runs_label(ids: Sequence[Any]) -> str:
    named = list(dict.fromkeys(ids))
    if not named:
        return "All runs"
    return f"Run{'s' if len(named) > 1 else ''} {', '.join(str(i) for i in named)}"
