"""Every number a `benchreg` command takes is read with its range, and a value outside it is refused before anything
runs, naming the option. Found by trying 0, -1 and nan on every numeric option: `--threads 0`, `--steps 0` or
`--concurrency 0` quietly became the default; `--threads -1`, `run distributed-training --nproc-per-node 0`,
`run collectives --nproc-per-node 0` and `serve-simulated --ttft-ms -1` ended in a traceback; `--min-seconds nan` never
ended; `--latency-slo-ms -1` was refused only after the whole measurement, as an invalid document.

The parsers are those `benchreg` builds (tests/test_help_texts.py takes them as each command starts to parse)."""

from __future__ import annotations

import argparse
import math

import pytest

from runners import cli as runners_cli
from runners.arguments import count, number
from tests.test_help_texts import every_option

# Options read as a bare int or float and checked after parsing, each check naming the option or the document field
# it fills: a deployment's counts become the run's (or the imported runs') fields, refused by pointer before any load
# is sent or anything is stored ("/system/nodes: 0 must be at least 1"); `import` and `submit` check their batch
# sizes, `witness serve` its limits before it listens.
DEPLOYMENT_COUNTS = ("--accelerator-count", "--nodes", "--tensor-parallel", "--expert-parallel", "--pipeline-parallel")
CHECKED_AFTER_PARSING = {
    *(("benchreg run serving", flag) for flag in (*DEPLOYMENT_COUNTS, "--data-parallel")),
    *(("benchreg import", flag) for flag in (*DEPLOYMENT_COUNTS, "--data-parallel", "--batch-size", "--attempts")),
    ("benchreg submit", "--batch-size"),
    *(("benchreg witness serve", flag) for flag in ("--max-connections", "--read-timeout", "--request-deadline")),
}


SERVING = ["run", "serving", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1"]


def numeric_options() -> list[tuple[str, argparse.Action]]:
    return [(prog, action) for prog, action in every_option() if isinstance(action.type, count | number)]


def test_every_number_is_read_with_its_range() -> None:
    bare = [
        f"{prog} {'/'.join(action.option_strings) or action.dest}"
        for prog, action in every_option()
        if action.type in (int, float)
        and not any((prog, option) in CHECKED_AFTER_PARSING for option in action.option_strings)
    ]
    assert not bare, f"read as a bare int or float, with no range: {bare}"


@pytest.mark.parametrize("prog,action", numeric_options(), ids=lambda x: x if isinstance(x, str) else x.dest)
def test_each_range_refuses_its_edges_and_takes_its_default(prog: str, action: argparse.Action) -> None:
    kind = action.type
    assert isinstance(kind, count | number)
    outside: list[str] = ["nan", "inf", "x"]
    if isinstance(kind, count):
        outside += [str(kind.low - 1), str(kind.high + 1), "1.5"]
        assert kind(str(kind.low)) == kind.low and kind(str(kind.high)) == kind.high
    else:
        if kind.above is not None:
            outside.append(repr(kind.above))
        if kind.low is not None:
            outside.append(repr(math.nextafter(kind.low, -math.inf)))
        if kind.high is not None:
            outside.append(repr(math.nextafter(kind.high, math.inf)))
    for text in outside:
        with pytest.raises(argparse.ArgumentTypeError):
            kind(text)
    if action.default is not None:  # the default lies in the range it is read with
        assert kind(str(action.default)) == action.default, f"{prog} {action.option_strings}: default out of range"


@pytest.mark.parametrize(
    "argv,says",
    [
        (["run", "inference", "--workload", "mlp-tiny", "--threads", "0"], "argument --threads: 0 is not from 1"),
        (["run", "inference", "--workload", "mlp-tiny", "--threads", "-1"], "argument --threads: -1 is not from 1"),
        (["run", "training", "--workload", "mlp-tiny", "--steps", "0"], "argument --steps: 0 is not from 1"),
        (["run", "inference", "--workload", "mlp-tiny", "--min-seconds", "nan"], "'nan' is not a finite number"),
        (
            ["run", "inference", "--workload", "mlp-tiny", "--scenario", "server", "--latency-slo-ms", "-1"],
            "argument --latency-slo-ms: -1 is not above 0",
        ),
        (["run", "inference", "--workload", "mlp-tiny", "--concurrency", "0"], "argument --concurrency: 0 is not"),
        (
            ["run", "distributed-training", "--workload", "mlp-tiny", "--nproc-per-node", "0"],
            "argument --nproc-per-node: 0 is not from 1",
        ),
        (["run", "collectives", "--nproc-per-node", "0"], "argument --nproc-per-node: 0 is not from 1"),
        (
            ["run", "inference", "--workload", "mlp-tiny", "--batch", "1,,2"],
            "comma-separated whole numbers, not '1,,2'",
        ),
        (
            ["run", "inference", "--workload", "mlp-tiny", "--batch", "8,0"],
            "a batch size: 0 is not from 1 to 1,000,000",
        ),
        ([*SERVING, "--duration", "nan"], "argument --duration: 'nan' is not a finite number"),  # it ran
        ([*SERVING, "--seed", "-1"], "argument --seed: -1 is not from 0"),  # a traceback from numpy
        ([*SERVING, "--ttft-slo-ms", "0"], "argument --ttft-slo-ms: 0 is not above 0"),  # every request failed it
        ([*SERVING, "--input-max", "0"], "argument --input-max: 0 is not from 1"),
        (["run", "collectives", "--min-bytes", "abc"], "a size is a number of bytes with an optional K, M or G"),
        (["run", "collectives", "--min-bytes", "inf"], "a size is a number of bytes with an optional K, M or G"),
    ],
)
def test_a_runner_refuses_before_it_runs(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    with pytest.raises(SystemExit) as exited:
        runners_cli.main([*argv, "--out", str(tmp_path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_collectives_say_which_bound_is_wrong() -> None:
    from runners.collectives import Options, sizes

    with pytest.raises(ValueError, match=r"^--min-bytes \(1,048,576\) must not exceed --max-bytes \(8\)$"):
        sizes(Options(min_bytes=1 << 20, max_bytes=8))
    with pytest.raises(ValueError, match=r"^--step-factor must be at least 2, not 1$"):
        sizes(Options(step_factor=1))


def test_a_runs_spec_and_its_command_read_each_number_with_the_same_range():
    """A registry job's spec (runners.spec.RunSpec) is held to FIELD_RANGES; `run inference` and `run training` read
    the same fields with the same objects, so a plan the registry accepts is one the command would take."""
    from runners.spec import FIELD_RANGES

    seen = set()
    for prog, action in every_option():
        if prog in ("benchreg run inference", "benchreg run training") and action.dest in FIELD_RANGES:
            assert action.type is FIELD_RANGES[action.dest], f"{prog} {action.option_strings}"
            seen.add(action.dest)
    assert seen == set(FIELD_RANGES) - {"batch_size"}  # --batch is a list of sizes, each held to SAMPLES
