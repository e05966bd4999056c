"""Audit-log endpoints: the signed checkpoint, its public key, inclusion and consistency proofs, the entries, and
the same log in the C2SP tlog-tiles layout (checkpoint, hash tiles, entry bundles).

Who may read what (policy.AUDIT_PUBLIC): anyone, without an account, throttled per address (scope `audit`,
BENCHREG_THROTTLE_AUDIT). Entry texts of format 2 (protocol/audit_entries.py) hold only what may be public.
Format-1 entries, written before migration 0011, name users, token prefixes and withdrawal reasons: their texts
(and entry bundles holding them) are served only to callers with policy.AUDIT_READ; their hashes are public.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Literal, overload

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from registry import policy
from registry.api.pagination import StrictCursor
from registry.api.schema import ProblemSerializer
from registry.api.strict import QuerySerializer
from registry.audit.keys import checkpoint_key, log_origin
from registry.models import Checkpoint
from registry.selectors.audit import (
    audit_consistency,
    audit_entry_list,
    audit_inclusion,
    audit_pending_count,
    checkpoint_at,
    checkpoint_published,
    cosigned_note,
)
from registry.selectors.tiles import TILE_WIDTH, entry_bundle, hash_tile, parse_tile_index
from registry.services.audit import checkpoint_current


class PublicAuditView(APIView):
    """Open to anyone (policy.AUDIT_PUBLIC), counted per address or user under the `audit` throttle scope only."""

    policy_action = policy.AUDIT_PUBLIC
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "audit"


class SignedNoteRenderer(BaseRenderer):
    """`?format=note` or `Accept: text/plain`: the signed note as it was signed, byte for byte."""

    media_type = "text/plain"
    format = "note"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        # Errors are problem-details dicts even here; they go out as JSON text.
        return data.encode() if isinstance(data, str) else json.dumps(data).encode()


class LogOrderCursor(StrictCursor):
    """Entries in log order (seq only grows, so pages never shift under a reader)."""

    ordering = "seq"
    page_size = 100
    max_page_size = 1000


def _hex_list(hashes: list[bytes]) -> list[str]:
    return [h.hex() for h in hashes]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _note_at(size: int) -> str | None:
    checkpoint = checkpoint_at(size=size)
    return checkpoint.note if checkpoint else None


def _may_read_restricted(request: Request) -> bool:
    """May this caller read format-1 entry texts (which name users and token prefixes)?"""
    return policy.can(policy.for_request(request), policy.AUDIT_READ)


class CheckpointOutputSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(source="pk")
    origin = serializers.CharField()
    size = serializers.IntegerField()
    root_hash = serializers.CharField(help_text="hex")
    root_hash_base64 = serializers.SerializerMethodField()
    note = serializers.CharField(help_text="the C2SP signed note; verify it with `verifier_key`")
    verifier_key = serializers.CharField(source="vkey")
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()

    def get_root_hash_base64(self, checkpoint: Checkpoint) -> str:
        return _b64(bytes.fromhex(checkpoint.root_hash))


class AuditCheckpointApi(PublicAuditView):
    """The current signed checkpoint (size, root, Ed25519 signature). Open to anyone."""

    authentication_classes: list[type] = []
    renderer_classes = [JSONRenderer, SignedNoteRenderer]

    @extend_schema(
        responses={
            (200, "application/json"): CheckpointOutputSerializer,
            (200, "text/plain"): OpenApiTypes.STR,
            429: ProblemSerializer,
        },
        summary="The current signed checkpoint (JSON, or the raw signed note with ?format=note)",
    )
    def get(self, request: Request) -> Response:
        checkpoint = checkpoint_current()
        if request.accepted_renderer.format == "note":
            return Response(checkpoint.note)
        return Response(CheckpointOutputSerializer(checkpoint).data)


class AuditPublicKeyApi(PublicAuditView):
    """The key that signs checkpoints: the C2SP verifier key string and the raw Ed25519 public key. Open."""

    authentication_classes: list[type] = []

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 429: ProblemSerializer}, summary="The checkpoint verifier key")
    def get(self, request: Request) -> Response:
        key = checkpoint_key()
        return Response(
            {
                "origin": log_origin(),
                "key_name": key.name,
                "algorithm": "Ed25519",
                "verifier_key": key.vkey,
                "public_key": key.public_key_b64,
            }
        )


MAX_LOG_POSITION = 2**63 - 1  # a log position is a bigint (the description states the bound)


class InclusionOutputSerializer(serializers.Serializer[Any]):
    leaf_index = serializers.IntegerField()
    tree_size = serializers.IntegerField()
    leaf_hash = serializers.CharField(help_text="hex SHA-256(0x00 || entry)")
    proof = serializers.ListField(child=serializers.CharField(), help_text="hex hashes, leaf to root")
    root_hash = serializers.CharField(help_text="hex root of the tree of tree_size entries")
    checkpoint = serializers.CharField(allow_null=True, help_text="signed note of that size, if one was signed")
    entry = serializers.CharField(
        required=False, help_text="the entry text (format 2: anyone; format 1: callers with the read scope)"
    )


class AuditInclusionApi(PublicAuditView):
    """Proof that entry N is in the log of size M (default: the current checkpoint's size). Open."""

    class InputSerializer(QuerySerializer):
        entry = serializers.IntegerField(min_value=0, max_value=MAX_LOG_POSITION)
        size = serializers.IntegerField(min_value=0, max_value=MAX_LOG_POSITION, required=False)

    @extend_schema(
        parameters=[InputSerializer],
        responses={
            200: InclusionOutputSerializer,
            400: ProblemSerializer,
            422: ProblemSerializer,
            429: ProblemSerializer,
        },
        summary="Inclusion proof of one entry (RFC 9162 audit path)",
    )
    def get(self, request: Request) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        size = params.validated_data.get("size")
        proof = audit_inclusion(
            entry=params.validated_data["entry"],
            restricted=_may_read_restricted(request),
            size=checkpoint_current().size if size is None else size,
        )
        data = {
            "leaf_index": proof.leaf_index,
            "tree_size": proof.tree_size,
            "leaf_hash": proof.leaf_hash.hex(),
            "proof": _hex_list(proof.proof),
            "root_hash": proof.root_hash.hex(),
            "checkpoint": _note_at(proof.tree_size),
        }
        if proof.entry_text is not None:
            data["entry"] = proof.entry_text
        return Response(data)


class ConsistencyOutputSerializer(serializers.Serializer[Any]):
    first = serializers.IntegerField(help_text="`from`")
    second = serializers.IntegerField(help_text="`to`")
    first_root = serializers.CharField()
    second_root = serializers.CharField()
    proof = serializers.ListField(child=serializers.CharField(), help_text="hex hashes (RFC 9162 §2.1.4)")
    first_checkpoint = serializers.CharField(allow_null=True)
    second_checkpoint = serializers.CharField(allow_null=True)


class AuditConsistencyApi(PublicAuditView):
    """Proof that the log at size `from` is a prefix of the log at size `to` (default: the current checkpoint)."""

    authentication_classes: list[type] = []

    @extend_schema(
        parameters=[
            OpenApiParameter("from", {"type": "integer", "minimum": 0, "maximum": MAX_LOG_POSITION}, required=True),
            OpenApiParameter("to", {"type": "integer", "minimum": 0, "maximum": MAX_LOG_POSITION}, required=False),
        ],
        responses={
            200: ConsistencyOutputSerializer,
            400: ProblemSerializer,
            422: ProblemSerializer,
            429: ProblemSerializer,
        },
        summary="Consistency proof between two log sizes",
    )
    def get(self, request: Request) -> Response:
        first, second = _size_param(request, "from"), _size_param(request, "to", required=False)
        proof = audit_consistency(first=first, second=checkpoint_current().size if second is None else second)
        return Response(
            {
                "first": proof.first,
                "second": proof.second,
                "first_root": proof.first_root.hex(),
                "second_root": proof.second_root.hex(),
                "proof": _hex_list(proof.proof),
                "first_checkpoint": _note_at(proof.first),
                "second_checkpoint": _note_at(proof.second),
            }
        )


@overload
def _size_param(request: Request, name: str, *, required: Literal[True] = True) -> int: ...
@overload
def _size_param(request: Request, name: str, *, required: bool) -> int | None: ...
def _size_param(request: Request, name: str, *, required: bool = True) -> int | None:
    """A non-negative integer query parameter (`from` is a Python keyword, so no serializer field can hold it)."""
    raw = request.query_params.get(name)
    if raw is None and not required:
        return None
    if raw is None or not (raw.isascii() and raw.isdigit()):  # "²".isdigit() is True
        raise ValidationError({name: ["a non-negative integer is required"]})
    # Checked by length first: int() refuses (ValueError) strings of more than 4,300 digits.
    if len(raw.lstrip("0")) > len(str(MAX_LOG_POSITION)) or int(raw) > MAX_LOG_POSITION:
        raise ValidationError({name: [f"at most {MAX_LOG_POSITION}"]})
    return int(raw)


class AuditEntryOutputSerializer(serializers.Serializer[Any]):
    seq = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    kind = serializers.CharField()
    subject = serializers.CharField()
    leaf_hash = serializers.CharField()
    format = serializers.IntegerField(help_text="entry format: 2 public, 1 (before migration 0011) restricted")
    entry = serializers.SerializerMethodField(
        help_text="the canonical JSON text that was hashed; null for a "
        "format-1 entry unless the caller has the read scope"
    )
    actor = serializers.SerializerMethodField(help_text="who caused it; callers with the read scope only")

    def get_entry(self, row: Any) -> str | None:
        return row.entry if row.format != 1 or self.context["restricted"] else None

    def get_actor(self, row: Any) -> str | None:
        return row.actor if self.context["restricted"] else None


class AuditEntryPageSerializer(serializers.Serializer[Any]):
    next = serializers.URLField(allow_null=True, help_text="the next page (cursor), null on the last")
    previous = serializers.URLField(allow_null=True)
    results = AuditEntryOutputSerializer(many=True)
    pending = serializers.IntegerField(help_text="entries matching the filters queued and not numbered yet")


class AuditEntryListApi(PublicAuditView):
    """Entries in log order, cursor-paged, filtered by kind and/or subject. Open to anyone."""

    pagination_class = LogOrderCursor  # documents the page's parameters

    class AuditEntryFilterSerializer(QuerySerializer):
        kind = serializers.CharField(required=False)
        subject = serializers.CharField(required=False)

    @extend_schema(
        parameters=[AuditEntryFilterSerializer],
        responses={200: AuditEntryPageSerializer, 400: ProblemSerializer, 429: ProblemSerializer},
        summary="Audit-log entries, oldest first",
        description="`pending` counts entries matching the filters whose changes have committed and that "
        "are not numbered yet (not in the tree, so no inclusion proof yet); while it is "
        "not 0 the answer carries `Retry-After: 1` (docs/audit.md: the sequencing delay).",
    )
    def get(self, request: Request) -> Response:
        filters = self.AuditEntryFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        paginator = LogOrderCursor()
        page = paginator.paginate_queryset(audit_entry_list(**filters.validated_data), request, view=self)
        context = {"restricted": _may_read_restricted(request)}
        response = paginator.get_paginated_response(AuditEntryOutputSerializer(page, many=True, context=context).data)
        # say when entries are queued and not integrated yet
        pending = audit_pending_count(**filters.validated_data)
        response.data["pending"] = pending
        if pending:
            response["Retry-After"] = "1"
        return response


# --- the C2SP tlog-tiles layout (https://c2sp.org/tlog-tiles), under /api/v1/audit/log/ ----------------------

IMMUTABLE = "public, max-age=31536000, immutable"  # a full tile never changes
SHORT = "public, max-age=10"  # a partial tile or the checkpoint: the log grows


def _tile_response(body: bytes, *, full: bool) -> HttpResponse:
    response = HttpResponse(body, content_type="application/octet-stream")
    response["Cache-Control"] = IMMUTABLE if full else SHORT
    return response


def _width(raw: str | None) -> int:
    return TILE_WIDTH if raw is None else int(raw)


TILE_RESPONSES = {
    (200, "application/octet-stream"): OpenApiTypes.BINARY,
    404: ProblemSerializer,
    429: ProblemSerializer,
}
BUNDLE_RESPONSES = {**TILE_RESPONSES, 403: ProblemSerializer}


class AuditLogCheckpointApi(PublicAuditView):
    """tlog-tiles `<prefix>/checkpoint`: the published signed note, with the witnesses' cosignature lines."""

    authentication_classes: list[type] = []

    @extend_schema(
        responses={(200, "text/plain"): OpenApiTypes.STR, 429: ProblemSerializer},
        summary="The log's checkpoint as a C2SP signed note with witness cosignatures (text/plain)",
    )
    def get(self, request: Request) -> HttpResponse:
        checkpoint = checkpoint_published(quorum=settings.BENCHREG_WITNESS_QUORUM) or checkpoint_current()
        response = HttpResponse(cosigned_note(checkpoint).encode(), content_type="text/plain; charset=utf-8")
        response["Cache-Control"] = SHORT
        return response


class AuditHashTileApi(PublicAuditView):
    """tlog-tiles `tile/<L>/<N>[.p/<W>]`: W hashes (32 bytes each) of tree level 8L from index 256N."""

    authentication_classes: list[type] = []

    @extend_schema(responses=TILE_RESPONSES, summary="A hash tile of the audit log (C2SP tlog-tiles)")
    def get(self, request: Request, level: str, index: str, width: str | None = None) -> HttpResponse:
        body = hash_tile(level=int(level), index=parse_tile_index(index), width=_width(width))
        return _tile_response(body, full=width is None)


class AuditEntryBundleApi(PublicAuditView):
    """tlog-tiles `tile/entries/<N>[.p/<W>]`: entries 256N.. as uint16 big-endian length + entry text."""

    @extend_schema(
        responses=BUNDLE_RESPONSES,
        summary="An entry bundle of the audit log (C2SP tlog-tiles); 403 if it holds format-1 entries",
    )
    def get(self, request: Request, index: str, width: str | None = None) -> HttpResponse:
        body = entry_bundle(
            index=parse_tile_index(index), width=_width(width), restricted_allowed=_may_read_restricted(request)
        )
        return _tile_response(body, full=width is None)
