"""The runs a question may rest on: each cited by its reference, and the reason a run does not answer the question."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import comparability as cmp
from .. import serving, sizing
from ..canonical import canonicalize
from ..derivation import derivation_of
from ..errors import value_at
from .question import Question


@dataclass(frozen=True)
class Evidence:
    """A candidate run: its document and how the answer cites it ({"id", "digest", "url", "trust"} from the
    registry: the answer lists each candidate's runs with it, so its trust is shown wherever the candidate is)."""

    document: Mapping[str, Any]
    ref: Mapping[str, Any]


def accelerator_model(doc: Mapping[str, Any]) -> str:
    """The run's first accelerator model, or its host CPU when it has no accelerator."""
    accels = (doc.get("system") or {}).get("accelerators") or []
    return (
        str(accels[0].get("model"))
        if accels
        else str(((doc.get("system") or {}).get("host") or {}).get("cpu_model") or "host CPU")
    )


def accelerator_count(doc: Mapping[str, Any]) -> int:
    """Accelerators of the first model in the whole tested system (all nodes); 0 when it has none."""
    accels = (doc.get("system") or {}).get("accelerators") or []
    count = accels[0].get("count") if accels else 0
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


def configuration_key(doc: Mapping[str, Any]) -> str:
    """How prices name this system: '8x NVIDIA H100-SXM-80GB' (accelerators in the tested system, then the model);
    a system with no accelerator by its nodes and host CPU ('1x AMD EPYC 9454'), never '0x'."""
    count = accelerator_count(doc)
    if not count:
        nodes = (doc.get("system") or {}).get("nodes")
        count = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0 else 1
    return f"{count}x {accelerator_model(doc)}"


def vendor(doc: Mapping[str, Any]) -> str:
    """The run's first accelerator vendor; "" when it has none."""
    accels = (doc.get("system") or {}).get("accelerators") or []
    return str(accels[0].get("vendor") or "") if accels else ""


def origin(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The run's provenance.origin (round, division, availability); empty when absent."""
    return ((doc.get("provenance") or {}).get("origin")) or {}


def out_of_question(q: Question, doc: Mapping[str, Any]) -> str | None:
    """Why this run does not answer the question (None: it does). Filters first, then the iso-quality rule."""
    return (
        _other_workload(q, doc)
        or other_model(q, doc)
        or other_shape(q, doc)
        or not_a_candidate(q, doc)
        or not_measured(doc)
        or off_quality(q, doc)
        or _rate_out(q, doc)
    )


def not_measured(doc: Mapping[str, Any]) -> str | None:
    """A derived run repeats another run's measurement through the publisher's rule: an answer rests on measurements."""
    derivation = derivation_of(doc)
    return None if derivation is None else f"not a measurement but {derivation.words()}"


def _other_workload(q: Question, doc: Mapping[str, Any]) -> str | None:
    workload = doc.get("workload") or {}
    if doc.get("phase") != q.phase or workload.get("name") != q.workload:
        return f"another workload or phase ({doc.get('phase')} {workload.get('name')})"
    if q.workload_version and workload.get("version") != q.workload_version:
        return f"workload version {workload.get('version')}, the question asks {q.workload_version}"
    if (doc.get("scenario") or {}).get("kind") != q.scenario:
        return f"scenario {(doc.get('scenario') or {}).get('kind')}, the question asks {q.scenario}"
    return None


def served_model(doc: Mapping[str, Any]) -> str | None:
    """The model a served run measured (software.serving.model); None for a run that served none (e.g. MLPerf)."""
    model = ((doc.get("software") or {}).get("serving") or {}).get("model")
    return model if isinstance(model, str) and model else None


def request_shape(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The run's request shape (workload.request_shape); None where it states none (e.g. an MLPerf run)."""
    shape = (doc.get("workload") or {}).get("request_shape")
    return shape if isinstance(shape, Mapping) and shape else None


def shape_key(shape: Mapping[str, Any] | None) -> str:
    """What makes two request shapes the same shape: the fields of it the comparability contract controls on the
    iso-quality axis (not its notes, each run's own words, which the contract discloses), in canonical form; "" for
    none stated."""
    if shape is None:
        return ""
    controlled = cmp.controlled_projection({"workload": {"request_shape": dict(shape)}}, "iso-quality")
    return canonicalize(controlled).decode()


def other_shape(q: Question, doc: Mapping[str, Any]) -> str | None:
    """Why a run does not answer a question that names its request shape: requests of another shape are another
    load (the shape is controlled on the iso-quality axis)."""
    if q.request_shape is None:
        return None
    shape = request_shape(doc)
    if shape_key(shape) == shape_key(q.request_shape):
        return None
    asked = serving.shape_words(q.request_shape)
    if shape is None:
        return f"states no request shape (workload.request_shape), the question asks for {asked}"
    return f"requests of {serving.shape_words(shape)}, the question asks for {asked}"


def weights_digest(doc: Mapping[str, Any]) -> str | None:
    """The digest of the weights the run loaded (workload.model.digest), None when it states none."""
    digest = ((doc.get("workload") or {}).get("model") or {}).get("digest")
    return digest if isinstance(digest, str) and digest else None


def same_model(asked: str, served: str) -> bool:
    """Whether a run serving `served` serves the model `asked` names: the same name (case aside), or, where the
    run names a local checkout by its path ('/lustre/fsw/models/Kimi-K2.5-NVFP4'), the checkout's folder name:
    the folders above it say where the weights lie, not what they are."""
    if asked.casefold() == served.casefold():
        return True
    return served.startswith(("/", "./", "~")) and served.rstrip("/").rsplit("/", 1)[-1].casefold() == asked.casefold()


def other_model(q: Question, doc: Mapping[str, Any]) -> str | None:
    """Why a run does not serve the model the question names (None: it does, or the question names none). The model
    served is part of the workload of served evidence: runs of two models never answer one question."""
    if q.served_model is None:
        return None
    served = served_model(doc)
    if served is None:
        return f"states no model served (software.serving.model), the question asks for {q.served_model}"
    if not same_model(q.served_model, served):
        return f"serves {served}, the question asks for {q.served_model}"
    if q.served_weights is not None and weights_digest(doc) != q.served_weights:
        held = weights_digest(doc)
        stated = f"weights {held}" if held else "no weights digest (workload.model.digest)"
        return f"serves {served} with {stated}, the question asks for weights {q.served_weights}"
    return None


def not_a_candidate(q: Question, doc: Mapping[str, Any]) -> str | None:
    if q.accelerator_models and accelerator_model(doc) not in q.accelerator_models:
        return f"accelerator {accelerator_model(doc)} is not among the candidates asked for"
    if q.accelerator_vendors and vendor(doc) not in q.accelerator_vendors:
        return f"vendor {vendor(doc) or 'not stated'} is not among the candidates asked for"
    weights = (doc.get("precision") or {}).get("weights")
    if q.precisions and weights not in q.precisions:
        return f"precision {weights} is not among the candidates asked for"
    if q.exclude_preview and origin(doc).get("availability") == "preview":
        return "a preview system, and the question excludes previews"
    return None


def off_quality(q: Question, doc: Mapping[str, Any]) -> str | None:
    """The iso-quality rule: the axis's requirements, then the question's quality target and metric.

    A run that measured no quality (a served model's load sweep never does) answers a question that states no
    quality target, as a candidate with the `no-measured-quality` gap (DECISIONS.md, Gaps); a question that states
    one leaves it out, since nothing shows the target met."""
    quality = (doc.get("metrics") or {}).get("quality") or {}
    missing = [r for r in cmp.contract().requirements_for("iso-quality") if value_at(doc, r.pointer) is None]
    if missing and not asks_quality(q):
        return None
    if missing:
        return (
            f"refused from the iso-quality axis: no {missing[0].label} ({missing[0].reason}), and {_quality_asked(q)}"
        )
    if q.quality_target_ratio is not None and quality.get("target_ratio") != q.quality_target_ratio:
        held = quality.get("target_ratio")
        return (
            f"{'states no quality target' if held is None else f'held to a quality target of {held}'} "
            f"of the reference, the question asks {q.quality_target_ratio:g}"
        )
    if q.quality_metric and quality.get("metric") != q.quality_metric:
        return f"quality measured as {quality.get('metric')}, the question asks {q.quality_metric}"
    return None


def asks_quality(q: Question) -> bool:
    """Whether the question states a quality target (a ratio of the reference, or a metric)."""
    return q.quality_target_ratio is not None or bool(q.quality_metric)


def measured_quality(doc: Mapping[str, Any]) -> bool:
    """Whether the run states what the iso-quality axis requires (its measured quality)."""
    return cmp.meets_requirements(doc, "iso-quality")


def _quality_asked(q: Question) -> str:
    ratio = f" at least {q.quality_target_ratio:g} of the reference" if q.quality_target_ratio is not None else ""
    metric = f" measured as {q.quality_metric}" if q.quality_metric else ""
    return f"the question asks quality{ratio}{metric}"


def _rate_out(q: Question, doc: Mapping[str, Any]) -> str | None:
    found = sizing.sustainable_rate(doc, q.demand_unit)
    if found is not None and (problem := sizing.rate_problem(found[1])) is not None:
        return f"{found[0]}: {problem}"
    return None
