"""Which measurement a document states, whatever folder its source files were read from.

A run's digest names its document. Two documents can differ and still state one measurement: an importer reads the
same published files from two copies of a round (a sample tree and the whole round, say), and the documents differ
only in where `provenance.origin.files` says the files lay; or a newer importer writes a corrected document from the
same files. Counted as two runs, such a pair would weigh one measurement twice in every statistic, so whatever
counts runs counts measurement identities instead.

- A document whose `provenance.origin.files` lists source files (imported evidence: MLPerf Inference and Training)
  is identified by what was measured and from which bytes: the origin's kind, round, benchmark (and the benchmark
  it maps to), scenario, its derivation's kind if it was derived, and the sorted multiset of the files' content
  digests. The files' paths never enter. The scenario and the derivation must: an MLPerf inferred result's folder
  holds byte-identical copies of the measured run's logs, and it is not the measured result.
- Any other document (a runner's, a token holder's) is its own measurement: its identity is its digest.

Plain functions of a document that passed the protocol's checks; they read it defensively all the same, so they
can be asked of any stored document (migrations backfill with them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .canonical import digest
from .derivation import derivation_of

# The origin's fields that say what was measured (with the files' contents); everything else in it (file paths,
# rules' source, notes) describes how the document was read, not the measurement.
IDENTITY_FIELDS = ("kind", "round", "benchmark", "mapped_benchmark", "scenario")


def _origin(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    provenance = doc.get("provenance")
    origin = provenance.get("origin") if isinstance(provenance, Mapping) else None
    return origin if isinstance(origin, Mapping) else {}


def source_digests(doc: Mapping[str, Any]) -> list[str]:
    """The content digests of the source files the document was read from, sorted (a multiset: a file copied
    twice counts twice); [] when it lists none."""
    files = _origin(doc).get("files")
    if not isinstance(files, Mapping):
        return []
    return sorted(str(value) for value in files.values())


def measurement_identity(doc: Mapping[str, Any], *, own_digest: str | None = None) -> str:
    """ "sha256:<hex>" naming the measurement `doc` states (see the module's docstring). `own_digest` is the
    document's digest when the caller has it (a document listing no source files is identified by it)."""
    files = source_digests(doc)
    if not files:
        return own_digest if own_digest is not None else digest(doc)
    origin = _origin(doc)
    derivation = derivation_of(doc)
    return digest(
        {
            "identity": "source files",
            **{name: _text(origin.get(name)) for name in IDENTITY_FIELDS},
            "derivation": derivation.kind if derivation is not None else None,
            "files": files,
        }
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# Where a derived run's source lay, and the digest of the document read from there (which names its file paths):
# set aside with the files' paths.
_DERIVATION_LOCATIONS = ("from_location", "from_digest")


def without_file_locations(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document with `provenance.origin.files` reduced to its sorted content digests (and a derivation's
    source folder and source document digest set aside): two documents read from the same files in different
    folders are equal here, and differ when anything measured or stated differs."""
    out = dict(doc)
    provenance = out.get("provenance")
    if not isinstance(provenance, Mapping) or not isinstance(provenance.get("origin"), Mapping):
        return out
    origin = dict(provenance["origin"])
    if isinstance(origin.get("files"), Mapping):
        origin["files"] = source_digests(doc)
    if isinstance(origin.get("derivation"), Mapping):
        origin["derivation"] = {k: v for k, v in origin["derivation"].items() if k not in _DERIVATION_LOCATIONS}
    out["provenance"] = {**provenance, "origin": origin}
    return out


def same_but_for_file_locations(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two documents are equal once their source files' paths are set aside (`without_file_locations`)."""
    return digest(without_file_locations(a)) == digest(without_file_locations(b))
