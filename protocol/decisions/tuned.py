"""Engine settings tuned level by level in a load sweep (InferenceX sets vLLM's max_num_seqs to each level's
concurrency): the sweep is one candidate, and says so where its knee is used (DECISIONS.md, "Which runs answer it":
engine settings that change capacity are part of the configuration)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import serving
from ..comparability import setting_words
from ..numbers import Style, number


def tuned_gap(
    every: Sequence[Mapping[str, Any]], at: Sequence[Mapping[str, Any]], sweep: Mapping[str, Any] | None
) -> list[dict[str, str]]:
    """A sweep whose engine was tuned level by level (e.g. max_num_seqs set to each level's concurrency) says so
    where its knee is used: the capacity is that of the engine as set for the knee's load, not of one configuration
    measured at every load, and a deployment sized from it must run those settings."""
    tuned = sorted({k for keys in serving.tuned_settings(every).values() for k in keys})
    if sweep is None or not tuned:
        return []
    level = (sweep.get("knee") or {}).get("level")
    here = f" ({level['words']}: {_settings_words(at[0], tuned)})" if level else ""
    message = (
        f"the engine was tuned at each load, not one configuration measured at every load: "
        f"{'; '.join(_tuned_words(every, k) for k in tuned)}. The capacity is that of the engine as set for the load "
        f"it is read at{here}, and a deployment sized from it must run those settings"
    )
    return [{"code": "tuned-per-level", "message": message}]


def _tuned_words(docs: Sequence[Mapping[str, Any]], key: str) -> str:
    """'max sequences set to the concurrency at every level (1 to 24)', or 'max sequences 64, 128 at concurrency
    8, 16' where the setting does not follow the load."""
    pairs = sorted(
        {
            (load[1], ((d.get("software") or {}).get("settings") or {}).get(key))
            for d in docs
            if (load := serving.offered_load(d))
        },
        key=lambda p: p[0],
    )
    mode = next((load[0] for d in docs if (load := serving.offered_load(d))), "concurrency")
    loads = [number(load, Style.SIGNIFICANT) for load, _ in pairs]
    if all(isinstance(v, int | float) and not isinstance(v, bool) and v == load for load, v in pairs):
        return f"{_name(key)} set to the {mode} at every level ({loads[0]} to {loads[-1]})"
    values = ", ".join("not stated" if v is None else str(v) for _, v in pairs)
    at = "concurrency" if mode == "concurrency" else "requests/s offered"
    return f"{_name(key)} {values} at {at} {', '.join(loads)}"


def _name(key: str) -> str:
    """The setting's name in words, as matrix cells and labels say it ("max sequences" for max_num_seqs)."""
    return setting_words(key, "").strip()


def _settings_words(doc: Mapping[str, Any], keys: Sequence[str]) -> str:
    settings = (doc.get("software") or {}).get("settings") or {}
    return ", ".join(setting_words(k, settings[k]) if k in settings else f"{_name(k)} not stated" for k in keys)
