"""What the server did during each level: the engine's Prometheus metrics (vLLM, SGLang) and a DCGM exporter's
accelerator readings, scraped every `interval_s` from the level's start to its end, summarised per level.

Each source is given by URL (`--metrics-url`, `--dcgm-url`). Every scrape is bounded like the probe's side requests
(runners/serving/probe.py): the whole answer within SCRAPE_DEADLINE_S however slowly it drips, at most
MAX_SCRAPE_BYTES read as it comes, a redirect refused by name and never followed. Only the metrics named below are
parsed (prometheus_client's text parser): a malformed line of one of them is refused by name, the rest of the page
is not read. Before any load each source is scraped once; one that fails, or reports none of what it is for, refuses
the run. During a level a failed scrape is counted and its first failure kept; the level goes on.

Scraping runs in a thread of its own with a blocking client, off the load generator's event loop, and every
quantity is aggregated as it comes (a few floats per series), so a level of any length holds constant memory.

Energy over the level: per GPU from DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ, a counter) where it changed at least
twice: its increase over the time it spans, which is the GPU's average power. The exporter refreshes the counter on
its own interval: where it changed at every scrape its first and last readings bound the span; otherwise its first
and last changes do, each placed midway between the scrape that saw it and the one before (Track). Else its
DCGM_FI_DEV_POWER_USAGE samples integrated by the trapezoid rule over the scrape window. The average power times the
scrape window is the level's energy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from prometheus_client.parser import text_string_to_metric_families

from .loadgen import redirect_refusal

MAX_SCRAPE_BYTES = 8 * 1024 * 1024  # a real vLLM /metrics is ~100 KB, a 8-GPU dcgm-exporter page ~200 KB
SCRAPE_DEADLINE_S = 5.0
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.1, 60.0
MAX_GPUS = 256
MAX_SETTINGS = 40
MAX_LABEL_TEXT = 200

# Engine gauges: name -> (quantity, how label sets of one scrape combine). Fractions average, counts add.
ENGINE_GAUGES = {
    "vllm:num_requests_running": ("running_requests", "sum"),
    "vllm:num_requests_waiting": ("waiting_requests", "sum"),
    "vllm:gpu_cache_usage_perc": ("kv_cache_usage", "mean"),  # vLLM before 0.10
    "vllm:kv_cache_usage_perc": ("kv_cache_usage", "mean"),
    "vllm:gpu_prefix_cache_hit_rate": ("prefix_cache_hit_rate", "mean"),  # vLLM 0.6's own ratio
    "sglang:num_running_reqs": ("running_requests", "sum"),
    "sglang:num_queue_reqs": ("waiting_requests", "sum"),
    "sglang:token_usage": ("kv_cache_usage", "mean"),
    "sglang:cache_hit_rate": ("prefix_cache_hit_rate", "mean"),
}
# Engine counters (without "_total"): name -> quantity, read as their increase over the level.
ENGINE_COUNTERS = {
    "vllm:prefix_cache_hits": "prefix_cache_hits",
    "vllm:prefix_cache_queries": "prefix_cache_queries",
    "vllm:gpu_prefix_cache_hits": "prefix_cache_hits",
    "vllm:gpu_prefix_cache_queries": "prefix_cache_queries",
    "vllm:num_preemptions": "preemptions",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:generation_tokens": "generation_tokens",
    "sglang:prompt_tokens": "prompt_tokens",
    "sglang:generation_tokens": "generation_tokens",
}
# The engine's configuration as Prometheus info gauges: every label becomes a setting of the level.
ENGINE_INFO = ("vllm:cache_config_info",)
# DCGM fields: name -> (quantity, the largest plausible value; beyond it the page is refused as malformed).
DCGM_FIELDS = {
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1e5),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("energy_mj", 1e20),
    "DCGM_FI_DEV_GPU_UTIL": ("utilization_pct", 100.0),
    "DCGM_FI_DEV_FB_USED": ("memory_used_mib", 1e8),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", 1e5),
}
WANTED = {"engine": (*ENGINE_GAUGES, *ENGINE_COUNTERS, *ENGINE_INFO), "dcgm": tuple(DCGM_FIELDS)}


class TelemetryError(Exception):
    """A telemetry source cannot be read; the message names the URL and what is wrong."""


@dataclass(frozen=True)
class Sources:
    """What to scrape during each level: the engine's /metrics and a dcgm-exporter's /metrics (either may be None)."""

    metrics_url: str | None = None
    dcgm_url: str | None = None
    interval_s: float = 1.0

    def __post_init__(self) -> None:
        for flag, url in (("--metrics-url", self.metrics_url), ("--dcgm-url", self.dcgm_url)):
            if url is not None:
                checked_url(url, flag)
        if not (math.isfinite(self.interval_s) and MIN_INTERVAL_S <= self.interval_s <= MAX_INTERVAL_S):
            raise ValueError(f"--telemetry-interval: {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} s, not {self.interval_s}")

    def urls(self) -> list[tuple[str, str]]:
        """(kind, url) of each source given."""
        given = (("engine", self.metrics_url), ("dcgm", self.dcgm_url))
        return [(kind, url) for kind, url in given if url is not None]


def checked_url(url: str, flag: str) -> str:
    """`url` if it is an http(s) URL with a host and no credentials; ValueError naming the flag otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > 500:
        raise ValueError(f"{flag} must be an http(s) URL like http://host:9400/metrics, not {url[:100]!r}")
    if parts.username or parts.password:
        raise ValueError(f"{flag}: no credentials in the URL (they would be written into every document)")
    return url


