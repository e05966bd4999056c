"""Each file workload against the simulated endpoint, which logs every request it receives (--log): the endpoint's
own account shows what the workload sent (lengths, arrival times, sessions' turns and their growing context), and
its prefix cache (--prefix-cache, whole 16-token blocks as vLLM's) is the truth for the recorded hit rate."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json

import numpy as np
import pytest

import protocol
from protocol import comparability
from runners.cli import main
from runners.serving.datasets import read_sharegpt
from runners.serving.loadgen import Target
from runners.serving.sessions import SessionBudget, closed_loop_sessions

from .test_cli import DEPLOYMENT

pytestmark = pytest.mark.xdist_group("serving-timing")


def _run(url, out, *extra):
    args = ["run", "serving", "--endpoint", url, "--model", "simulated", "--duration", "2", "--min-requests", "12",
            "--out", str(out), *extra, *DEPLOYMENT]  # fmt: skip
    return main(args)


def _received(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _docs(out):
    docs = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    for doc in docs:
        assert protocol.errors(doc) == [] and doc["protocol"] == "benchreg.submission/1.3"
    return sorted(docs, key=lambda d: d["scenario"]["sweep"]["index"])


def _sharegpt_file(tmp_path, conversations=12, turns=1):
    data = []
    for i in range(conversations):
        said = []
        for k in range(turns):
            said += [{"from": "human", "value": " ".join(f"c{i}t{k}w{j}" for j in range(5 + (i + k) % 7))},
                     {"from": "gpt", "value": " ".join(f"r{j}" for j in range(4 + (3 * i + k) % 9))}]  # fmt: skip
        data.append({"id": f"c{i}", "conversations": said})
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data))
    return path


def test_sharegpt_sends_first_human_turns_with_the_reply_length_as_output(endpoint, tmp_path):
    log, path = tmp_path / "received.jsonl", _sharegpt_file(tmp_path)
    url = endpoint("--ttft-ms", "10", "--itl-ms", "2", "--capacity", "64", "--log", str(log))
    assert _run(url, tmp_path / "out", "--workload", "sharegpt", "--dataset", str(path), "--request-rates", "8") == 0
    (doc,) = _docs(tmp_path / "out")
    pairs = {(len(s[0].text.split()), s[0].output_tokens) for s in read_sharegpt(path).sessions}
    sent = [(r["prompt_tokens"], r["max_tokens"]) for r in _received(log)][1:]  # the first is the streaming probe
    assert len(sent) == doc["metrics"]["requests"]["sent"] >= 12 and set(sent) <= pairs
    shape = doc["workload"]["request_shape"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert shape["source"] == "sharegpt" and shape["dataset_sha256"] == digest and shape["turns"] == "single"
    assert shape["input_tokens"]["distribution"] == "empirical"
    assert "prefix_cache" not in doc["metrics"]  # this endpoint reports no cached tokens
    # The dataset is controlled (contract 1.2's request_shape group): other data is another comparison.
    key = comparability.comparability_key(doc, "system")
    other = copy.deepcopy(doc)
    other["workload"]["request_shape"]["dataset_sha256"] = "0" * 64
    assert comparability.comparability_key(other, "system") != key
    other = copy.deepcopy(doc)
    other["metrics"]["prefix_cache"] = {"hit_rate": 0.5, "cached_tokens": 1, "prompt_tokens": 2,
                                        "requests_reporting": 1, "requests": 1}  # fmt: skip
    assert comparability.comparability_key(other, "system") == key  # a measurement, not a condition


def test_a_trace_is_replayed_at_its_times_over_the_speedup_with_its_lengths(endpoint, tmp_path):
    log, path = tmp_path / "received.jsonl", tmp_path / "trace.jsonl"
    rng = np.random.default_rng(5)
    stamps = np.cumsum(rng.uniform(60, 200, 24)).astype(int) + 5000  # ms, irregular, not starting at 0
    rows = [{"timestamp": int(t), "input_length": 10 + 3 * i, "output_length": 2 + i % 4} for i, t in enumerate(stamps)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2", "--capacity", "64", "--log", str(log))
    assert _run(url, tmp_path / "out", "--workload", "trace", "--dataset", str(path), "--trace-speedups", "2",
                "--duration", "60") == 0  # fmt: skip
    (doc,) = _docs(tmp_path / "out")
    received = _received(log)[1:]
    assert [(r["prompt_tokens"], r["max_tokens"]) for r in received] == [
        (row["input_length"], row["output_length"]) for row in rows
    ]
    expected = (stamps - stamps[0]) / 1e3 / 2
    arrived = np.asarray([r["t"] for r in received])
    error_ms = np.abs((arrived - arrived[0]) - expected) * 1e3
    # Gaps are 30-100 ms at 2x; a schedule not divided by 2 would be off by up to 1.4 s (median ~700 ms). The bounds
    # leave room for a busy host descheduling the client or the endpoint (whose clock stamps the arrival): at load
    # average 14 on 2 cores, 60 replayed requests arrived within median 1.3 ms, p90 11.9 ms, max 195 ms.
    assert np.median(error_ms) < 15 and np.quantile(error_ms, 0.9) < 60, error_ms
    assert doc["scenario"]["arrival"] == "trace" and doc["scenario"]["sweep"]["mode"] == "request-rate"
    assert doc["scenario"]["target_qps"] == pytest.approx((len(rows) - 1) / expected[-1], rel=1e-3)
    assert doc["workload"]["request_shape"]["source"] == "trace"


def test_a_stated_shared_prefix_reaches_the_cache_and_its_hit_rate_is_recorded(endpoint, tmp_path):
    log = tmp_path / "received.jsonl"
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2", "--capacity", "64", "--prefix-cache", "--log", str(log))
    assert _run(url, tmp_path / "out", "--input-tokens", "64", "--output-tokens", "3", "--shared-prefix", "0.5",
                "--request-rates", "8") == 0  # fmt: skip
    (doc,) = _docs(tmp_path / "out")
    received = _received(log)[1:]
    cache = doc["metrics"]["prefix_cache"]
    # The truth: 32 shared words are 2 whole blocks, cached for every request after the first; the rest is drawn.
    n = len(received)
    assert [r["cached_tokens"] for r in received] == [0] + [32] * (n - 1)
    assert cache == {"hit_rate": round(32 * (n - 1) / (64 * n), 6), "cached_tokens": 32 * (n - 1),
                     "prompt_tokens": 64 * n, "requests_reporting": n, "requests": n}  # fmt: skip
    assert doc["workload"]["request_shape"]["shared_prefix"] == {"ratio": 0.5, "groups": 1}
    assert "source" not in doc["workload"]["request_shape"]  # a synthetic shape stays as 1.2 wrote it


def test_sessions_send_each_turn_after_the_answer_carrying_the_conversation(endpoint, tmp_path):
    log, path = tmp_path / "received.jsonl", _sharegpt_file(tmp_path, conversations=6, turns=3)
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2", "--capacity", "64", "--log", str(log))
    sessions = read_sharegpt(path).sessions
    target = Target(url, "simulated", "chat", timeout_s=60)
    run = asyncio.run(closed_loop_sessions(target, iter(sessions), 2, SessionBudget(0.0, 100, 100), max_turns=3))
    assert sorted({r.session for r in run.records}) == list(range(6)) and len(run.records) == 18
    for number, session in enumerate(sessions):
        records = sorted((r for r in run.records if r.session == number), key=lambda r: r.turn)
        assert [r.turn for r in records] == [1, 2, 3] and all(r.outcome == "completed" for r in records)
        for before, after, turn in zip(records[:-1], records[1:], session[1:], strict=True):
            assert after.sent >= before.end  # the next turn waits for the answer
            # The endpoint counted the whole conversation: what came before, its answer, the new turn.
            assert after.input_tokens == before.input_tokens + before.output_tokens + len(turn.text.split())
        assert [r.output_tokens for r in records] == [t.output_tokens for t in session]
    assert sorted(r["messages"] for r in _received(log)) == [1] * 6 + [3] * 6 + [5] * 6


def test_a_level_of_sessions_records_its_sessions_and_each_turn(endpoint, tmp_path):
    path = _sharegpt_file(tmp_path, conversations=8, turns=3)
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2", "--capacity", "64")
    assert _run(url, tmp_path / "out", "--workload", "sharegpt", "--dataset", str(path), "--max-turns", "2",
                "--concurrency", "2") == 0  # fmt: skip
    (doc,) = _docs(tmp_path / "out")
    sessions = doc["metrics"]["sessions"]
    assert sessions["started"] == sessions["completed"] >= 6
    first, second = sessions["turns"]
    assert (first["turn"], second["turn"]) == (1, 2) and first["sent"] == second["sent"] == sessions["started"]
    assert second["input_tokens_mean"] > first["input_tokens_mean"]  # the context grew
    shape = doc["workload"]["request_shape"]
    assert shape["turns"] == "multi" and shape["max_turns"] == 2 and doc["scenario"]["arrival"] == "closed-loop"


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--workload", "trace", "--trace-speedups", "1"], ["trace.jsonl:line 3", "timestamp", "goes backwards"]),
        (["--workload", "sharegpt", "--request-rates", "4"], ["record 0", "conversations"]),
        (["--workload", "sharegpt", "--max-turns", "2", "--request-rates", "4"], ["/max_turns", "closed loop"]),
        (["--workload", "trace", "--request-rates", "4"], ["/load/mode", "--trace-speedups"]),
        (["--workload", "sonnet", "--shared-prefix", "0.5", "--request-rates", "4"], ["/shared_prefix"]),
        (["--shared-prefix", "1.5", "--request-rates", "4"], ["/shared_prefix", "below 1"]),
        (
            ["--workload", "trace", "--trace-speedups", "1", "--duration", "1"],
            ["at speed-up 1", "are 20 spanning 0.000 s", "over a positive span"],
        ),
    ],
)
def test_a_bad_file_or_workload_is_refused_before_any_request(endpoint, tmp_path, capsys, extra, words):
    log = tmp_path / "received.jsonl"
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2", "--log", str(log))
    bad = tmp_path / ("trace.jsonl" if "trace" in extra else "data.json")
    if "--duration" in extra:  # a well-formed trace whose 20 requests all arrive at once: no rate to replay
        bad.write_text('{"timestamp": 0, "input_length": 5, "output_length": 2}\n' * 20)
    elif "trace" in extra:
        bad.write_text('{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
                       '{"timestamp": 9, "input_length": 5, "output_length": 2}\n'
                       '{"timestamp": 4, "input_length": 5, "output_length": 2}\n')  # fmt: skip
    else:
        bad.write_text('[{"id": 1}]')
    dataset = ["--dataset", str(bad)] if "--workload" in extra else []
    assert _run(url, tmp_path / "out", *extra, *dataset) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert _received(log) == [] and not (tmp_path / "out").exists()
