"""An authored MLPerf Inference edge submission with power measurements, written in the published formats.

Modelled on mlcommons/inference_results_v5.1 open/GATEOverflow/results/TRIGKEY_Mini_PC_Ryzen_5_5560-.../
mobilenet-v1-precision_float-1.0-128/{singlestream,multistream,offline}/: a SingleStream run with
performance/run_1/spl.txt (SPEC PTDaemon 'Time,<MM-DD-YYYY hh:mm:ss.fff>,Watts,<W>,Volts,...,Mark,<name>' lines),
performance/power/{client,server}.{json,log} and ptd_logs.txt, performance/ranging/, and LoadGen's power_begin /
power_end records; the MultiStream and Offline folders hold byte-identical copies of it, as MLPerf's submission
preprocessing leaves them for inferred results. Every number here is authored (small, round), not copied.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SYSTEM = "edge-box"
BENCHMARK = "resnet50"
SUBMITTER = "Acme"
TIME_FORMAT = "%m-%d-%Y %H:%M:%S.%f"
POWER_BEGIN = "07-12-2025 23:43:14.455"
POWER_END = "07-12-2025 23:43:24.461"  # a window of 10.006 s
QUERIES = 2000
# (seconds after 23:43:11.822, watts): one reading every second as PTDaemon logs them; those at 14.822 ... 23.822
# fall inside the window, one of them reads 0 W (MLPerf drops it); one sits exactly on power_begin (not inside).
READINGS = [(k, 30.0 + k) for k in range(16)]
ZERO_AT = 5
ON_BEGIN_WATTS = 999.0

# The expected figures, by hand: the inside readings are k = 3..12 (times 14.822 .. 23.822), less k = 5 (0 W).
INSIDE = [30.0 + k for k in range(3, 13) if k != ZERO_AT]
AVERAGE_W = sum(INSIDE) / len(INSIDE)  # 37.777...
WINDOW_S = 10.006

SINGLE_STREAM = {
    "result_query_count": QUERIES,
    "generated_samples_per_query": 1,
    "effective_samples_per_query": 1,
    "result_qps_with_loadgen_overhead": 199.5,
    "result_qps_without_loadgen_overhead": 200.25,
    "early_stopping_latency_ss": 5100000,
    "early_stopping_latency_ms": 5300000,
    "result_min_latency_ns": 4000000,
    "result_mean_latency_ns": 4900000,
    "result_max_latency_ns": 7000000,
    "result_90.00_percentile_latency_ns": 5050000,
    "power_begin": POWER_BEGIN,
    "power_end": POWER_END,
}


def system(root: Path, system_type: str = "edge") -> None:
    description = {
        "system_name": "Edge Box",
        "number_of_nodes": 1,
        "submitter": SUBMITTER,
        "division": "closed",
        "status": "available",
        "system_type": system_type,
        "accelerators_per_node": 1,
        "accelerator_model_name": "NVIDIA L4",
        "accelerator_memory_capacity": "24 GB",
        "host_processor_model_name": "AMD Ryzen 5 5560U",
        "host_processors_per_node": 1,
        "operating_system": "Ubuntu 24.04",
        "framework": "TensorRT 10.1",
    }
    (root / "systems").mkdir(parents=True, exist_ok=True)
    (root / "systems" / f"{SYSTEM}.json").write_text(json.dumps(description))


def detail_log(scenario: str, records: dict[str, Any]) -> str:
    base = {
        "loadgen_version": "5.0.25 @ 5232291860",
        "test_datetime": "2025-07-12T23:43:14Z",
        "effective_scenario": scenario,
        "effective_test_mode": "PerformanceOnly",
        "result_validity": "VALID",
        "early_stopping_met": True,
        "qsl_reported_total_count": 50000,
    }
    lines = [":::MLLOG " + json.dumps({"key": k, "value": v, "time_ms": 1.0}) for k, v in {**base, **records}.items()]
    return "\n".join(lines) + "\n"


def summary_log(scenario: str) -> str:
    body = {"SUT name": "LWIS_Server", "Scenario": scenario, "Mode": "PerformanceOnly", "Result is": "VALID"}
    text = "=" * 48 + "\nMLPerf Results Summary\n" + "=" * 48 + "\n"
    return text + "".join(f"{k} : {v}\n" for k, v in body.items()) + "\nNo errors encountered during test.\n"


def spl_text() -> str:
    start = datetime.strptime("07-12-2025 23:43:11.822", TIME_FORMAT)
    lines = []
    for k, watts in READINGS:
        when = (start + timedelta(seconds=k)).strftime(TIME_FORMAT)[:-3]
        shown = 0.0 if k == ZERO_AT else watts
        lines.append(f"Time,{when},Watts,{shown:.6f},Volts,245.960000,Amps,0.138900,PF,0.427900,Mark,run_testing")
        if k == 2:
            lines.append(f"Time,{POWER_BEGIN},Watts,{ON_BEGIN_WATTS:.6f},Volts,245.9,Amps,4.0,PF,0.4,Mark,run_testing")
    return "\n".join(lines) + "\n"


PTD_LOG = """Analyzer 1
GPIB interface specified.
Selected power analyzer 'Yokogawa WT210' from yokowt210.cpp
                               SPEC PTDaemon Tool
                        Version 1.11.1-462c978e-20240907