# --- one scrape --------------------------------------------------------------------------------------------------


def fetch(http: httpx.Client, url: str, deadline_s: float = SCRAPE_DEADLINE_S) -> str:
    """The page at `url`, read whole within `deadline_s` and MAX_SCRAPE_BYTES; TelemetryError for a redirect, a
    status other than 200, an answer too slow or too large, or one that is not UTF-8."""
    started = time.monotonic()
    try:
        with http.stream("GET", url, timeout=httpx.Timeout(deadline_s)) as response:
            if 300 <= response.status_code < 400:
                raise TelemetryError(redirect_refusal(response.status_code, url, response.headers.get("location")))
            if response.status_code != 200:
                raise TelemetryError(f"{url} answered HTTP {response.status_code}")
            body = _bounded_body(response, url, started + deadline_s, deadline_s)
    except httpx.TimeoutException:
        raise TelemetryError(f"{url} did not answer whole within {deadline_s:g} s") from None
    except httpx.HTTPError as exc:
        raise TelemetryError(f"cannot read {url}: {type(exc).__name__}: {exc}") from None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise TelemetryError(f"{url} is not UTF-8 text, so not Prometheus text format") from None


def _bounded_body(response: httpx.Response, url: str, deadline: float, deadline_s: float) -> bytearray:
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > MAX_SCRAPE_BYTES:
            raise TelemetryError(f"{url} sent more than {MAX_SCRAPE_BYTES // 2**20} MiB of metrics")
        if time.monotonic() > deadline:
            raise TelemetryError(f"{url} did not answer whole within {deadline_s:g} s")
    return body


Sample = tuple[str, dict[str, str], float]


def samples(text: str, wanted: Iterable[str], url: str) -> list[Sample]:
    """(name without "_total", labels, value) of the wanted metrics on the page. Lines of other metrics are skipped
    unread; a malformed line of a wanted one raises TelemetryError naming it."""
    names = tuple(wanted)
    kept = [line for line in text.splitlines() if _names_one_of(line, names)]
    out: list[Sample] = []
    try:
        for family in text_string_to_metric_families("\n".join(kept) + "\n"):
            for s in family.samples:
                name = s.name.removesuffix("_total")
                if name in names and math.isfinite(s.value):
                    out.append((name, dict(s.labels), float(s.value)))
    except (ValueError, TypeError, IndexError) as exc:
        bad = next((line for line in kept if not line.startswith("#")), "")
        raise TelemetryError(f"{url} is not Prometheus text format ({exc}); near: {bad[:120]!r}") from None
    return out


def _names_one_of(line: str, names: tuple[str, ...]) -> bool:
    body = line[7:] if line.startswith(("# TYPE ", "# HELP ")) else line
    return body.startswith(names) and body[len(_metric_name(body)) :][:1] in ("", " ", "{", "\t")


def _metric_name(line: str) -> str:
    end = 0
    while end < len(line) and (line[end].isalnum() or line[end] in "_:"):
        end += 1
    return line[:end]


