"""The submission body parser: size-limited, strict JSON with pointers for every parse problem."""

from __future__ import annotations

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
    """Reads at most MAX_SUBMISSION_BYTES and parses with protocol.parse_json (duplicate keys, NaN refused).

    The parsed value is what the view validates and canonicalises: the digest covers the RFC 8785 canonical
    form, not the bytes as sent (two spellings of one document are one run).
    """

    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        limit = settings.MAX_SUBMISSION_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"the body is {int(declared)} bytes; the limit is {limit} bytes")
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"the body is larger than the limit of {limit} bytes")
        if not raw:
            raise InvalidDocument("the body is empty", errors=[{"pointer": "", "code": "empty-body",
                                                                "message": "send one JSON document"}])
        try:
            return protocol.parse_json(raw)
        except protocol.Invalid as exc:
            raise InvalidDocument("the body is not acceptable JSON",
                                  errors=[e.as_dict() for e in exc.errors]) from None
