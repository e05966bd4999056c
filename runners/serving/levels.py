"""One load level's figures from its records: rates, distributions, goodput, steady state, whether the client kept up.

Window: from the level's first scheduled arrival to its last request's end, so requests still queued at the end
of the schedule are waited for and counted. Rates are completed requests (and their output tokens) over it.
Distributions are of completed requests; the others are counted by outcome, never dropped.

The client kept up when its p99 dispatch lag and the p99 lateness of its event loop were both within
max(1 ms, 5% of the level's TTFT p50), and (open loop) it issued within 5% of the target rate. Beyond that
bound the client's own delay could move a reported TTFT by more than 5%. What starves the client from outside
(the OS running other processes) is judged too, since a descheduled loop stamps every chunk that waited for it
at the same late instant: its timer's p99 oversleep past the timer's own rounding within max(1 ms, 5% of the
ITL p50), at least 95% of the monitor's samples taken, at most 5% of token events sharing a timestamp with the
one before (where the endpoint paces its tokens), and at most 90% of one core used by the client. Otherwise
the level says the client fell behind, with the figures in words, and its steady state is not assessed, so no
verdict rests on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from protocol.percentiles import NUMPY_METHOD, quantile

from .. import stats
from ..inference import ARRIVAL_TOLERANCE, SERVER_CRITERIA
from .loadgen import OUTCOMES, LevelRun, Record

CLIENT_LAG_FLOOR_MS = 1.0
CLIENT_LAG_SHARE = 0.05
# The loop's timer wakes up to 1 ms late by itself (epoll's timeout is rounded up to whole ms) plus the kernel's
# timer slack and the loop's own turn: oversleep up to this much is the timer, not the client being kept from
# running. Measured: p99 1.1-1.2 ms on a quiet host, 2.55 ms in CI beside the test workers while the client never
# waited for a CPU (schedstat 0%); a client kept from running oversleeps 11-58 ms (tests/runners/serving/test_kept_up).
TIMER_ROUNDING_MS = 3.0
# A monitor that took fewer than this share of its due samples slept through stalls longer than its period.
MONITOR_TAKEN_SHARE = 0.95
# Token events stamped at the same instant as the one before (read in one wake-up) give an ITL of 0: beyond this
# share the ITL distribution is the client's reading schedule, not the endpoint's. Judged only where the endpoint
# paces its tokens (median gap between distinct stamps at least PACED_GAP_MS, well past the timer's rounding):
# an endpoint that sends a request's tokens at once is read in one wake-up by any client, rightly stamped together.
COLLISION_SHARE = 0.05
PACED_GAP_MS = 3.0
# The client is one thread: busy this share of the wall, its wake-ups queue behind its own work.
CPU_SHARE_MAX = 0.90


@dataclass(frozen=True)
class Starvation:
    """The client's own figures in words (`figures`), and those past their bound (`failed`: empty, kept up)."""

    failed: list[str]
    figures: list[str]


