"""An authored miniature of github.com/mlcommons/logging, as a git repository, for scripts/mlperf-training-rules.

It holds the files the script reads, in the forms mlcommons/logging writes them (benchmark_meta.py's dicts, the
result summarizer's scaling and dropped-runs code, config.yaml's table titles, and the compliance checker's
per-round common.yaml and <division>_<benchmark>.yaml), for three rulesets: 0.7.0 (older than the script reads),
1.0.0 (the fixed 30-minute initialization check) and 4.0.0 (compile_time_mins per division). Its benchmarks cover
each shape of quality check the script reads or refuses: a plain bound, a loss (upper bound), the Stable Diffusion
checker's grouped metrics, a bound on `s['target_accuracy']`, a YAML with no check and a missing YAML.

A clone of the real repository is fetched data, which is never committed; this tree is small enough to author.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

CHECKER = "mlperf_logging/compliance_checker"
COMMIT_DATE = "2026-01-15T12:00:00+00:00"

META = """\
# Result file counts and allowed benchmarks per usage and ruleset.

_ALL_RESULT_FILE_COUNTS = {
    'training': {
        'bert': 10,
        'gpt3': 3,
        'llama2_70b_lora': 10,
        'stable_diffusion': 10,
        'unet3d': 40,
    },
    'hpc': {
        'deepcam': 5,
    },
}

_ALL_ALLOWED_BENCHMARKS = {
    'training': {
        '0.7': ['bert', 'unet3d'],
        '1.0': ['bert', 'unet3d'],
        '4.0': ['bert', 'gpt3', 'llama2_70b_lora', 'stable_diffusion', 'unet3d', 'bert'],
    },
    'hpc': {
        '1.0': ['deepcam'],
    },
}


def get_allowed_benchmarks(usage, ruleset):
    return _ALL_ALLOWED_BENCHMARKS[usage][ruleset]
"""

SUMMARIZER = """\
import json
import os


def _get_scaling_factor(folder):
    scaling_factor = 1.0
    scaling_file = os.path.join(folder, 'scaling.json')
    if os.path.isfile(scaling_file):
        with open(scaling_file, 'r') as f:
            contents = json.load(f)
        scaling_factor = contents['scaling_factor']
    return scaling_factor


def _compute_strong_score_standalone(benchmark, system, has_power, benchmark_folder, usage, ruleset, desc={}):
    scores = sorted(desc['scores'])
    max_dropped_scores = 4 if benchmark == "unet3d" else 1
    dropped = scores[max_dropped_scores:len(scores) - max_dropped_scores]
    score = sum(dropped) / len(dropped)
    score *= scaling_factor
    return score
"""

CONFIG = """\
columns:
  training:
    "1.0.0":
      bert: ["Benchmark results (minutes)", "NLP", "Wikipedia", "BERT"]
      unet3d: ["", "Image segmentation (medical)", "KiTS19", "3D U-Net"]
      default: [" ", " ", " ", " "]
    "4.0.0":
      bert: ["Benchmark results (minutes)", "NLP", "Wikipedia", "BERT"]
      gpt3: ["", "LLM", "C4", "GPT3"]
      llama2_70b_lora: ["", "LLM finetune", "SCROLSS Gov Report", "LLama2 70B-LoRA"]
      unet3d: ["", "Image segmentation (medical)", "KiTS19", "3D U-Net"]
      default: [" ", " ", " ", " "]
  hpc:
    "1.0.0":
      deepcam: ["", "Climate segmentation", "CAM5+TECA", "DeepCAM"]
"""

COMMON_1_0 = """\
- KEY:
    NAME:  submission_benchmark
    REQ:   EXACTLY_ONE
    CHECK: " v['value'] in ['bert', 'unet3d'] "

- KEY:
    NAME: init_stop
    REQ:  EXACTLY_ONE
    CHECK: "ll.timestamp - s['first_init_start'] < (30*60*1e3)"
"""

COMMON_4_0 = (
    """\
- KEY:
    NAME:  submission_division
    REQ:   EXACTLY_ONE
    CHECK: " v['value'] in ['closed', 'open'] "
"""
    "    POST:  \" enqueue_config('training_4.0.0/{}_common.yaml'.format(v['value'])); "
    "s['compile_time_mins'] = 240 if v['value'] == 'open' else 30 \"\n"
    """

- KEY:
    NAME: init_stop
    REQ:  EXACTLY_ONE
    CHECK: "ll.timestamp - s['first_init_start'] < (s['compile_time_mins']*60*1e3)"
"""
)


def _quality(name: str, check: str) -> str:
    return f"""\
- KEY:
    NAME:  global_batch_size
    REQ:   EXACTLY_ONE

