"""`benchreg run serving --metrics-url --dcgm-url`: the server's telemetry scraped during each level, through the real
scrape path, from Prometheus endpoints served by aiohttp in this process whose readings follow a known law (the
exporter reads the same monotonic clock as the client, so the truth over any window is known). Energy agrees with
the law within the error the document states; hostile telemetry endpoints are refused by name, in bounded time,
before any load."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from protocol import decisions as dec
from protocol import sizing
from protocol.serving import tuned_settings
from runners.cli import main
from runners.serving import telemetry
from runners.serving.spec import SpecInvalid, expected_fields, from_fields
from tests.runners.serving.test_cli import DEPLOYMENT
from tests.runners.serving.test_hostile import Server, drip, endless, models, stream, version

Handler = Callable[[web.Request], Any]
WATTS = {"0": 300.0, "1": 450.0}  # each GPU's true power, constant: the energy counter is its integral


def exporter(refresh_s: float = 0.0, counter: bool = True, power: bool = True) -> Handler:
    """A dcgm-exporter page: each GPU's energy counter (mJ) is WATTS × time, refreshed every `refresh_s` (0: at
    each scrape), as DCGM's own collection interval does; its power gauge reads WATTS."""

    async def handler(request: web.Request) -> web.Response:
        now = time.monotonic()
        held = math.floor(now / refresh_s) * refresh_s if refresh_s else now
        lines = ["# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).", "# TYPE DCGM_FI_DEV_SM_CLOCK gauge"]
        for gpu, watts in WATTS.items():
            labels = f'gpu="{gpu}",UUID="GPU-{gpu}abc",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3"'
            lines.append(f"DCGM_FI_DEV_SM_CLOCK{{{labels}}} 1980")
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 87")
            lines.append(f"DCGM_FI_DEV_FB_USED{{{labels}}} 70123")
            lines.append(f"DCGM_FI_DEV_MEM_COPY_UTIL{{{labels}}} 12")  # not read: skipped unparsed
            if power:
                lines.append(f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {watts}")
            if counter:
                lines.append(f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {int(watts * held * 1000)}")
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    return handler


def engine_metrics(relaunched: Callable[[], bool]) -> Handler:
    """A vLLM /metrics page: 3 running, 1 waiting, KV cache a quarter used, prefix-cache hits 30% of queries, and
    the cache config's num_gpu_blocks 5000, or 6000 once `relaunched()` (an engine relaunched between levels)."""
    started = time.monotonic()

    async def handler(request: web.Request) -> web.Response:
        elapsed = time.monotonic() - started
        blocks = 6000 if relaunched() else 5000
        text = f"""# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="simulated"}} 3.0
vllm:num_requests_waiting{{engine="0",model_name="simulated"}} 1.0
vllm:kv_cache_usage_perc{{engine="0",model_name="simulated"}} 0.25
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{{engine="0",model_name="simulated"}} {int(1000 * elapsed)}
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{{engine="0",model_name="simulated"}} {int(300 * elapsed)}
vllm:time_to_first_token_seconds_bucket{{le="0.001",model_name="simulated"}} 0.0
vllm:cache_config_info{{block_size="16",cache_dtype="auto",enable_prefix_caching="True",num_gpu_blocks="{blocks}"}} 1.0
"""
        return web.Response(text=text, content_type="text/plain")

    return handler


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(**extra: Handler) -> Server:
        routes: dict[tuple[str, str], Handler] = {
            ("GET", "/v1/models"): models,
            ("GET", "/version"): version,
            ("POST", "/v1/chat/completions"): stream(lambda body, n: None),
        }
        routes.update({tuple(key.split(" ", 1)): handler for key, handler in extra.items()})  # type: ignore[misc]
        server = Server(routes)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def _run(url: str, out: Path, *extra: str) -> int:
    args = ["run", "serving", "--endpoint", url, "--model", "simulated", "--input-tokens", "16", "--output-tokens",
            "6", "--duration", "3", "--min-requests", "12", "--timeout", "5", "--out", str(out),
            "--telemetry-interval", "0.1", *DEPLOYMENT, *extra]  # fmt: skip
    return main(args)


def _docs(out: Path) -> list[dict[str, Any]]:
    docs = [json.loads(p.read_text()) for p in out.glob("*.json")]
    return sorted(docs, key=lambda d: d["scenario"]["sweep"]["index"])


def _stated_bound(method: str) -> float:
    found = re.search(r"within about ([0-9.]+)%", method)
    assert found, method
    return float(found.group(1)) / 100


@pytest.mark.parametrize("refresh_s", [0.0, 0.5])
def test_energy_from_the_counter_agrees_with_the_law_within_the_stated_error(serve, tmp_path, refresh_s):
    server = serve(**{"GET /dcgm/metrics": exporter(refresh_s)})
    assert _run(server.url, tmp_path, "--request-rates", "8", "--dcgm-url", f"{server.url}/dcgm/metrics") == 0
    (doc,) = _docs(tmp_path)
    assert doc["protocol"] == "benchreg.submission/1.3"
    energy = doc["metrics"]["energy"]
    truth = sum(WATTS.values())
    error = abs(energy["average_power_w"] / truth - 1)
    assert error <= max(_stated_bound(energy["method"]), 0.001), (energy, error)
    assert energy["joules"] == pytest.approx(energy["average_power_w"] * energy["window_s"], rel=1e-3)
    assert energy["window_s"] >= doc["conditions"]["window"]["seconds"]  # the scrapes bracket the level
    assert energy["source"] == "nvml" and "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" in energy["method"]
    gpus = {g["id"]: g for g in doc["metrics"]["server_telemetry"]["accelerators"]}
    assert sorted(gpus) == ["0", "1"] and {g["energy_method"] for g in gpus.values()} == {"counter"}
    assert gpus["1"]["power_w_mean"] == 450.0 and gpus["1"]["sm_clock_mhz_mean"] == 1980
    assert gpus["0"]["uuid"] == "GPU-0abc" and gpus["0"]["memory_used_mib_max"] == 70123
    # energy per output token, as decisions read it: average power over the output token rate
    per_token = sizing.energy_per_output(doc)
    tokens_per_s = doc["metrics"]["throughput"]["value"]
    assert per_token.unit == "J/token" and per_token.value == pytest.approx(energy["average_power_w"] / tokens_per_s)


def test_power_readings_are_integrated_where_the_exporter_has_no_energy_counter(serve, tmp_path):
    server = serve(**{"GET /dcgm/metrics": exporter(counter=False)})
    assert _run(server.url, tmp_path, "--request-rates", "8", "--dcgm-url", f"{server.url}/dcgm/metrics") == 0
    (doc,) = _docs(tmp_path)
    energy = doc["metrics"]["energy"]
    assert energy["average_power_w"] == pytest.approx(750.0, rel=1e-6)
    assert "trapezoid" in energy["method"] and "TOTAL_ENERGY" not in energy["method"]
    assert {g["energy_method"] for g in doc["metrics"]["server_telemetry"]["accelerators"]} == {"power-integral"}


def test_engine_metrics_are_summarised_and_a_relaunch_between_levels_disclosed(serve, tmp_path):
    side_reads = [0]  # the runner reads the endpoint's own /metrics once before the sweep, then before and after each

    async def side(request: web.Request) -> web.Response:
        side_reads[0] += 1
        return web.Response(status=404)

    server = serve(**{"GET /engine/metrics": engine_metrics(lambda: side_reads[0] >= 3), "GET /metrics": side})
    assert _run(server.url, tmp_path, "--concurrency", "1,2", "--metrics-url", f"{server.url}/engine/metrics",
                "--engine-args=vllm serve simulated --max-num-seqs 64") == 0  # fmt: skip
    first, second = _docs(tmp_path)
    engine = first["metrics"]["server_telemetry"]["engine"]
    assert engine["family"] == "vllm" and engine["running_requests_mean"] == 3 and engine["waiting_requests_max"] == 1
    assert engine["kv_cache_usage_mean"] == 0.25
    assert engine["prefix_cache_hit_rate"] == pytest.approx(0.3, abs=0.01)
    assert "energy" not in first["metrics"]  # no power source: no energy claimed
    settings = first["software"]["settings"]
    assert settings["max_num_seqs"] == 64 and settings["vllm.cache_config.block_size"] == 16
    assert settings["vllm.cache_config.enable_prefix_caching"] is True
    assert first["software"]["notes"]["engine_launch_command"] == "vllm serve simulated --max-num-seqs 64"
    assert (
        settings["vllm.cache_config.num_gpu_blocks"],
        second["software"]["settings"]["vllm.cache_config.num_gpu_blocks"],
    ) == (5000, 6000)
    sweep = first["scenario"]["sweep"]["id"]
    assert tuned_settings([first, second]) == {sweep: ("vllm.cache_config.num_gpu_blocks",)}


async def redirect(request: web.Request) -> web.Response:
    raise web.HTTPFound("http://127.0.0.1:9/metrics")


async def malformed(request: web.Request) -> web.Response:
    return web.Response(text='DCGM_FI_DEV_POWER_USAGE{gpu="0" 300\n', content_type="text/plain")


async def foreign(request: web.Request) -> web.Response:
    return web.Response(text="<html>not metrics</html>\n", content_type="text/html")


async def implausible(request: web.Request) -> web.Response:
    return web.Response(text='DCGM_FI_DEV_POWER_USAGE{gpu="3"} -5\n', content_type="text/plain")


@pytest.mark.parametrize(
    ("handler", "words"),
    [
        (drip, "/dcgm/metrics did not answer whole within 5 s"),
        (endless, "/dcgm/metrics sent more than 8 MiB of metrics"),
        (redirect, "/dcgm/metrics; benchreg does not follow redirects: point it at http://127.0.0.1:9/metrics"),
        (malformed, "/dcgm/metrics is not Prometheus text format"),
        (foreign, "/dcgm/metrics reports none of the dcgm metrics benchreg reads"),
        (implausible, "DCGM_FI_DEV_POWER_USAGE{gpu='3'} is -5, outside 0 to 100000"),
    ],
)
def test_a_hostile_telemetry_endpoint_is_refused_by_name_before_any_load(serve, tmp_path, capsys, handler, words):
    server = serve(**{"GET /dcgm/metrics": handler})
    started = time.monotonic()
    assert _run(server.url, tmp_path, "--request-rates", "8", "--dcgm-url", f"{server.url}/dcgm/metrics") == 2
    assert time.monotonic() - started < 20
    err = capsys.readouterr().err
    assert "refused before any load was sent" in err and "--dcgm-url: " in err and words in err
    assert not any(hit.startswith("POST") for hit in server.hits)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--dcgm-url", "ftp://host/metrics", "--dcgm-url must be an http(s) URL"),
        ("--metrics-url", "http://user:secret@host/metrics", "--metrics-url: no credentials in the URL"),
        ("--telemetry-interval", "0.01", "--telemetry-interval: 0.1 to 60 s"),
    ],
)
def test_bad_telemetry_flags_are_refused_by_name(tmp_path, capsys, flag, value, words):
    assert _run("http://127.0.0.1:9", tmp_path, "--request-rates", "8", flag, value) == 2
    assert words in capsys.readouterr().err


