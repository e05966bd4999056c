"""The submission body parser: size-limited, strict JSON with pointers for every parse problem."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from rest_framework.parsers import BaseParser

import protocol
from registry.exceptions import RegistryError
from registry.services.submissions import InvalidDocument


class PayloadTooLarge(RegistryError):
    status = 413
    code = "payload-too-large"


class JSONDocumentParser(BaseParser):
    """Reads at most MAX_SUBMISSION_BYTES and parses with protocol.parse_json (duplicate keys, NaN refused by the
    checks that follow, with every other error of the document).

    The parsed value is what the view validates and canonicalises: the digest covers the RFC 8785 canonical
    form, not the bytes as sent (two spellings of one document are one run).
    """

    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        limit = settings.MAX_SUBMISSION_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"the body is {int(declared)} bytes; the limit is {limit} bytes")
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"the body is larger than the limit of {limit} bytes")
        if not raw:
            raise InvalidDocument(
                "the body is empty", errors=[{"pointer": "", "code": "empty-body", "message": "send one JSON document"}]
            )
        return parse_document(raw)


def parse_document(raw: bytes) -> Any:
    """One document's bytes parsed, or InvalidDocument when they are not JSON. Duplicate keys, NaN and integers no
    double holds stay marked: protocol.check reports each with its pointer, among every other error."""
    try:
        return protocol.parse_json(raw, keep_marks=True)
    except protocol.Invalid as exc:
        raise InvalidDocument("the body is not acceptable JSON", errors=[e.as_dict() for e in exc.errors]) from None


# --- a batch of documents, one per line (application/x-ndjson) ----------------------------------------


@dataclass
class DocumentBatch:
    """The lines of an NDJSON body: (line number from 1, parsed document or the RegistryError refusing it).

    Blank lines are skipped (and still counted, so numbers match the sender's file).
    """

    lines: list[tuple[int, Any]]


class NDJSONBatchParser(BaseParser):
    """Reads at most MAX_BATCH_BYTES and MAX_BATCH_DOCUMENTS lines; each line is parsed like a single
    submission's body (and refused alone, with the same problem details, if it is not acceptable JSON or is
    larger than MAX_SUBMISSION_BYTES)."""

    media_type = "application/x-ndjson"

    def parse(  # type: ignore[override]  # DRF keeps whatever parse returns as request.data
        self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> DocumentBatch:
        limit = settings.MAX_BATCH_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"the batch is {int(declared)} bytes; the limit is {limit} bytes")
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"the batch is larger than the limit of {limit} bytes")
        lines = [(number, line) for number, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]
        if not lines:
            raise InvalidDocument(
                "the batch is empty",
                errors=[{"pointer": "", "code": "empty-body", "message": "send one JSON document per line"}],
            )
        if len(lines) > settings.MAX_BATCH_DOCUMENTS:
            raise PayloadTooLarge(
                f"the batch has {len(lines)} documents; the limit is {settings.MAX_BATCH_DOCUMENTS} per request"
            )
        return DocumentBatch([(number, _parse_line(line)) for number, line in lines])


def _parse_line(line: bytes) -> Any:
    limit = settings.MAX_SUBMISSION_BYTES
    if len(line) > limit:
        return PayloadTooLarge(f"the document is {len(line)} bytes; the limit is {limit} bytes")
    try:
        return parse_document(line)
    except RegistryError as exc:
        return exc
