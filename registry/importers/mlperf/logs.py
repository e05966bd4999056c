"""Readers of MLPerf's files: each takes a file's text and returns what the mapping needs, or raises SourceError.

LoadGen's detail log (:::MLLOG records, authoritative) and summary (cross-checked against it to its printed
precision), accuracy.txt, TEST06's verify_accuracy.txt, user.conf, JSON descriptions, and Training's
:::MLLOG run logs. Floats are read as Decimal so values keep their printed digits.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from .plan import SourceError
from .rules import TEST06_CHECKS


def read_json_object(text: str) -> dict[str, Any]:
    """A JSON object (system description, measurements.json)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise SourceError(TOO_DEEP) from None
    if not isinstance(value, dict):
        raise SourceError("expected a JSON object")
    return value


TOO_DEEP = "nested deeper than the JSON reader allows (about a thousand levels): not a description MLPerf writes"


# One decoder for every :::MLLOG line (floats as Decimal, keeping their printed digits).
MLLOG_DECODER = json.JSONDecoder(parse_float=Decimal)


DETAIL_REQUIRED = (
    "loadgen_version",
    "test_datetime",
    "effective_scenario",
    "effective_test_mode",
    "result_validity",
    "result_query_count",
)


def read_detail(text: str) -> dict[str, Any]:
    """The :::MLLOG records of mlperf_log_detail.txt as {key: first value}; floats are kept as Decimal."""
    entries: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = _detail_record(number, line)
        entries.setdefault(record["key"], record["value"])
    missing = [key for key in DETAIL_REQUIRED if key not in entries]
    if missing:
        raise SourceError(f"no {', '.join(missing)} record: truncated, or not a LoadGen performance log")
    if entries["effective_test_mode"] != "PerformanceOnly":
        raise SourceError(f"test mode is {entries['effective_test_mode']!r}, not PerformanceOnly")
    return entries


def _detail_record(number: int, line: str) -> dict[str, Any]:
    if not line.startswith(":::MLLOG "):
        raise SourceError(f"line {number} is not a :::MLLOG record")
    try:
        record = MLLOG_DECODER.decode(line[len(":::MLLOG ") :])
    except json.JSONDecodeError as exc:
        raise SourceError(f"line {number}: malformed :::MLLOG record ({exc.msg})") from None
    except RecursionError:
        raise SourceError(f"line {number}: {TOO_DEEP}") from None
    if not isinstance(record, dict) or not isinstance(record.get("key"), str) or "value" not in record:
        raise SourceError(f"line {number}: a :::MLLOG record needs a key and a value")
    return record


_SUMMARY_LINE = re.compile(r"^(?P<label>[^:]+?)\s*:\s*(?P<value>.*)$")


_SUMMARY_END = re.compile(r"^(No|\d+) errors? encountered during test\.?$")


def read_summary(text: str) -> dict[str, str]:
    """The 'label : value' lines of mlperf_log_summary.txt. It must end with LoadGen's errors line."""
    fields: dict[str, str] = {}
    pending: str | None = None
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or line.startswith("="):
            continue
        if pending and line.startswith("*"):  # "TTFT Early Stopping Result:" continues on the next line
            fields[pending], pending = line, None
            continue
        match = _SUMMARY_LINE.match(line)
        if not match:
            continue
        label, value = match["label"].strip(), match["value"].strip()
        if not value:
            pending = label
        elif fields.setdefault(label, value) != value and _detail_key(label) is not None:
            # LLM summaries repeat the early-stopping lines for TTFT and TPOT; only results must be unique
            raise SourceError(f"'{label}' appears twice with different values")
    _check_summary_complete(text, fields)
    return fields


def _check_summary_complete(text: str, fields: dict[str, str]) -> None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not _SUMMARY_END.match(lines[-1]):
        raise SourceError("does not end with LoadGen's 'errors encountered during test' line (truncated?)")
    missing = [label for label in ("Scenario", "Mode", "Result is") if label not in fields]
    if missing:
        raise SourceError(f"has no {', '.join(missing)} line")


