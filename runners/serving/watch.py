"""The telemetry of one level: a thread that scrapes every source (runners/serving/telemetry.py) from just before the
level's first request to just after its last, and the level's summary: the protocol's metrics.server_telemetry
(1.3), metrics.energy where a DCGM exporter gave power or energy for every GPU, and the engine's settings as its
info gauges state them."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from .telemetry import SourceLog, Sources, TelemetryError, Track, iter_logs, new_client, scrape, take

ROUND = 4


class Watch:
    """Scrapes every source every `sources.interval_s` in a thread of its own, between start() and stop()."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self.logs = [SourceLog(kind, url) for kind, url in sources.urls()]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="benchreg-telemetry", daemon=True)
        self._http = new_client()

    def scrape_all(self) -> None:
        for log in self.logs:
            sent = time.monotonic()
            try:
                found = scrape(self._http, log.kind, log.url)
            except TelemetryError as exc:
                log.failed(str(exc))
                continue
            done = time.monotonic()
            take(log, found, (sent + done) / 2, (done - sent) / 2)  # the page was made between the request and its end

    def _run(self) -> None:
        interval = self.sources.interval_s
        due = time.monotonic() + interval
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            self.scrape_all()
            due = max(due + interval, time.monotonic())  # a scrape that overran skips ticks, never bunches them

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then scrape once more: the window closes after the level's last request."""
        self._stop.set()
        self._thread.join()
        self.scrape_all()
        self._http.close()


@contextlib.asynccontextmanager
async def watching(sources: Sources | None) -> AsyncIterator[Watch | None]:
    """A Watch running over the block (None where no source was given); its first scrape is made before the block."""
    if sources is None or not sources.urls():
        yield None
        return
    watch = Watch(sources)
    await asyncio.to_thread(watch.scrape_all)
    watch.start()
    try:
        yield watch
    finally:
        await asyncio.to_thread(watch.stop)


@dataclass(frozen=True)
class LevelTelemetry:
    """What a level's document takes from its telemetry."""

    section: dict[str, Any]  # metrics.server_telemetry
    energy: dict[str, Any] | None  # metrics.energy
    settings: dict[str, Any]  # software.settings the engine's info gauges state
    no_energy: str | None  # why there is no energy figure, where a DCGM exporter was given


def summary(watch: Watch) -> LevelTelemetry:
    sources = [_source(log) for log in watch.logs]
    section: dict[str, Any] = {"interval_s": watch.sources.interval_s, "sources": sources}
    engine = next(iter_logs(watch.logs, "engine"), None)
    settings: dict[str, Any] = {}
    if engine is not None and engine.scrapes:
        section["engine"] = _engine(engine)
        settings = dict(engine.info)
    dcgm = next(iter_logs(watch.logs, "dcgm"), None)
    energy, no_energy = None, None
    if dcgm is not None:
        section["accelerators"] = [_gpu(dcgm, key) for key in dcgm.names]
        energy, no_energy = _energy(dcgm)
    return LevelTelemetry(section, energy, settings, no_energy)


def _r(value: float | None) -> float | None:
    return round(value, ROUND) if value is not None else None


def _source(log: SourceLog) -> dict[str, Any]:
    return {
        "kind": log.kind,
        "url": log.url,
        "scrapes": log.scrapes,
        "failures": log.failures,
        "first_failure": log.first_failure,
        "window_s": _r(log.window_s()),
    }


def _engine(log: SourceLog) -> dict[str, Any]:
    family = log.names.get("family", ("vllm", None))[0] or "vllm"
    out: dict[str, Any] = {"family": family}
    for quantity in ("running_requests", "waiting_requests", "kv_cache_usage"):
        track = log.tracks.get(("engine", quantity))
        if track is not None:
            out[f"{quantity}_mean"], out[f"{quantity}_max"] = _r(track.mean()), _r(track.peak)
    for quantity in ("preemptions", "prompt_tokens", "generation_tokens"):
        track = log.tracks.get(("engine", quantity))
        if track is not None:
            out[quantity] = _r(track.increase())
    out["prefix_cache_hit_rate"] = _hit_rate(log)
    return {k: v for k, v in out.items() if v is not None}