# --- aggregation, as the scrapes come -----------------------------------------------------------------------------


@dataclass
class Track:
    """One quantity of one series over a level: mean and peak, first and last readings, its first and last changes,
    and its trapezoid integral over time.

    A change is (when, value, gap): it happened between the scrape that saw it and the one before, `gap` seconds
    apart, and is placed at the middle of that gap, so each end of a counter's span is within gap/2 of the truth."""

    n: int = 0
    total: float = 0.0
    peak: float = -math.inf
    first: tuple[float, float] | None = None
    last: tuple[float, float] | None = None
    first_change: tuple[float, float, float] | None = None
    last_change: tuple[float, float, float] | None = None
    changes: int = 0
    integral: float = 0.0
    decreased: bool = False

    def add(self, t: float, value: float) -> None:
        if self.last is not None:
            self.integral += (t - self.last[0]) * (value + self.last[1]) / 2
            if value != self.last[1]:
                self.changes += 1
                change = ((t + self.last[0]) / 2, value, t - self.last[0])
                self.first_change = self.first_change or change
                self.last_change = change
                self.decreased = self.decreased or value < self.last[1]
        self.first = self.first or (t, value)
        self.n, self.total, self.peak, self.last = self.n + 1, self.total + value, max(self.peak, value), (t, value)

    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def increase(self) -> float | None:
        """last − first; None where the counter went down (the engine restarted) or was read once."""
        if self.first is None or self.last is None or self.n < 2 or self.decreased:
            return None
        return self.last[1] - self.first[1]

    def live(self) -> bool:
        """Whether the counter changed at every scrape: the exporter refreshes it faster than it is scraped, so each
        reading is as fresh as its scrape and the first and last readings bound the span themselves."""
        return self.n >= 3 and self.changes == self.n - 1 and not self.decreased

    def counter_rate(self) -> float | None:
        """Increase per second: from the first reading to the last where the counter is live, else between its
        first and last changes (at least two)."""
        ends = self._ends()
        return (ends[1][1] - ends[0][1]) / (ends[1][0] - ends[0][0]) if ends else None

    def rate_error(self, uncertainty_s: float) -> float | None:
        """The relative error bound of counter_rate: a live counter's readings are each within `uncertainty_s` (half
        a scrape's duration) of their time; a change is within half its gap of the time it is placed at."""
        ends = self._ends()
        if ends is None:
            return None
        slack = 2 * uncertainty_s if self.live() else (ends[0][2] + ends[1][2]) / 2 + 2 * uncertainty_s
        return slack / (ends[1][0] - ends[0][0])

    def _ends(self) -> tuple[tuple[float, float, float], tuple[float, float, float]] | None:
        if self.live() and self.first is not None and self.last is not None:
            first, last = (*self.first, 0.0), (*self.last, 0.0)
        elif self.decreased or self.changes < 2 or self.first_change is None or self.last_change is None:
            return None
        else:
            first, last = self.first_change, self.last_change
        return (first, last) if last[0] > first[0] else None

    def average(self) -> float | None:
        """The trapezoid integral over the time from the first reading to the last."""
        if self.first is None or self.last is None or self.last[0] <= self.first[0]:
            return None
        return self.integral / (self.last[0] - self.first[0])


@dataclass
class SourceLog:
    kind: str
    url: str
    scrapes: int = 0
    failures: int = 0
    first_failure: str | None = None
    first_t: float | None = None
    last_t: float | None = None
    uncertainty_s: float = 0.0  # half the longest scrape: how far a page's time may be from the time it is given
    tracks: dict[tuple[str, str], Track] = field(default_factory=dict)
    names: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # GPU key -> (uuid, model)
    info: dict[str, Any] = field(default_factory=dict)  # the engine's settings as the level's first scrape said

    def failed(self, why: str) -> None:
        self.failures += 1
        self.first_failure = self.first_failure or why[:500]

    def track(self, series: str, quantity: str) -> Track:
        return self.tracks.setdefault((series, quantity), Track())

    def window_s(self) -> float | None:
        return self.last_t - self.first_t if self.first_t is not None and self.last_t is not None else None