@dataclass(frozen=True)
class Objectives:
    """Per-request objectives (ms) for goodput and for the sweep: TTFT, TPOT, end-to-end; None: not set."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    latency_ms: float | None = None

    def section(self) -> dict[str, float] | None:
        out = {"ttft_p99": self.ttft_ms, "tpot_p99": self.tpot_ms, "latency_p99": self.latency_ms}
        kept = {k: v for k, v in out.items() if v is not None}
        return kept or None

    def met(self, r: Record) -> bool:
        tpot = r.tpot_ms
        return (
            (self.ttft_ms is None or r.ttft_ms <= self.ttft_ms)
            and (self.tpot_ms is None or tpot is None or tpot <= self.tpot_ms)
            and (self.latency_ms is None or r.latency_ms <= self.latency_ms)
        )


def _p(values: np.ndarray, q: float) -> float:
    return float(quantile(values, q, NUMPY_METHOD[stats.PERCENTILE_METHOD]))


@dataclass(frozen=True)
class Level:
    """A measured level: `mode` "request-rate" (load in requests/s) or "concurrency" (load in users)."""

    mode: str
    load: float
    run: LevelRun
    objectives: Objectives

    @property
    def completed(self) -> list[Record]:
        return [r for r in self.run.records if r.outcome == "completed"]

    @property
    def seconds(self) -> float:
        ends = [r.end for r in self.run.records]
        return max(ends) - self.run.started if ends else 0.0

    def series(self, name: str) -> np.ndarray:
        done = self.completed
        if name == "itl_ms":
            return np.concatenate([r.gaps_ms() for r in done]) if done else np.empty(0)
        values = [getattr(r, name) for r in done]
        return np.asarray([v for v in values if v is not None], dtype=np.float64)

    def counts(self) -> dict[str, int]:
        sent = [r for r in self.run.records if r.sent == r.sent]  # not NaN: the request left the client
        out = {"sent": len(sent), **{k: 0 for k in OUTCOMES}}
        for r in sent:
            out[r.outcome] += 1
        return out

    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.completed)

    def tokens_per_second(self) -> float:
        return self.output_tokens() / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, name: str, q: float) -> float | None:
        """Nearest-rank percentile of a series, computed whatever the sample count (the sweep's judgement)."""
        values = self.series(name)
        return _p(values, q) if values.size else None

    def objective_failed(self) -> str | None:
        """The first p99 objective the level failed (or "no request completed"), else None."""
        if not self.completed:
            return "no request completed"
        checks = (("ttft_ms", self.objectives.ttft_ms), ("tpot_ms", self.objectives.tpot_ms))
        for name, bound in (*checks, ("latency_ms", self.objectives.latency_ms)):
            value = self.percentile(name, 0.99)
            if bound is not None and value is not None and value > bound:
                return f"{name} p99 objective failed ({value:.1f} > {bound:g})"
        return None

    def issue_rate(self) -> float:
        sent = sorted(r.sent for r in self.run.records if r.sent == r.sent)
        return (len(sent) - 1) / (sent[-1] - sent[0]) if len(sent) > 1 and sent[-1] > sent[0] else 0.0

    def client(self) -> tuple[dict[str, Any], list[str]]:
        """The protocol's metrics.client section, and the reasons the client fell behind (empty: kept up)."""
        lag = np.asarray([r.dispatch_lag_ms for r in self.run.records if r.sent == r.sent])
        loop = np.asarray(self.run.loop_lag_ms)
        ttft = self.series("ttft_ms")
        bound = max(CLIENT_LAG_FLOOR_MS, CLIENT_LAG_SHARE * _p(ttft, 0.5)) if ttft.size else CLIENT_LAG_FLOOR_MS
        reasons = []
        for name, values in (("dispatch lag", lag), ("event-loop lateness", loop)):
            if values.size and _p(values, 0.99) > bound:
                reasons.append(f"client fell behind: p99 {name} {_p(values, 0.99):.2f} ms > {bound:.2f} ms")
        if self.mode == "request-rate" and abs(self.issue_rate() / self.load - 1) > ARRIVAL_TOLERANCE:
            reasons.append(
                f"client fell behind: issued {self.issue_rate():.2f} req/s against {self.load:g} "
                f"(tolerance {ARRIVAL_TOLERANCE:.0%})"
            )
        starved = self.starvation()
        reasons += [f"client fell behind: {r}" for r in starved.failed]
        notes = (
            f"bound max({CLIENT_LAG_FLOOR_MS:g} ms, {CLIENT_LAG_SHARE:.0%} of TTFT p50) = {bound:.2f} ms; "
            f"event-loop lateness p99 {(_p(loop, 0.99) if loop.size else 0.0):.2f} ms over {loop.size} samples; "
            + "; ".join(starved.figures)
        )
        section = {
            "kept_up": not reasons,
            "dispatch_lag_ms": _distribution(np.maximum(lag, 0.0)) if lag.size else None,
            "notes": notes[:500],
        }
        return section, reasons

    def collisions(self) -> tuple[float, int]:
        """Share of token events stamped at the same instant as the one before in their stream, and the most
        events stamped at one instant (one read of the socket after the loop woke)."""
        gaps = self.series("itl_ms")
        most = 0
        for r in self.completed:
            if len(r.chunks) > 1:
                _, counts = np.unique(np.asarray(r.chunks), return_counts=True)
                most = max(most, int(counts.max()))
        return (float(np.mean(gaps == 0.0)) if gaps.size else 0.0), most

    def starvation(self) -> Starvation:
        """What kept the client from running on time, judged against the module's bounds, with its figures."""
        m = self.run.monitor
        gaps = self.series("itl_ms")
        # The stamp error that matters is against the gap between tokens (the TTFT where there is no gap).
        positive = gaps[gaps > 0] if gaps.size else self.series("ttft_ms")
        basis = _p(positive, 0.5) if positive.size else 0.0
        bound = TIMER_ROUNDING_MS + max(CLIENT_LAG_FLOOR_MS, CLIENT_LAG_SHARE * basis)
        over = _p(np.asarray(m.oversleep_ms), 0.99) if m.oversleep_ms else 0.0
        shared, most = self.collisions()
        cpu = m.cpu_s / m.wall_s if m.wall_s > 0 else 0.0
        checks = [
            (over <= bound, f"timer overslept by p99 {over:.2f} ms (bound {bound:.2f} ms)"),
            (m.taken >= MONITOR_TAKEN_SHARE * m.due, f"{m.taken:,} of {m.due:,} monitor samples taken"),
            (
                shared <= COLLISION_SHARE or basis < PACED_GAP_MS,
                f"{shared:.0%} of token events shared a timestamp (up to {most} at once)",
            ),
            (cpu <= CPU_SHARE_MAX, f"client CPU {cpu:.0%} of one core"),
        ]
        figures = [text for _, text in checks]
        if m.runqueue_s is not None and m.wall_s > 0:
            figures.append(f"waited for a CPU {m.runqueue_s / m.wall_s:.0%} of the level")
        return Starvation([text for ok, text in checks if not ok], figures)

    def steady_state(self, client_reasons: list[str]) -> dict[str, Any]:
        if client_reasons:
            return {"method": "not-assessed", "reached": None, "reasons": client_reasons}
        verdict = stats.assess(self.series("latency_ms"), SERVER_CRITERIA)
        return verdict.as_document()

    def metrics(self, counted_by: str, token_notes: str | None) -> dict[str, Any]:
        """The level's metrics section (without the client's, see `client`)."""
        seconds, done = self.seconds, self.completed
        tps = round(self.tokens_per_second(), 4)
        out: dict[str, Any] = {
            "primary": "throughput",
            "throughput": {"value": tps, "unit": "tokens/s"},
            "tokens_per_second": {"value": tps, "unit": "tokens/s"},
            "request_rate": {"value": round(len(done) / seconds, 4) if seconds else 0.0, "unit": "requests/s"},
            "goodput": {
                "value": round(sum(self.objectives.met(r) for r in done) / seconds, 4) if seconds else 0.0,
                "unit": "requests/s",
            },
            "requests": self.counts(),
            "token_counts": {
                "input_total": sum(r.input_tokens for r in done),
                "output_total": self.output_tokens(),
                "counted_by": counted_by,
                "notes": token_notes,
                **self.reasoning_total(),
            },
        }
        for name in ("ttft_ms", "ttfot_ms", "itl_ms", "tpot_ms", "latency_ms"):
            values = self.series(name)
            if values.size:
                out[name] = _distribution(values)
        rates = self.series("user_rate")
        if rates.size:
            out["tokens_per_second_per_user"] = {**_distribution(rates), "unit": "tokens/s"}
        return out

    def reasoning_total(self) -> dict[str, int]:
        """{"reasoning_total": n} where the server's usage stated the reasoning tokens of every completed request
        (a part of output_total), else {}: a total over some requests only would pass for the level's."""
        done = self.completed
        if done and all(r.reasoning_tokens is not None for r in done):
            return {"reasoning_total": sum(r.reasoning_tokens or 0 for r in done)}
        return {}


def _distribution(values: np.ndarray) -> dict[str, Any]:
    return stats.distribution(values)


def counted_by(levels: list[Level]) -> tuple[str, str | None]:
    """How the token counts were made: the server's usage on every completed request, else the client's count."""
    done = [r for level in levels for r in level.completed]
    if done and all(r.usage for r in done):
        return "server-usage", None
    with_usage = sum(r.usage for r in done)
    return "stream-chunks", (
        f"{with_usage} of {len(done)} completed requests had a usage report; the others count one output token "
        "per streamed text chunk and one input token per prompt word"
    )
