"""The files of an MLPerf result measured by MLCommons' endpoints client, read as its checker reads them.

Which folder is one (`is_endpoints_folder`: loader.py), the readers of performance/result_summary.json,
config.yaml and accuracy/accuracy_results.json (bounded: no NaN, no YAML alias, no nesting past the JSON reader's
depth), and `Record`, the checker's EndpointsParser: a LoadGen record name resolved in those files through the
round's ENDPOINTS_MAPPINGS. endpoints.py builds the document from them.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from .logs import TOO_DEEP
from .plan import SourceError

SUMMARY = Path("performance") / "result_summary.json"
ACCURACY = Path("accuracy") / "accuracy_results.json"
CONFIGS = ("config.yaml", "config.yml")  # the checker reads the first present (EndpointsParser._load_yaml)
# The LoadGen logs whose absence makes a folder an endpoints folder (loader.py: perf_log and acc_log both None).
LOADGEN_LOGS = (Path("performance") / "run_1" / "mlperf_log_detail.txt", Path("accuracy") / "mlperf_log_detail.txt")


def is_endpoints_folder(scenario_dir: Path) -> bool:
    """A scenario folder MLPerf reads as an endpoints result: no LoadGen log, and an endpoint's summary or
    configuration (a folder with neither is left to the LoadGen reader, which names the logs it lacks)."""
    if any((scenario_dir / log).exists() for log in LOADGEN_LOGS):
        return False
    return (scenario_dir / SUMMARY).is_file() or any((scenario_dir / name).is_file() for name in CONFIGS)


def config_file(scenario_dir: Path) -> Path:
    return next((scenario_dir / n for n in CONFIGS if (scenario_dir / n).is_file()), scenario_dir / CONFIGS[0])


# --- readers ---------------------------------------------------------------------------------------------------


def _json(text: str) -> dict[str, Any]:
    """A JSON object, floats as Decimal (keeping their digits); NaN and Infinity are not numbers MLPerf writes."""
    try:
        value = json.loads(text, parse_float=Decimal, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise SourceError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise SourceError(TOO_DEEP) from None
    except ValueError as exc:  # an integer longer than Python reads (4300 digits)
        raise SourceError(f"holds a number that cannot be read ({str(exc)[:80]})") from None
    if not isinstance(value, dict):
        raise SourceError("expected a JSON object")
    return value


def _no_constant(name: str) -> Any:
    raise SourceError(f"holds {name}, which is not a number")


SUMMARY_REQUIRED = ("n_samples_issued", "n_samples_completed", "duration_ns", "latency")


def read_summary(text: str) -> dict[str, Any]:
    """performance/result_summary.json: a JSON object with the run's counts, duration and latency distribution."""
    summary = _json(text)
    missing = [key for key in SUMMARY_REQUIRED if key not in summary]
    if missing:
        raise SourceError(f"has no {', '.join(missing)}: not an endpoints result summary (or truncated)")
    return summary


def read_accuracy(text: str) -> dict[str, Any]:
    """accuracy/accuracy_results.json: a JSON object whose accuracy_scores is a list."""
    results = _json(text)
    if not isinstance(results.get("accuracy_scores", []), list):
        raise SourceError("accuracy_scores is not a list")
    return results


class _NoAliases(yaml.SafeLoader):
    """YAML without anchors and aliases: an endpoint's configuration has none, and aliases can expand a small
    file into a huge document."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise SourceError("uses a YAML alias (*name), which an endpoints configuration does not")
        return super().compose_node(parent, index)


def read_config(text: str) -> dict[str, Any]:
    """config.yaml: a YAML mapping (the endpoint's run configuration)."""
    try:
        value = yaml.load(text, Loader=_NoAliases)  # noqa: S506 - a SafeLoader without aliases
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise SourceError(f"malformed YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise SourceError(
            "nested deeper than the YAML reader allows: not a configuration the endpoints client writes"
        ) from None
    if not isinstance(value, dict):
        raise SourceError("expected a YAML mapping (the endpoint's run configuration)")
    return value


# --- the checker's view of the files: LoadGen record names resolved in the endpoint's files ----------------------


def nested(data: Any, dotted: str) -> Any:
    """The value at a dotted path, as the checker's _get_nested reads it: at each level the longest key that
    matches wins (so '99.0' is one key); None when absent or an empty container."""
    parts, current, i = dotted.split("."), data, 0
    while i < len(parts):
        if not isinstance(current, dict):
            return None
        j = next((j for j in range(len(parts), i, -1) if ".".join(parts[i:j]) in current), None)
        if j is None:
            return None
        current, i = current[".".join(parts[i:j])], j
    return None if isinstance(current, dict | list) and not current else current


class Record:
    """Reads a LoadGen record from an endpoint's files the way the checker's EndpointsParser does: the endpoint
    field ENDPOINTS_MAPPINGS names for it, in result_summary.json (then its alternative path), then config.yaml."""

    def __init__(self, rules: dict[str, Any], summary: dict[str, Any], config: dict[str, Any]) -> None:
        self.rules, self.summary, self.config = rules, summary, config

    def field(self, loadgen_key: str) -> str | None:
        return next((k for k, v in self.rules["mappings"].items() if v == loadgen_key), None)

    def __call__(self, loadgen_key: str) -> Any:
        name = self.field(loadgen_key)
        if name is None:
            return None
        for path in (name, self.rules["json_alt_paths"].get(name)):
            found = nested(self.summary, path) if path else None
            if found is not None:
                return found
        for path in (self.rules["yaml_field_map"].get(name), name):
            found = nested(self.config, path) if path else None
            if found is not None:
                return found
        return None


def number(value: Any, what: str, where: str = "summary") -> float:
    """A finite number of the files, or SourceError naming it (a string, a bool or 1e999 is not one); `where` is
    the file to blame ('summary', 'config' or 'accuracy')."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise SourceError(f"{what} is {_shown(value)}, not a number", where=where)
    result = float(value)
    if not math.isfinite(result):
        raise SourceError(f"{what} is {_shown(value)}, not a finite number", where=where)
    return result


def _shown(value: Any) -> str:
    return "absent" if value is None else repr(value)[:60]