def take(log: SourceLog, found: list[Sample], t: float, half_s: float = 0.0) -> None:
    """One scrape's samples, made at `t` ± `half_s`, into the level's tracks (engine: one series; DCGM: one per
    GPU)."""
    log.scrapes += 1
    log.uncertainty_s = max(log.uncertainty_s, half_s)
    log.first_t = log.first_t if log.first_t is not None else t
    log.last_t = t
    if log.kind == "dcgm":
        _take_dcgm(log, found, t)
    else:
        _take_engine(log, found, t)


def _take_engine(log: SourceLog, found: list[Sample], t: float) -> None:
    combined: dict[str, list[float]] = {}
    modes: dict[str, str] = {}
    for name, labels, value in found:
        if name in ENGINE_INFO and not log.info:
            log.info.update(info_settings(name, labels))
        quantity, mode = ENGINE_GAUGES.get(name) or (ENGINE_COUNTERS.get(name), "sum")
        if quantity is not None:
            combined.setdefault(quantity, []).append(value)
            modes[quantity] = mode
        family = name.split(":", 1)[0]
        if family in ("vllm", "sglang"):
            log.names.setdefault("family", (family, None))
    for quantity, values in combined.items():
        value = sum(values) / len(values) if modes[quantity] == "mean" else sum(values)
        log.track("engine", quantity).add(t, value)


def _take_dcgm(log: SourceLog, found: list[Sample], t: float) -> None:
    for name, labels, value in found:
        quantity, _ = DCGM_FIELDS[name]
        key = labels.get("UUID") or labels.get("gpu") or "0"
        if key not in log.names and len(log.names) >= MAX_GPUS:
            continue
        log.names.setdefault(key, (labels.get("gpu"), labels.get("modelName")))
        log.track(key, quantity).add(t, value)


def info_settings(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """An info gauge's labels as settings: vllm:cache_config_info{block_size="16"} -> vllm.cache_config.block_size
    = 16 (whole numbers and decimals as numbers, True/False as flags, other words as text)."""
    prefix = name.replace(":", ".").removesuffix("_info")
    out: dict[str, Any] = {}
    for label, raw in sorted(labels.items())[:MAX_SETTINGS]:
        out[f"{prefix}.{label}"[:MAX_LABEL_TEXT]] = _setting_value(raw[:MAX_LABEL_TEXT])
    return out


def _setting_value(raw: str) -> Any:
    if raw in ("True", "False", "true", "false"):
        return raw.lower() == "true"
    if raw.lstrip("-").isdigit() and len(raw) < 16:
        return int(raw)
    try:
        value = float(raw)
    except ValueError:
        return raw
    return value if math.isfinite(value) else raw


def checked(kind: str, url: str, found: list[Sample]) -> list[Sample]:
    """`found`, or TelemetryError where it holds none of what the source is for, or an implausible DCGM value."""
    if not found:
        raise TelemetryError(f"{url} reports none of the {kind} metrics benchreg reads ({', '.join(WANTED[kind])})")
    for name, labels, value in found:
        limit = DCGM_FIELDS[name][1] if kind == "dcgm" else math.inf
        if not 0 <= value <= limit:
            where = f"{name}{{gpu={labels.get('gpu')!r}}}" if kind == "dcgm" else name
            raise TelemetryError(f"{url}: {where} is {value:g}, outside 0 to {limit:g}")
    return found


def scrape(http: httpx.Client, kind: str, url: str) -> list[Sample]:
    """One scrape of one source, checked; TelemetryError names what is wrong."""
    return checked(kind, url, samples(fetch(http, url), WANTED[kind], url))


def new_client() -> httpx.Client:
    return httpx.Client(follow_redirects=False, timeout=SCRAPE_DEADLINE_S, limits=httpx.Limits(max_connections=2))


def refusals(sources: Sources) -> list[str]:
    """Each source scraped once before any load: what is wrong with each, in words (empty: all can be read)."""
    out = []
    with new_client() as http:
        for kind, url in sources.urls():
            try:
                scrape(http, kind, url)
            except TelemetryError as exc:
                out.append(f"{'--metrics-url' if kind == 'engine' else '--dcgm-url'}: {exc}")
    return out


def iter_logs(logs: Iterable[SourceLog], kind: str) -> Iterator[SourceLog]:
    return (log for log in logs if log.kind == kind)
