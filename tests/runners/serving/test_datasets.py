"""Dataset readers: what each file gives, and each bad file refused naming the file, the line or record, the field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from runners.serving.datasets import (
    SONNET_BASE,
    DatasetInvalid,
    SharedPrefix,
    read_sharegpt,
    read_sonnet,
    read_trace,
    trace_schedule,
)
from runners.serving.loadgen import Prompt


def _sharegpt(tmp_path, conversations):
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps([{"id": str(i), "conversations": c} for i, c in enumerate(conversations)]))
    return path


def _turns(*pairs):
    out = []
    for human, gpt in pairs:
        out += [{"from": "human", "value": human}, {"from": "gpt", "value": gpt}]
    return out


def test_sharegpt_takes_each_human_turn_with_the_reply_length_as_its_output_cap(tmp_path):
    path = _sharegpt(tmp_path, [
        _turns(("one two three four five", "a b c d e f g"), ("six seven eight nine", "h i j k")),
        _turns(("too short", "a b c d e")),  # vLLM's minimum: a prompt under 4 tokens is skipped
        [{"from": "human", "value": "alone without any answer"}],  # under two turns: skipped
    ])  # fmt: skip
    read = read_sharegpt(path)
    assert read.skipped == 2
    [session] = read.sessions
    assert [(t.text, t.output_tokens) for t in session] == [("one two three four five", 7), ("six seven eight nine", 4)]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('[{"conversations": [', ["sharegpt.json:line 1", "JSON"]),
        ('{"conversations": []}', ["sharegpt.json", "/", "JSON list"]),
        ('[{"id": 1}]', ["record 0", "conversations"]),
        ('[{"conversations": [{"from": "human", "value": 3}]}]', ["record 0", "conversations/0/value"]),
        ('[{"conversations": [{"value": "hi there you all"}]}]', ["record 0", "conversations/0/from"]),
    ],
)
def test_a_malformed_sharegpt_file_is_refused_naming_the_record_and_field(tmp_path, content, words):
    path = tmp_path / "sharegpt.json"
    path.write_text(content)
    with pytest.raises(DatasetInvalid) as caught:
        read_sharegpt(path)
    assert all(w in str(caught.value) for w in words), str(caught.value)


def test_a_missing_file_is_refused_and_never_fetched(tmp_path):
    with pytest.raises(DatasetInvalid, match=r"not found .*nothing is downloaded"):
        read_sharegpt(tmp_path / "absent.json")


def test_sonnet_prompts_share_the_fixed_prefix_and_have_the_input_length(tmp_path):
    path = tmp_path / "sonnet.txt"
    path.write_text("\n".join(f"line {i} of a poem with nine words in it" for i in range(30)) + "\n")
    sonnet = read_sonnet(path, input_tokens=80, prefix_tokens=30, output_tokens=7)
    prompts = sonnet.prompts(20, np.random.default_rng(1))
    fixed = sonnet.fixed_tokens()
    assert fixed == len(SONNET_BASE.split()) + 2 * 10  # round((30 - 10) / 10) = 2 prefix lines of 10 words
    heads = {" ".join(p.text.split()[:fixed]) for p in prompts}
    assert len(heads) == 1 and next(iter(heads)).startswith(SONNET_BASE)
    assert all(len(p.text.split()) == p.input_tokens == 80 and p.max_tokens == 7 for p in prompts)
    assert len({p.text for p in prompts}) > 1  # the rest is drawn


def test_a_sonnet_input_length_not_above_its_fixed_prefix_is_refused(tmp_path):
    path = tmp_path / "sonnet.txt"
    path.write_text("one two three four five\n" * 20)
    with pytest.raises(DatasetInvalid, match="input tokens: above the fixed prefix"):
        read_sonnet(path, input_tokens=20, prefix_tokens=40, output_tokens=5)
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(DatasetInvalid, match=r"empty\.txt: lines: no non-empty line"):
        read_sonnet(tmp_path / "empty.txt", 100, 20, 5)


def test_a_mooncake_trace_gives_arrivals_in_seconds_and_blocks_shared_by_hash_id(tmp_path):
    path = tmp_path / "trace.jsonl"
    rows = [
        {"timestamp": 1000, "input_length": 40, "output_length": 5, "hash_ids": [7, 8, 9]},
        {"timestamp": 1500, "input_length": 30, "output_length": 3, "hash_ids": [7, 8]},
        {"timestamp": 2250, "input_length": 12, "output_length": 9},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    trace = read_trace(path)
    assert [r.offset_s for r in trace] == [0.0, 0.5, 1.25]
    prompts, offsets = trace_schedule(trace, speedup=2.0, seconds=60, most=100, block_tokens=16)
    assert list(offsets) == [0.0, 0.25, 0.625]
    assert [(p.input_tokens, len(p.text.split()), p.max_tokens) for p in prompts] == [(40, 40, 5), (30, 30, 3),
                                                                                        (12, 12, 9)]  # fmt: skip
    assert prompts[0].text.split()[:30] == prompts[1].text.split()  # blocks 7 and 8 (then cut to 30 tokens)
    # The window: only the arrivals within `seconds` at the replayed pace, at most `most`.
    assert len(trace_schedule(trace, 2.0, 0.3, 100, 16)[0]) == 2 and len(trace_schedule(trace, 1, 60, 1, 16)[0]) == 1


def test_an_azure_csv_trace_reads_its_dates_and_columns(tmp_path):
    path = tmp_path / "azure.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:50.9951690,396,109\n"
    )
    trace = read_trace(path)
    assert [r.input_tokens for r in trace] == [374, 396] and [r.output_tokens for r in trace] == [44, 109]
    assert trace[1].offset_s == pytest.approx(4.314579, abs=1e-6)


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (['{"timestamp": 0, "input_length": 5, "output_length": 2}', '{"timestamp": 10, "input_length": 5, '
          '"output_length": 2}', '{"timestamp": 5, "input_length": 5, "output_length": 2}'],
         ["line 3", "timestamp", "goes backwards"]),
        (['{"timestamp": 0, "input_length": 5, "output_length": 2}', '{"timestamp": 1, "input_length": 5, '
          '"output_length": 0}'], ["line 2", "output_length", "from 1"]),
        (['{"timestamp": 0, "input_length": -3, "output_length": 2}'], ["line 1", "input_length"]),
        (['{"timestamp": 0, "output_length": 2}'], ["line 1", "input_length", "missing"]),
        (['{"timestamp": 0, "input_length": 5, "output_length": 2}', "{broken"], ["line 2", "JSON"]),
        (['{"timestamp": "soon", "input_length": 5, "output_length": 2}'], ["line 1", "timestamp", "'soon'"]),
        (['{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": ["a"]}'], ["line 1", "hash_ids"]),
        (['{"timestamp": 0, "input_length": 5, "output_length": 2}'], ["records", "at least 2"]),
    ],
)  # fmt: skip
def test_a_bad_trace_is_refused_naming_the_line_and_field(tmp_path, rows, words):
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(DatasetInvalid) as caught:
        read_trace(path)
    assert all(w in str(caught.value) for w in words), str(caught.value)


def test_a_bad_csv_trace_names_its_line(tmp_path):
    path = tmp_path / "azure.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n0,10,5\n1,10,\n")
    with pytest.raises(DatasetInvalid, match=r"azure.csv:line 3: GeneratedTokens"):
        read_trace(path, "s")


def test_a_shared_prefix_is_its_ratio_of_each_prompt_and_keeps_every_length():
    prompts = [Prompt(" ".join(f"own{i}x{j}" for j in range(n)), 4, n) for i, n in enumerate((40, 40, 100, 20))]
    shared = SharedPrefix(0.5, groups=1).apply(prompts, seed=3)
    for before, after in zip(prompts, shared, strict=True):
        said = after.text.split()
        assert len(said) == before.input_tokens  # lengths honoured
        cut = round(0.5 * before.input_tokens)
        assert said[cut:] == before.text.split()[: before.input_tokens - cut]  # its own words follow the prefix
    heads = [s.text.split()[:10] for s in shared]
    assert all(h == heads[0] for h in heads)  # one group: every prompt starts alike
    grouped = SharedPrefix(0.5, groups=50).apply(prompts * 10, seed=3)
    assert len({" ".join(p.text.split()[:10]) for p in grouped}) > 1


@pytest.mark.parametrize("ratio", [-0.1, 1.0, float("nan")])
def test_a_shared_prefix_ratio_outside_0_to_1_is_refused(ratio):
    with pytest.raises(ValueError, match="shared-prefix ratio"):
        SharedPrefix(ratio)