def test_a_track_bounds_memory_and_reads_a_counter_from_its_changes():
    track = telemetry.Track()
    for i in range(100_000):  # a counter refreshed every 5th scrape, 10 units each time
        track.add(i * 0.1, float(10 * (i // 5)))
    assert track.n == 100_000 and track.changes == 19_999
    assert track.counter_rate() == pytest.approx(20.0)  # 10 units per 0.5 s
    assert track.increase() == pytest.approx(10 * 19_999)
    assert not track.live() and track.rate_error(0.0) == pytest.approx(
        0.1 / (19_998 * 0.5)
    )  # (0.1/2 + 0.1/2) over span
    live = telemetry.Track()
    for i in range(10):  # refreshed faster than scraped: every reading is fresh, the first and last bound the span
        live.add(i * 0.1 + (0.05 if i == 9 else 0.0), 7.0 * (i * 0.1 + (0.05 if i == 9 else 0.0)))
    assert live.live() and live.counter_rate() == pytest.approx(7.0)
    assert live.rate_error(0.01) == pytest.approx(0.02 / 0.95)


@pytest.mark.parametrize(
    ("unit", "rate", "noun"), [("tokens/s", "throughput", "token"), ("requests/s", "request_rate", "request")]
)
def test_a_decision_over_a_served_level_with_measured_energy_answers_energy_per_output(
    serve, tmp_path, unit, rate, noun
):
    server = serve(**{"GET /dcgm/metrics": exporter()})
    # one level: a sweep is read at its knee only where its levels' verdicts stand, which a client that fell behind
    # on this shared host withholds (then no figure at all is derived from the sweep: DECISIONS.md)
    assert _run(server.url, tmp_path, "--concurrency", "2", "--dcgm-url", f"{server.url}/dcgm/metrics") == 0
    docs = _docs(tmp_path)
    body = {
        "workload": "simulated",
        "scenario": "server",
        "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 5000}],
        "demand": {"value": 1000, "unit": unit},
        "prices": {"currency": "USD", "system_hour": {"1x H100 SXM": 3.0}, "energy_per_kwh": 0.2},
    }
    refs = [{"id": i + 1, "digest": f"sha256:{i}", "url": f"/runs/{i + 1}"} for i in range(len(docs))]
    answer = dec.answer(dec.Question.from_dict(body), [dec.Evidence(d, r) for d, r in zip(docs, refs, strict=True)])
    (candidate,) = answer["candidates"]
    (level,) = docs
    watts, per_second = level["metrics"]["energy"]["average_power_w"], level["metrics"][rate]["value"]
    energy = candidate["energy_per_output"]
    assert energy["unit"] == f"J/{noun}" and energy["value"] == pytest.approx(watts / per_second, rel=1e-3)
    assert "no-energy" not in {g["code"] for g in candidate["gaps"]}
    assert candidate["energy_cost_per_million"]["value"] == pytest.approx(watts / per_second * 0.2 / 3.6, rel=1e-3)
    assert "dcgm-exporter" in candidate["energy_measured"][0]["words"]


def measured_document(out: Path) -> dict[str, Any]:
    """One level measured with both telemetry sources (the engine's and a DCGM exporter's), as the command writes it."""
    server = Server(
        {
            ("GET", "/v1/models"): models,
            ("GET", "/version"): version,
            ("POST", "/v1/chat/completions"): stream(lambda body, n: None),
            ("GET", "/dcgm/metrics"): exporter(),
            ("GET", "/engine/metrics"): engine_metrics(lambda: False),
        }
    )
    try:
        urls = ("--dcgm-url", f"{server.url}/dcgm/metrics", "--metrics-url", f"{server.url}/engine/metrics")
        assert _run(server.url, out, "--concurrency", "1", *urls) == 0
    finally:
        server.stop()
    (doc,) = _docs(out)
    return doc


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"dcgm_url": "ftp://host/metrics"}, "/dcgm_url"),
        ({"metrics_url": "http://u:p@host/metrics"}, "/metrics_url"),
        ({"telemetry_interval_s": 0}, "/telemetry_interval_s"),
    ],
)
def test_an_agent_jobs_telemetry_fields_are_refused_by_pointer(change: dict[str, Any], pointer: str) -> None:
    fields = {"endpoint": "http://gpu:8000", "model": "m", "load": {"mode": "request-rate", "loads": [1]},
              "deployment": {}, **change}  # fmt: skip
    with pytest.raises(SpecInvalid) as refused:
        from_fields(fields)
    assert refused.value.pointer == pointer, str(refused.value)


