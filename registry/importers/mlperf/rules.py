"""MLPerf's own rules: per round, loaded from the rule tables in `rounds/` (`round_rules`), and the tables
that do not change between rounds (scenarios, number formats, the closed vocabularies of system descriptions,
Training's rules are data per round: training_rules.py).

Per-round rules are data: `rounds/inference_<round>.json` holds MLCommons' submission checker constants for
that round (MODEL_CONFIG, RESULT_FIELD_NEW, RESULT_FIELD_BENCHMARK_OVERWRITE, ACC_PATTERN, ...), extracted by
`scripts/mlperf-rules` from a named commit of github.com/mlcommons/inference. `RoundRules` answers the
importer's questions from them (which MLPerf model a benchmark folder runs, which LoadGen record is the
published figure and in which unit, which accuracy metrics are judged, how they are read and their bounds),
and raises `RuleMissing` naming the rule when the round's tables do not say: nothing is defaulted.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol import rules as protocol_rules

from .plan import SourceError

# MLPerf scenario directory -> protocol scenario kind. LoadGen runs Interactive as Server with tighter SLOs.
SCENARIOS = {
    "SingleStream": "single-stream",
    "MultiStream": "multi-stream",
    "Server": "server",
    "Offline": "offline",
    "Interactive": "interactive",
}


# MLPerf's submission checker accepts scenario folders in any case ("offline", "singlestream").
SCENARIO_FOLDERS = {name.lower(): name for name in SCENARIOS}


LOADGEN_SCENARIO = {"Interactive": "Server"}


# Arrival process of each scenario as MLPerf's inference rules define it (not a measured value).
ARRIVAL = {
    "SingleStream": "closed-loop",
    "MultiStream": "closed-loop",
    "Server": "poisson",
    "Interactive": "poisson",
    "Offline": None,
}


PERCENTILES = {"50.00": "p50", "90.00": "p90", "95.00": "p95", "97.00": "p97", "99.00": "p99", "99.90": "p999"}


# Precision words MLPerf submitters write (measurements.json's weight_data_types and input_data_types, and the
# same column of MLCommons' results table) -> protocol formats: the one table the importer and the referee both
# read (`weights_format`). Matched without regard to case ("INT8", "FP32"). Plain "fp8" (and "float8") stays
# "fp8": the files do not say which variant (e4m3 or e5m2, OCP or FNUZ encoding), and guessing one would change
# what is compared. A word for which no single format is meant stays out ("UINT4": unsigned 4-bit storage with a
# zero point is not the signed int4 of the list; "UNSET"; per-component lists such as "unet:fp8,vae:fp32").
FORMATS = {
    "fp64": "fp64",
    "float64": "fp64",
    "fp32": "fp32",
    "float32": "fp32",
    "tf32": "tf32",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "fp8": "fp8",
    "float8": "fp8",
    "float8_e4m3fn": "fp8-e4m3",
    "float8_e5m2": "fp8-e5m2",
    "fp8-e4m3": "fp8-e4m3",
    "fp8_e4m3": "fp8-e4m3",
    "e4m3": "fp8-e4m3",
    "fp8-e5m2": "fp8-e5m2",
    "fp8_e5m2": "fp8-e5m2",
    "e5m2": "fp8-e5m2",
    "int32": "int32",
    "int8": "int8",
    "f8_e4m3": "fp8-e4m3",
    "int4": "int4",
    "mxfp8": "mxfp8",
    # 4- and 6-bit floats: "fp4" and "fp6" say the width, not the variant (NVFP4, MXFP4 or plain E2M1 with
    # some scaling; E2M3 or E3M2), so they stay the unstated-variant words of the protocol.
    "fp4": "fp4",
    "float4": "fp4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "fp4-e2m1": "fp4-e2m1",
    "fp4_e2m1": "fp4-e2m1",
    "e2m1": "fp4-e2m1",
    "fp6": "fp6",
    "fp6-e2m3": "fp6-e2m3",
    "fp6_e2m3": "fp6-e2m3",
    "fp6-e3m2": "fp6-e3m2",
    "fp6_e3m2": "fp6-e3m2",
    "mxfp6-e2m3": "mxfp6-e2m3",
    "mxfp6_e2m3": "mxfp6-e2m3",
    "mxfp6-e3m2": "mxfp6-e3m2",
    "mxfp6_e3m2": "mxfp6-e3m2",
}


# Mixed weight/activation schemes -> (weights, activations). The 16 of "a16" is fp16 or bf16, unstated: None.
MIXED = {
    "w4a8": ("int4", "int8"),
    "w8a8": ("int8", "int8"),
    "w4a16": ("int4", None),
    "w8a16": ("int8", None),
}


QUANTIZED = protocol_rules.QUANTIZED_FORMATS  # one list: the protocol's


def weights_format(word: str) -> str | None:
    """The weights format a weight_data_types word states (FORMATS, or a mixed scheme's weights: 'w4a8' -> int4);
    None when it states no single format of the protocol's (the document then says 'unspecified')."""
    key = word.strip().lower()
    return FORMATS.get(key) or (MIXED[key][0] if key in MIXED else None)


# Formats whose variant the source does not state, with what is left unsaid (a note beside the precision).
UNSTATED_VARIANT = {
    "fp8": "the fp8 variant (e4m3 or e5m2, OCP or FNUZ encoding) is not stated",
    "fp4": "the fp4 variant (NVFP4, MXFP4 or another E2M1 scaling) is not stated",
    "fp6": "the fp6 variant (E2M3 or E3M2, scaling) is not stated",
}


# The protocol minor MLPerf documents are written in: the one whose fields they use (fp4/fp6, derivation, power
# window, scaled time, rules_source). Pinned, not "the newest": a later minor must not change their digests.
PROTOCOL = f"{protocol_rules.PROTOCOL_NAME}/1.1"


UNSPECIFIED = "unspecified"  # schema sentinel: the source does not state one format of the closed list


# LoadGen's early-stopping estimates: the percentile each one bounds (SingleStream p90, MultiStream p99).
ESTIMATE_PERCENTILE = {"early_stopping_latency_ss": "p90", "early_stopping_latency_ms": "p99"}


VALIDITY_KEYS = {
    "result_perf_constraints_met": "performance_constraints_satisfied",
    "result_min_duration_met": "min_duration_satisfied",
    "result_min_queries_met": "min_queries_satisfied",
    "early_stopping_met": "early_stopping_satisfied",
}


TEST06_CHECKS = {
    "First token check pass": "test06_first_token",
    "EOS check pass": "test06_eos",
    "Sample length check pass": "test06_sample_length",
}


@dataclass(frozen=True)
class AuditFile:
    """One verdict file of an audit (compliance) test, as MLPerf's submission checker reads it.

    `reading`: "test06" (TEST06's check lines, TEST06_CHECKS), "contains" ("TEST PASS" anywhere in the file:
    check_compliance_perf_dir, TEST07, TEST09) or "line" (a line that is "TEST PASS" once stripped: TEST08).
    `deterministic`: TEST01's accuracy file, whose "TEST FAIL" the checker does not take as a fail: it then compares
    TEST01/accuracy/baseline_accuracy.txt with compliance_accuracy.txt (non-deterministic mode).
    """

    name: str
    check: str  # the conditions.validity.checks key of its verdict ("" for TEST06: one key per check line)
    reading: str
    deterministic: bool = False


# The verdict files of each audit test (MLCommons' checker: check_compliance_perf_dir / check_compliance_acc_dir in
# tools/submission/submission_checker.py up to v5.1; ComplianceCheck.dir_exists_check, accuracy_check and
# compliance_performance_check in submission_checker/checks/compliance_check.py from v6.0). They are the same in
# every round; which tests a result must have is per round (RoundRules.audit_tests).
AUDIT_FILES = {
    "TEST01": (
        AuditFile("verify_accuracy.txt", "audit_test01_accuracy", "contains", deterministic=True),
        AuditFile("verify_performance.txt", "audit_test01_performance", "contains"),
    ),
    "TEST04": (AuditFile("verify_performance.txt", "audit_test04_performance", "contains"),),
    "TEST05": (AuditFile("verify_performance.txt", "audit_test05_performance", "contains"),),
    "TEST06": (AuditFile("verify_accuracy.txt", "", "test06"),),
    "TEST07": (AuditFile("verify_accuracy.txt", "audit_test07_accuracy", "contains"),),
    "TEST08": (AuditFile("verify_accuracy.txt", "audit_test08_accuracy", "line"),),
    "TEST09": (AuditFile("verify_output_len.txt", "audit_test09_output_length", "contains"),),
}


@dataclass(frozen=True)
class AuditRule:
    """Which audit tests a result of one MLPerf model must have, by the round's rules, and where that is written."""

    tests: tuple[str, ...]
    required: bool  # False: the result's division is not one the checker runs the tests for (open)
    source: str


# MLPerf's closed vocabularies (submission checker VALID_DIVISIONS, VALID_AVAILABILITIES, system_type).
# "rdi" (research, development or internal) is MLPerf's name for the research category.
DIVISIONS = {"closed": "closed", "open": "open", "network": "network"}


AVAILABILITIES = {
    "available": "available",
    "preview": "preview",
    "rdi": "research",
    "research": "research",
    # MLPerf Training's words for available systems (result_summarizer config.yaml)
    "onprem": "available",
    "cloud": "available",
    "available on-premise": "available",
    "available cloud": "available",
}


CATEGORIES = {"datacenter": "datacenter", "edge": "edge"}


# ---------------------------------------------------------------------------------------------------------
# Per-round rules (MLCommons' submission checker, as data)

ROUNDS_DIR = Path(__file__).resolve().parent / "rounds"


class RuleMissing(SourceError):
    """The round's rule tables do not cover what a result needs (a benchmark, scenario, metric or round)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, where="rules")


@dataclass(frozen=True)
class Headline:
    """The figure MLCommons publishes for a result: a LoadGen record, what it holds, and where the rule is."""

    field: str  # LoadGen detail-log key, e.g. "result_tokens_per_second"
    kind: str  # "rate" or "latency"
    unit: str  # of the record: "tokens/s", "samples/s" or "ns"
    rule: str  # e.g. "RESULT_FIELD_BENCHMARK_OVERWRITE[v6.0][gpt-oss-120b][Offline]"
    published_unit: str | None  # the unit MLCommons prints (SPECIAL_UNIT_DICT / UNIT_DICT), where the tables have it


@dataclass(frozen=True)
class Metric:
    """One accuracy metric the checker judges: how accuracy.txt states it and its inclusive bounds.

    `required`: the metric has a lower bound (accuracy-target), so the checker fails a run whose accuracy.txt
    lacks it; a metric with only an upper bound (accuracy-upper-limit) is judged only where present.
    """

    name: str  # the checker's metric name, e.g. "ROUGE1", "TOKENS_PER_SAMPLE", "acc"
    pattern: str  # ACC_PATTERN[name]: re.match against each line, group 1 is the value
    min: float | None
    max: float | None
    reference: float | None  # the reference the lower bound is a ratio of, where the checker writes one
    ratio: float | None

    @property
    def required(self) -> bool:
        return self.min is not None


def known_rounds() -> list[str]:
    """The Inference rounds with rule tables, oldest first."""
    names = [p.stem.removeprefix("inference_") for p in ROUNDS_DIR.glob("inference_v*.json")]
    return sorted(names, key=lambda r: tuple(int(n) for n in r[1:].split(".")))


@functools.cache
def round_rules(round_name: str) -> RoundRules:
    """The rules of an Inference round ('v6.0'); RuleMissing, listing the known rounds, when there are none."""
    path = ROUNDS_DIR / f"inference_{round_name}.json"
    if not re.fullmatch(r"v\d+\.\d+", round_name) or not path.is_file():
        raise RuleMissing(
            f"no MLPerf Inference rules for round {round_name!r}: rules are known for {', '.join(known_rounds())} "
            "(registry/importers/mlperf/rounds/, extracted by scripts/mlperf-rules from MLCommons' checker)"
        )
    return RoundRules(round_name, json.loads(path.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class RoundRules:
    """One round's submission-checker rules, read from its rule table; every lookup names its source."""

    round: str
    data: dict[str, Any]

    @property
    def source(self) -> str:
        src = self.data["source"]
        return f"{src['repo']}@{src['commit']}:{src['path']}"

    def rules_source(self) -> str:
        """provenance.origin.rules_source: where the round's rules came from."""
        return f"{self.source} MODEL_CONFIG[{self.round}]"

    def missing(self, what: str) -> RuleMissing:
        return RuleMissing(f"round {self.round} rules have no {what} (source {self.source})")

    @property
    def config(self) -> dict[str, Any]:
        return self.data["model_config"]  # type: ignore[no-any-return]

    def model(self, benchmark: str, submitter_mapping: dict[str, str] | None = None) -> str:
        """The MLPerf model a benchmark folder runs, as the checker resolves it: its own name when the round
        lists it, else the round's model_mapping, else the submitter's model_mapping.json (open division)."""
        models = self.config["models"]
        for name in (benchmark, self.config.get("model_mapping", {}).get(benchmark)):
            if name in models:
                return str(name)
        mapped = (submitter_mapping or {}).get(benchmark)
        if mapped in models:
            return str(mapped)
        guessed = self._guessed(benchmark)
        if mapped is None and guessed in models:
            return str(guessed)
        via = f"; model_mapping.json maps it to {mapped!r}, not a model of the round" if mapped else ""
        raise self.missing(f"benchmark {benchmark!r} (not in MODEL_CONFIG models or model_mapping{via})")

    def _guessed(self, benchmark: str) -> str | None:
        """The checker's last resort (Config.get_mlperf_model, "try to guess, keep this for backwards
        compatibility"): the first of the round's name parts the folder name contains, mapped again through
        model_mapping; None when no part matches."""
        for part, model in (self.data.get("model_name_guesses") or {}).get("guesses", []):
            if part in benchmark:
                return str(self.config.get("model_mapping", {}).get(model, model))
        return None

    def headline(self, model: str, loadgen_scenario: str, folder_scenario: str) -> Headline:
        """The published figure of a run: RESULT_FIELD_BENCHMARK_OVERWRITE[round][model][scenario], else
        RESULT_FIELD_NEW[round][scenario], keyed as the checker keys them, by LoadGen's effective scenario
        (an Interactive folder runs LoadGen's Server scenario)."""
        override = self.data["result_field_benchmark_overwrite"].get(model, {})
        if loadgen_scenario in override:
            field = override[loadgen_scenario]
            rule = f"RESULT_FIELD_BENCHMARK_OVERWRITE[{self.round}][{model}][{loadgen_scenario}]"
        elif loadgen_scenario in self.data["result_field"]:
            field = self.data["result_field"][loadgen_scenario]
            rule = f"RESULT_FIELD_NEW[{self.round}][{loadgen_scenario}]"
        else:
            raise self.missing(f"headline for benchmark {model!r} scenario {loadgen_scenario!r}")
        unit = self.data["headline_units"][field]
        printed = self.data["special_unit"].get(model, {}).get(folder_scenario) or self.data["unit"].get(
            folder_scenario
        )
        return Headline(field, unit["kind"], unit["unit"], rule, printed)

    def accuracy(self, model: str, scenario: str) -> list[Metric]:
        """The metrics the checker judges for a model, in its order (the first is the headline metric): every
        accuracy-target metric with its lower bound, then accuracy-upper-limit bounds merged in."""
        targets = self._pairs("accuracy-target", model, scenario)
        if targets is None:
            raise self.missing(f"accuracy-target for benchmark {model!r}")
        limits = self._pairs("accuracy-upper-limit", model, scenario) or []
        factors = self._factors(model, scenario)
        metrics = {name: [low, None] for name, low in targets}
        for name, high in limits:
            metrics.setdefault(name, [None, None])[1] = high
        return [self._metric(name, low, high, factors.get(name)) for name, (low, high) in metrics.items()]

    def _metric(self, name: str, low: float | None, high: float | None, factor: dict[str, float] | None) -> Metric:
        pattern = self.data["acc_pattern"].get(name)
        if pattern is None:
            raise self.missing(f"ACC_PATTERN for accuracy metric {name!r}")
        factor = factor if low is not None else None
        return Metric(name, pattern, low, high, (factor or {}).get("reference"), (factor or {}).get("ratio"))

    def audit_tests(self, model: str, division: str | None) -> AuditRule | None:
        """The audit tests the checker requires of `model` in `division` (audit_tests in the round's table, taken
        from the checker by scripts/mlperf-rules); None when the round's table does not say (then nothing is
        stated missing, and the import says why)."""
        table = self.data.get("audit_tests")
        if not table or model not in table["by_model"]:
            return None
        return AuditRule(
            tuple(table["by_model"][model]),
            (division or "").strip().lower() in table["divisions"],
            f"{self.data['source']['repo']}@{self.data['source']['commit']}:{table['source']}",
        )

    def _pairs(self, table: str, model: str, scenario: str) -> list[tuple[str, float]] | None:
        """A checker tuple ('ROUGE1', 43.98, 'ROUGE2', ...) as pairs; per-scenario tables as the checker's
        get_accuracy_target reads them (the scenario, else 'default', else Offline, else Server)."""
        entry = self.config.get(table, {}).get(model)
        if isinstance(entry, dict):
            entry = next((entry[k] for k in (scenario, "default", "Offline", "Server") if k in entry), None)
        if entry is None:
            return None
        return [(str(entry[i]), float(entry[i + 1])) for i in range(0, len(entry) - 1, 2)]

    def _factors(self, model: str, scenario: str) -> dict[str, dict[str, float]]:
        """How each lower bound was written (reference × ratio), per metric; {} for bounds written as numbers."""
        entry = self.data.get("accuracy_target_factors", {}).get(model, {})
        if any(key in SCENARIOS or key == "default" for key in entry):
            entry = next((entry[k] for k in (scenario, "default", "Offline", "Server") if k in entry), {})
        return {name: factor for name, factor in entry.items() if factor}

    # --- results inferred from another scenario's run (rounds/*.json `inferred`, from the checker's code) ---------

    def inferred_pair(self, run_scenario: str, folder_scenario: str) -> str | None:
        """Whom the round's checker lets a `folder_scenario` folder hold a `run_scenario` run: 'edge' (the three
        inferred edge pairs), 'any' (a run of every system, such as an Interactive result run as LoadGen's
        Server), or None when the checker refuses the pair."""
        rule = self.data["inferred"]
        pair = [run_scenario, folder_scenario]
        if pair in rule["any_system"]:
            return "any"
        return "edge" if pair in rule["edge_only"] else None

    def table_inferred(self, run_scenario: str, folder_scenario: str) -> bool:
        """What MLCommons' published table writes in `inferred` for a result: the single-file checker (v4.0-v5.1)
        marks the three edge pairs; the package checker (v6.0 on, results.py) marks every result whose run's
        scenario word differs from its folder's, compared case-sensitively, so an Interactive folder run as
        LoadGen's 'Server' and an endpoints folder (config.yaml type 'offline') are published as inferred."""
        marks = self.data["inferred"]["table_marks"]
        if marks == "the-edge-pairs":
            return [run_scenario, folder_scenario] in self.data["inferred"]["edge_only"]
        if marks == "scenario-words-differ":
            return folder_scenario != run_scenario and (run_scenario, folder_scenario) != ("server", "interactive")
        raise self.missing(f"known way of marking inferred results in its table ({marks!r})")

    def table_model(self, name: str) -> str | None:
        """The checker's model for a MlperfModel name of the published table ('text_to_video' ->
        'wan-2.2-t2v-a14b' in v6.1): the name itself when the round lists it, else the round's table names."""
        if name in self.config["models"]:
            return name
        return (self.data.get("table_model_names") or {}).get(name)

    # --- results measured through MLCommons' endpoints client (rounds/*.json `endpoints`) -------------------------

    @property
    def endpoints(self) -> dict[str, Any]:
        """The round's endpoints rules; RuleMissing for a round whose checker reads no endpoints folders."""
        found = self.data.get("endpoints")
        if not found:
            raise self.missing(
                "endpoints rules (RESULT_FIELD_ENDPOINTS): its checker reads results only from LoadGen logs, so a "
                "result folder without performance/run_1/mlperf_log_detail.txt is not a result of this round"
            )
        return found  # type: ignore[no-any-return]
