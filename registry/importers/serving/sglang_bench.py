"""SGLang's `python -m sglang.bench_serving --output-file` results: recognised by their keys and refused in words,
not imported (yet).

Each run appends one result JSON a line (sglang 0.5.23, sglang/benchmark/serving.py). What an import would need
and the files do not give, or protocol 1.2 cannot say:
- `software.serving.tool.name` is an enum of the tools protocol 1.2 knows (benchreg, aiperf, guidellm, vLLM's
  bench serve): naming SGLang's takes a protocol minor;
- the result records no model and no request count: without `--output-details` the failed requests are not
  counted anywhere (`completed` is the successful ones), so `metrics.requests` could not add up;
- its ITL times the gaps between stream chunks (a chunk may hold several tokens), as vLLM's does;
- a closed-loop level (`--request-rate inf`, the default) is written as `"request_rate": Infinity`, which is not
  JSON (Python's json.dumps of float("inf")), so the lines are refused by any strict JSON reader.
Without this check such a file was refused as "not JSON nor a YAML mapping", which named no tool.
"""

from __future__ import annotations

import json
import re

from .errors import ServingImportError

KNOWN = "0.5.23"
# Keys every result line of sglang 0.5.23 has and no other tool's file has together.
KEYS = frozenset(
    {"backend", "dataset_name", "request_rate", "max_concurrency", "random_input_len", "server_info", "duration",
     "completed", "total_output_tokens_retokenized", "accept_length", "max_concurrent_requests"}
)  # fmt: skip
MAX_LINE = 64 * 1024 * 1024
_LEADING_SPACE = re.compile(rb"\s*")


def is_sglang(raw: bytes) -> bool:
    """Whether the file's first line is a result of SGLang's bench_serving (Python's json reads its Infinity).
    Every imported file is asked, so nothing is copied until its first line names a key of SGLang's."""
    spaces = _LEADING_SPACE.match(raw)
    start = spaces.end() if spaces else 0
    if raw[start : start + 1] != b"{":
        return False
    end = raw.find(b"\n", start, start + MAX_LINE)
    end = start + MAX_LINE if end < 0 else end
    if raw.find(b'"total_output_tokens_retokenized"', start, end) < 0:
        return False
    first = raw[start:end]
    try:
        data = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.keys() >= KEYS


def refuse(where: str) -> ServingImportError:
    return ServingImportError(
        f"SGLang's bench_serving results (python -m sglang.bench_serving --output-file; keys of sglang {KNOWN}): "
        "recognised, not imported. Protocol 1.2 names the measuring tool among benchreg, aiperf, guidellm and "
        "vLLM's bench serve only, and the file records neither the model nor, without --output-details, how many "
        "requests failed. Measure the endpoint with `benchreg run serving`, aiperf, guidellm or `vllm bench serve` "
        "to import its figures; nothing was stored",
        where=where,
    )