- KEY:
    NAME:  {name}
    REQ:   AT_LEAST_ONE
    CHECK:
        - "'epoch_num' in v['metadata']"
    ATLEAST_ONE_CHECK: "{check}"
"""


# The form of mlcommons/logging's closed_stable_diffusion.yaml: a virtual key made of FID and CLIP lines.
STABLE_DIFFUSION_CODE = """\
- BEGIN:
    CODE: |
        from dataclasses import replace
        agg_eval_lines = {}
        for line in loglines:
            if line.key == "eval_accuracy" and 'metric' in line.value['metadata']:
                samples_count = line.value['metadata']['samples_count']
                if samples_count not in agg_eval_lines:
                    new_line = replace(line) # Make a copy
                    new_line.key = "aggregated_eval_accuracy"
                    new_line.value = {'value': {'samples_count': samples_count}, 'metadata':{}}
                    agg_eval_lines[samples_count] = new_line
                agg_eval_lines[samples_count].value['value'][line.value['metadata']['metric']] = line.value['value']
        loglines.extend(agg_eval_lines.values())


"""

CLOSED_SD_CHECK = "(0.0 <= v['value']['FID'] <= 90.0) and (0.15 <= v['value']['CLIP'] <= 1.0)"
FILES_4_0 = {
    "common.yaml": COMMON_4_0,
    "closed_bert.yaml": _quality("eval_accuracy", "(v['value'] >= 0.720) and v['value'] < 1.0"),
    "open_bert.yaml": _quality("eval_accuracy", "v['value'] < 1.0"),
    "closed_gpt3.yaml": _quality("eval_accuracy", "v['value'] > s['target_accuracy']"),
    "open_gpt3.yaml": _quality("eval_accuracy", "v['value'] < 1.0 or v['value'] > 2.0"),
    "closed_llama2_70b_lora.yaml": _quality("eval_accuracy", "v['value'] <= 0.925 and v['value'] > -0.5"),
    "open_llama2_70b_lora.yaml": _quality("eval_accuracy", "v['value'] <= 0.925"),
    "closed_stable_diffusion.yaml": STABLE_DIFFUSION_CODE + _quality("aggregated_eval_accuracy", CLOSED_SD_CHECK),
    "closed_unet3d.yaml": _quality("eval_accuracy", "v['value'] >= 0.908"),
    "open_unet3d.yaml": "- KEY:\n    NAME:  eval_accuracy\n    REQ:   AT_LEAST_ONE\n",  # no quality target
}
FILES_1_0 = {
    "common.yaml": COMMON_1_0,
    "closed_bert.yaml": _quality("eval_accuracy", "v['value'] >= 0.712"),
    "open_bert.yaml": _quality("eval_accuracy", "v['value'] < 1.0"),
    "closed_unet3d.yaml": _quality("eval_accuracy", "v['value'] >= 0.908"),
    "open_unet3d.yaml": _quality("eval_accuracy", "v['value'] < 1.0"),
}


def files() -> dict[str, str]:
    """Every file of the miniature, by path in the repository."""
    tree = {
        "README.md": "# MLPerf logging (an authored miniature for benchreg's tests)\n",
        "mlperf_logging/benchmark_meta.py": META,
        "mlperf_logging/result_summarizer/result_summarizer.py": SUMMARIZER,
        "mlperf_logging/result_summarizer/config.yaml": CONFIG,
        f"{CHECKER}/training_0.7.0/closed_bert.yaml": _quality("eval_accuracy", "v['value'] >= 0.712"),
        f"{CHECKER}/hpc_1.0.0/closed_deepcam.yaml": _quality("eval_accuracy", "v['value'] >= 0.82"),
    }
    tree.update({f"{CHECKER}/training_1.0.0/{name}": text for name, text in FILES_1_0.items()})
    tree.update({f"{CHECKER}/training_4.0.0/{name}": text for name, text in FILES_4_0.items()})
    return tree


def commit(repo: Path, tree: dict[str, str], message: str) -> str:
    """Write `tree` into the work tree of `repo` (a git repository made on first use) and commit it."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "benchreg tests",
        "GIT_AUTHOR_EMAIL": "tests@benchreg.invalid",
        "GIT_COMMITTER_NAME": "benchreg tests",
        "GIT_COMMITTER_EMAIL": "tests@benchreg.invalid",
        "GIT_AUTHOR_DATE": COMMIT_DATE,
        "GIT_COMMITTER_DATE": COMMIT_DATE,
    }

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True)
        return done.stdout.strip()

    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        git("init", "-q")
    for path, text in tree.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git("add", "-A")
    git("commit", "-q", "--no-gpg-sign", "-m", message)
    return git("rev-parse", "HEAD")


def line(text: str, needle: str) -> int:
    """1-based number of the line holding `needle`, found line by line."""
    return next(n for n, content in enumerate(text.splitlines(), 1) if needle in content)