07-12-2025 23:37:25.330: Attempting to connect to measurement device type 8...
"""


def result_folder(root: Path, folder: str, scenario: str, records: dict[str, Any], power: bool) -> Path:
    """results/<system>/<benchmark>/<folder>/ holding a `scenario` run, with its measurements and accuracy."""
    result = root / "results" / SYSTEM / BENCHMARK / folder
    for run in ("run_1", "ranging") if power else ("run_1",):
        where = result / "performance" / run
        where.mkdir(parents=True)
        (where / "mlperf_log_detail.txt").write_text(detail_log(scenario, records))
        (where / "mlperf_log_summary.txt").write_text(summary_log(scenario))
        if power:
            (where / "spl.txt").write_text(spl_text())
    if power:
        meter = result / "performance" / "power"
        meter.mkdir()
        (meter / "ptd_logs.txt").write_text(PTD_LOG)
        for name in ("client.json", "server.json"):
            (meter / name).write_text(json.dumps({"version": "1.0", "timezone": -3600}))
        for name in ("client.log", "server.log"):
            (meter / name).write_text("[2025-07-12 23:37:24,000] INFO: session started\n")
    (result / "accuracy").mkdir()
    (result / "accuracy" / "accuracy.txt").write_text("accuracy=76.078%, good=38039, total=50000\nhash=abc\n")
    measurements = root / "measurements" / SYSTEM / BENCHMARK / folder
    measurements.mkdir(parents=True)
    (measurements / f"{SYSTEM}_{folder}.json").write_text(
        json.dumps({"weight_data_types": "int8", "input_data_types": "int8", "weight_transformations": "quantization"})
    )
    return result


def edge_submission(tmp_path: Path, *, inferred: tuple[str, ...] = ("MultiStream", "Offline")) -> Path:
    """closed/Acme/: a measured SingleStream result with power, and the `inferred` folders as MLPerf leaves them
    (copies of the SingleStream folder, measurements included)."""
    root = tmp_path / "closed" / SUBMITTER
    system(root)
    single = result_folder(root, "SingleStream", "SingleStream", SINGLE_STREAM, power=True)
    for folder in inferred:
        shutil.copytree(single, root / "results" / SYSTEM / BENCHMARK / folder)
        copy = root / "measurements" / SYSTEM / BENCHMARK / folder
        copy.mkdir(parents=True)
        (copy / f"{SYSTEM}_{folder}.json").write_text(
            (root / "measurements" / SYSTEM / BENCHMARK / "SingleStream" / f"{SYSTEM}_SingleStream.json").read_text()
        )
    return root