SUMMARY_KEYS = {
    "Scenario": "effective_scenario",
    "Mode": "effective_test_mode",
    "Result is": "result_validity",
    "Completed samples per second": "result_completed_samples_per_sec",
    "Completed tokens per second": "result_completed_tokens_per_second",
    "Scheduled samples per second": "result_scheduled_samples_per_sec",
    "Samples per second": "result_samples_per_second",
    "Tokens per second": "result_tokens_per_second",
    "Min latency (ns)": "result_min_latency_ns",
    "Max latency (ns)": "result_max_latency_ns",
    "Mean latency (ns)": "result_mean_latency_ns",
    "Min First Token latency (ns)": "result_first_token_min_latency_ns",
    "Max First Token latency (ns)": "result_first_token_max_latency_ns",
    "Mean First Token latency (ns)": "result_first_token_mean_latency_ns",
    "Min Time to Output Token (ns)": "result_time_to_output_token_min",
    "Max Time to Output Token (ns)": "result_time_to_output_token_max",
    "Mean Time to Output Token (ns)": "result_time_to_output_token_mean",
}


SUMMARY_PERCENTILES = (
    (re.compile(r"^(\d+\.\d+) percentile latency \(ns\)$"), "result_{}_percentile_latency_ns"),
    (re.compile(r"^(\d+\.\d+) percentile first token latency \(ns\)$"), "result_first_token_{}_percentile_latency_ns"),
    (
        re.compile(r"^(\d+\.\d+) percentile time to output token \(ns\)$"),
        "result_time_per_output_token_{}_percentile_ns",
    ),
)


def _detail_key(label: str) -> str | None:
    if label in SUMMARY_KEYS:
        return SUMMARY_KEYS[label]
    for pattern, template in SUMMARY_PERCENTILES:
        match = pattern.match(label)
        if match:
            return template.format(match[1])
    return None


def cross_check(summary: dict[str, str], detail: dict[str, Any], loadgen_scenario: str) -> None:
    """Every result the summary prints must equal the detail log's record to the summary's precision."""
    if detail["effective_scenario"] != loadgen_scenario:
        raise SourceError(
            f"effective_scenario is {detail['effective_scenario']!r}; this directory needs {loadgen_scenario!r}",
            where="detail",
        )
    for label, text in summary.items():
        key = _detail_key(label)
        if key is None:
            continue
        if loadgen_scenario == "MultiStream":  # the summary prints MultiStream latencies per query
            key = _per_query_key(key, detail)
        if key not in detail:
            raise SourceError(f"has no {key} record, which the summary prints as '{label}'", where="detail")
        if not _agrees(text, detail[key]):
            raise SourceError(
                f"'{label}: {text}' disagrees with {key} = {detail[key]} in the detail log", where="summary"
            )


def _per_query_key(key: str, detail: dict[str, Any]) -> str:
    per_query = {
        "result_min_latency_ns": "result_min_query_latency_ns",
        "result_max_latency_ns": "result_max_query_latency_ns",
        "result_mean_latency_ns": "result_mean_query_latency_ns",
    }.get(key, key.replace("_percentile_latency_ns", "_percentile_per_query_latency_ns"))
    return per_query if per_query in detail else key


def _agrees(text: str, value: Any) -> bool:
    if isinstance(value, str | bool):
        return text == str(value)
    try:
        shown = Decimal(text)
    except ArithmeticError:
        return False
    logged = value if isinstance(value, Decimal) else Decimal(value)
    # The detail log prints doubles to 6 significant digits and drops a zero fraction: 632229.06 is logged
    # as 632229, so a whole number carries half a unit of rounding like any other printed value.
    tolerance = _half_ulp(shown) + _half_ulp(logged)
    return abs(shown - logged) <= tolerance


def _half_ulp(value: Decimal) -> Decimal:
    """Half a unit in the last printed digit: the rounding a printed value may carry."""
    return Decimal(5).scaleb(int(value.as_tuple().exponent) - 1)