def _hit_rate(log: SourceLog) -> float | None:
    """Hits ÷ queries over the level where the engine counts both (vLLM), else the mean of its own ratio (SGLang)."""
    hits, queries = log.tracks.get(("engine", "prefix_cache_hits")), log.tracks.get(("engine", "prefix_cache_queries"))
    gained, asked = (hits.increase() if hits else None), (queries.increase() if queries else None)
    if gained is not None and asked:
        return _r(gained / asked)
    ratio = log.tracks.get(("engine", "prefix_cache_hit_rate"))
    return _r(ratio.mean()) if ratio else None


def _gpu(log: SourceLog, key: str) -> dict[str, Any]:
    index, model = log.names[key]
    track = log.tracks.get
    power, mem = track((key, "power_w")), track((key, "memory_used_mib"))
    util, clock = track((key, "utilization_pct")), track((key, "sm_clock_mhz"))
    watts, method = _gpu_power(log, key)
    window = log.window_s()
    return {
        "id": (index or key)[:100],
        "uuid": key[:100] if key.startswith("GPU-") else None,
        "model": model[:200] if model else None,
        "samples": max((t.n for (k, _), t in log.tracks.items() if k == key), default=0),
        "power_w_mean": _r(power.mean()) if power else None,
        "power_w_max": _r(power.peak) if power and power.n else None,
        "energy_j": _r(watts * window) if watts is not None and window else None,
        "energy_method": method,
        "utilization_pct_mean": _r(util.mean()) if util else None,
        "memory_used_mib_max": _r(mem.peak) if mem and mem.n else None,
        "sm_clock_mhz_mean": _r(clock.mean()) if clock else None,
    }


def _gpu_power(log: SourceLog, key: str) -> tuple[float | None, str | None]:
    """The GPU's average power over the level (W) and how: its energy counter's rate, else its power integrated."""
    counter: Track | None = log.tracks.get((key, "energy_mj"))
    rate = counter.counter_rate() if counter else None
    if rate is not None:
        return rate / 1000.0, "counter"
    power = log.tracks.get((key, "power_w"))
    average = power.average() if power else None
    return (average, "power-integral") if average is not None else (None, None)


def _energy(log: SourceLog) -> tuple[dict[str, Any] | None, str | None]:
    """metrics.energy over the level where every GPU has a figure; else None and why."""
    window = log.window_s()
    if not log.names:
        return None, f"the DCGM exporter at {log.url} gave no reading during the level"
    figures = {key: _gpu_power(log, key) for key in log.names}
    missing = [key for key, (watts, _) in figures.items() if watts is None]
    if missing or not window:
        return None, (
            f"no energy: the DCGM exporter at {log.url} gave neither an energy counter that changed twice nor two "
            f"power readings for GPU {', '.join(log.names[k][0] or k for k in missing) or 'any'} during the level"
        )
    watts = sum(w for w, _ in figures.values() if w is not None)
    methods = sorted({m for _, m in figures.values() if m is not None})
    return {
        "source": "nvml",
        "joules": _r(watts * window),
        "average_power_w": _r(watts),
        "window_s": _r(window),
        "scope": _scope(log),
        "method": _method(log, methods),
    }, None


def _scope(log: SourceLog) -> str:
    ids = ", ".join(index or key for key, (index, _) in log.names.items())
    return (
        f"{len(log.names)} GPU(s) as a DCGM exporter reports them (GPU {ids}): board power only, not the host's CPUs, "
        "memory, network or cooling"
    )[:500]


def _method(log: SourceLog, methods: list[str]) -> str:
    window = log.window_s() or 0.0
    errors = [t.rate_error(log.uncertainty_s) for (_, q), t in log.tracks.items() if q == "energy_mj"]
    words = {
        "counter": (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ counter): its increase over the time between its first and "
            "last readings where it changed at every scrape, else between its first and last changes, each placed "
            "midway between the scrape that saw it and the one before"
        ),
        "power-integral": "DCGM_FI_DEV_POWER_USAGE samples integrated by the trapezoid rule over the scrape window",
    }
    bound = ""
    if "counter" in methods and (known := [e for e in errors if e is not None]):
        bound = f"; within about {100 * max(known):.1f}% (the ends' timing uncertainty over the span)"
    text = "; ".join(words[m] for m in methods)
    return f"dcgm-exporter at {log.url}, scraped {log.scrapes} times over {window:.1f} s: {text}{bound}"[:500]