def test_an_agent_job_told_to_scrape_keeps_its_sources_and_is_held_to_its_interval() -> None:
    fields = {"endpoint": "http://gpu:8000", "model": "m", "load": {"mode": "request-rate", "loads": [1]},
              "deployment": {}, "dcgm_url": "http://gpu:9400/metrics", "telemetry_interval_s": 0.5}  # fmt: skip
    spec = from_fields(fields)
    assert from_fields(spec.fields()) == spec
    assert spec.telemetry() == telemetry.Sources(None, "http://gpu:9400/metrics", 0.5)
    assert expected_fields(spec)["/metrics/server_telemetry/interval_s"] == 0.5


def test_an_exporter_that_turns_hostile_during_a_level_costs_the_level_its_energy_not_the_run(serve, tmp_path):
    calls = [0]
    honest = exporter()

    async def turning(request: web.Request) -> web.StreamResponse:
        calls[0] += 1  # the check before any load, then the level's first scrape, are answered; then a slow drip
        return await (honest(request) if calls[0] <= 2 else drip(request))

    server = serve(**{"GET /dcgm/metrics": turning})
    started = time.monotonic()
    assert _run(server.url, tmp_path, "--request-rates", "8", "--dcgm-url", f"{server.url}/dcgm/metrics") == 0
    assert time.monotonic() - started < 40  # each scrape is cut at its 5 s deadline
    (doc,) = _docs(tmp_path)
    (source,) = doc["metrics"]["server_telemetry"]["sources"]
    assert source["scrapes"] == 1 and source["failures"] >= 1
    assert source["first_failure"].endswith("/dcgm/metrics did not answer whole within 5 s")
    assert "energy" not in doc["metrics"]
    assert (
        "gave neither an energy counter that changed twice nor two power readings" in doc["software"]["notes"]["energy"]
    )