# numpy scalar reprs some accuracy scripts print inside their dicts: np.int64(27723428), np.float64(44.4),
# numpy.float32(0.5) -> the number alone (MLCommons' patterns expect a bare number).
_NUMPY_REPR = re.compile(
    r"\b(?:np|numpy)\.(?:float|int|uint)(?:8|16|32|64|128)?\(\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*\)"
)


# A verdict printed after the value ('mean = 0.90862, threshold = 0.90679 (Passed)'): not part of a value.
_VERDICT_SUFFIX = re.compile(r"\s*\((?:passed|failed|pass|fail)\)\s*$", re.IGNORECASE)


_HASH_LINE = re.compile(r"^hash=([\w\d]+)$")


def read_accuracy(text: str) -> dict[str, Any]:
    """accuracy.txt as lines ready for MLPerf's accuracy patterns: {'lines', 'hash', 'normalised'}.

    The values are read later with the round's own ACC_PATTERN per metric (`accuracy.judge`), on these lines:
    each is the file's line with numpy scalar reprs replaced by the number they hold and a trailing
    '(Passed)' / '(Failed)' verdict removed, nothing else; 'normalised' counts the lines so changed. 'hash' is
    the value of the checker's `hash=` line (None when there is none). Never raises on content.
    """
    lines, changed, hash_value = [], 0, None
    for raw in text.splitlines():
        line = _VERDICT_SUFFIX.sub("", _NUMPY_REPR.sub(r"\1", raw))
        changed += line != raw
        lines.append(line)
        match = _HASH_LINE.match(raw.strip())
        if match:
            hash_value = match[1]
    return {"lines": lines, "hash": hash_value, "normalised": changed}


def read_test06(text: str) -> dict[str, str]:
    """TEST06/verify_accuracy.txt: {check label: 'True' | 'False' | 'Skipped'}."""
    found = {}
    for line in text.splitlines():
        label, sep, value = line.partition(":")
        if sep and label.strip() in TEST06_CHECKS:
            found[label.strip()] = value.strip()
    if "TEST06 verification complete" not in text:
        raise SourceError("has no 'TEST06 verification complete' line (truncated?)")
    if not found:
        raise SourceError("has no TEST06 check lines")
    return found


def read_user_conf(text: str) -> dict[str, Any]:
    """user.conf: {'entries': {key: value} of its 'model.scenario.key = value' lines ('#' starts a comment),
    'unread': [(line number, text)] of the other lines}. The file is optional and LoadGen's own settings are in
    the detail log, so a line that is not a setting (a 'TODO' left by a submitter) is reported, never fatal."""
    entries: dict[str, str] = {}
    unread: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        key, sep, value = content.partition("=")
        if not sep or not key.strip():
            unread.append((number, content[:80]))
            continue
        entries[key.strip()] = value.strip()
    return {"entries": entries, "unread": unread}


def read_mllog(text: str) -> list[dict[str, Any]]:
    """The :::MLLOG records of a training log, in order (other lines, such as framework output, are not
    records and are passed over). Floats are Decimal so values keep their printed digits."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        start = line.find(":::MLLOG ")
        if start < 0:
            continue
        if "\ufffd" in line:
            raise SourceError(f"line {number}: a :::MLLOG record with bytes that are not UTF-8")
        try:
            record = MLLOG_DECODER.decode(line[start + len(":::MLLOG ") :])
        except json.JSONDecodeError as exc:
            raise SourceError(f"line {number}: malformed :::MLLOG record ({exc.msg})") from None
        except RecursionError:
            raise SourceError(f"line {number}: {TOO_DEEP}") from None
        if not isinstance(record, dict) or not isinstance(record.get("key"), str):
            raise SourceError(f"line {number}: a :::MLLOG record needs a key")
        records.append(record)
    if not records:
        raise SourceError("no :::MLLOG records")
    return records
