"""The report's evidence: the attached JSON, the digest the signature names for it, and its contents (run texts,
comparison, contract and decision answer each hashing to their digests)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pyhanko.pdf_utils.reader import PdfFileReader

from protocol import canonicalize, digest_of
from verifier import ATTACHMENT_NAME, EVIDENCE_KIND, REASON_PREFIX
from verifier.verdict import Verdict, over_bounds, run_name, short

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def read_evidence(verdict: Verdict, reader: PdfFileReader, reason: str) -> dict[str, Any] | None:
    data = _attached_evidence(verdict, reader)
    if data is None:
        return None
    _digest_check(verdict, data, reason)
    evidence = _parsed_evidence(verdict, data)
    if evidence is not None:
        _summarise(verdict, evidence)
    return evidence


def _attached_evidence(verdict: Verdict, reader: PdfFileReader) -> bytes | None:
    try:
        data = attachment(reader, ATTACHMENT_NAME)
    except Exception as exc:  # a damaged stream: zlib, PDF syntax, recursion in the name tree
        if over_bounds(verdict, exc):
            return None
        verdict.add(
            "evidence-attached",
            False,
            f"{ATTACHMENT_NAME} is attached but cannot be read (its stream is "
            f"damaged: {type(exc).__name__}: {short(exc)})",
        )
        return None
    verdict.add(
        "evidence-attached",
        data is not None,
        f"{ATTACHMENT_NAME} attached" if data is not None else f"no {ATTACHMENT_NAME} attached",
    )
    return data


def _digest_check(verdict: Verdict, data: bytes, reason: str) -> None:
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    found = _DIGEST.search(reason) if reason.startswith(REASON_PREFIX) else None
    signed = found.group(0) if found else None
    verdict.report["evidence_digest"] = signed
    verdict.add(
        "evidence-digest",
        signed == actual,
        f"the evidence hashes to {actual}, the digest the signature names"
        if signed == actual
        else f"the evidence hashes to {actual}, but the signed digest is {signed or 'missing'}: the attachment "
        "was replaced or edited",
    )


def _parsed_evidence(verdict: Verdict, data: bytes) -> dict[str, Any] | None:
    try:
        evidence = json.loads(data)
    except ValueError as exc:
        verdict.add("evidence-contents", False, f"the evidence is not JSON: {short(exc)}")
        return None
    if not isinstance(evidence, dict) or evidence.get("kind") != EVIDENCE_KIND:
        verdict.add("evidence-contents", False, f"the evidence is not a {EVIDENCE_KIND} document")
        return None
    runs, report = evidence.get("runs"), evidence.get("report")
    if not isinstance(report, dict) or not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        verdict.add("evidence-contents", False, "the evidence lacks its report or runs sections")
        return None
    return evidence


def _summarise(verdict: Verdict, evidence: dict[str, Any]) -> None:
    """Copy the report's, runs' and decision's identifying fields into the verdict."""
    runs, report = evidence["runs"], evidence["report"]
    verdict.report.update({k: report.get(k) for k in ("id", "title", "decision", "requested_by")})
    verdict.report["runs"] = [{"id": r.get("id"), "digest": r.get("digest"), "system": r.get("system")} for r in runs]
    decision = evidence.get("decision")
    if isinstance(decision, dict):
        verdict.report["decision"] = {k: decision.get(k) for k in ("id", "title", "answer", "digest")}


def attachment(reader: PdfFileReader, name: str) -> bytes | None:
    """The embedded file called `name` in the document's EmbeddedFiles name tree (latest revision)."""
    try:
        tree = reader.root["/Names"]["/EmbeddedFiles"]
    except (KeyError, TypeError):
        return None
    for key, spec in _name_tree(tree):
        spec = spec.get_object()
        if name in (key, str(spec.get("/UF", "")), str(spec.get("/F", ""))):
            return bytes(spec["/EF"]["/F"].get_object().data)
    return None


def _name_tree(node: Any, depth: int = 0) -> list[tuple[str, Any]]:
    node = node.get_object()
    pairs = list(node.get("/Names", []))
    out = [(str(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs) - 1, 2)]
    if depth < 8:
        for kid in node.get("/Kids", []):
            out += _name_tree(kid, depth + 1)
    return out


def contents_check(verdict: Verdict, evidence: Mapping[str, Any]) -> None:
    runs = evidence.get("runs") or []
    problems = _run_and_comparison_problems(runs, evidence.get("comparison") or {})
    contract = evidence.get("contract") or {}
    if digest_of(canonicalize(contract.get("document"))) != contract.get("digest"):
        problems.append("the contract does not hash to its digest")
    decision = evidence.get("decision")
    if decision is not None:
        problems += decision_problems(decision, runs)
    verdict.add(
        "evidence-contents",
        not problems,
        "; ".join(problems)
        or f"{len(runs)} run texts, the comparison{', the decision answer' if decision is not None else ''} "
        "and the contract hash to their digests",
    )


def _run_and_comparison_problems(runs: Sequence[Mapping[str, Any]], comparison: Mapping[str, Any]) -> list[str]:
    problems = []
    for run in runs:
        if digest_of(str(run.get("canonical", "")).encode()) != run.get("digest"):
            problems.append(f"{run_name(run)}: its text does not hash to {run.get('digest')}")
    text = str(comparison.get("canonical", ""))
    if digest_of(text.encode()) != comparison.get("digest"):
        problems.append("the comparison text does not hash to its digest")
    else:
        listed = ((json.loads(text).get("inputs") or {}).get("runs")) or []
        if listed != [r.get("digest") for r in runs]:
            problems.append("the runs attached are not the runs the comparison names")
    return problems


def decision_problems(decision: Any, runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """A report issued from a decision carries the answer it states: its text must hash to its digest, and every
    run attached must be one that answer cites (the report compares the cited runs, never others)."""
    text = str(decision.get("canonical", "")) if isinstance(decision, dict) else ""
    if not isinstance(decision, dict) or digest_of(text.encode()) != decision.get("digest"):
        return ["the decision answer does not hash to its digest"]
    try:
        cited = set(json.loads(text).get("cited") or [])
    except (ValueError, AttributeError):
        return ["the decision answer is not a JSON object"]
    strays = [run_name(r) for r in runs if r.get("digest") not in cited]
    return [f"{', '.join(strays)} not cited by the decision answer"] if strays else []
