"""Audit-log endpoints: the signed checkpoint, its public key, inclusion and consistency proofs, the entries.

Who may read what: a third party must verify with the public key alone, so the checkpoint, the public key and
both proofs are open (they disclose sizes and hashes, nothing else). Entry texts name users, token prefixes and
withdrawal reasons, so the entry list needs the read scope, and an inclusion proof carries the entry text only for
a caller who has it; whoever holds an entry (a report's evidence, say) hashes it themselves.
"""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry.api.permissions import HasScope
from registry.api.submissions import ProblemSerializer
from registry.audit.keys import checkpoint_key, log_origin
from registry.models import Checkpoint
from registry.selectors.audit import audit_consistency, audit_entry_list, audit_inclusion, checkpoint_at
from registry.services.audit import checkpoint_current


class SignedNoteRenderer(BaseRenderer):
    """`?format=note` or `Accept: text/plain`: the signed note as it was signed, byte for byte."""

    media_type = "text/plain"
    format = "note"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        # Errors are problem-details dicts even here; they go out as JSON text.
        return data.encode() if isinstance(data, str) else json.dumps(data).encode()


class LogOrderCursor(CursorPagination):
    """Entries in log order (seq only grows, so pages never shift under a reader)."""

    ordering = "seq"
    page_size = 100
    page_size_query_param = "limit"
    max_page_size = 1000


def _hex_list(hashes: list[bytes]) -> list[str]:
    return [h.hex() for h in hashes]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _note_at(size: int) -> str | None:
    checkpoint = checkpoint_at(size=size)
    return checkpoint.note if checkpoint else None


def _may_read(request: Request) -> bool:
    return HasScope().has_permission(request, SimpleNamespace(required_scope="read"))


class CheckpointOutputSerializer(serializers.Serializer):
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


class AuditCheckpointApi(APIView):
    """The current signed checkpoint (size, root, Ed25519 signature). Open to anyone."""

    required_scope = None
    authentication_classes: list[type] = []
    renderer_classes = [JSONRenderer, SignedNoteRenderer]

    @extend_schema(responses={(200, "application/json"): CheckpointOutputSerializer,
                              (200, "text/plain"): OpenApiTypes.STR},
                   summary="The current signed checkpoint (JSON, or the raw signed note with ?format=note)")
    def get(self, request: Request) -> Response:
        checkpoint = checkpoint_current()
        if request.accepted_renderer.format == "note":
            return Response(checkpoint.note)
        return Response(CheckpointOutputSerializer(checkpoint).data)


class AuditPublicKeyApi(APIView):
    """The key that signs checkpoints: the C2SP verifier key string and the raw Ed25519 public key. Open."""

    required_scope = None
    authentication_classes: list[type] = []

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="The checkpoint verifier key")
    def get(self, request: Request) -> Response:
        key = checkpoint_key()
        return Response({"origin": log_origin(), "key_name": key.name, "algorithm": "Ed25519",
                         "verifier_key": key.vkey, "public_key": key.public_key_b64})


class InclusionOutputSerializer(serializers.Serializer):
    leaf_index = serializers.IntegerField()
    tree_size = serializers.IntegerField()
    leaf_hash = serializers.CharField(help_text="hex SHA-256(0x00 || entry)")
    proof = serializers.ListField(child=serializers.CharField(), help_text="hex hashes, leaf to root")
    root_hash = serializers.CharField(help_text="hex root of the tree of tree_size entries")
    checkpoint = serializers.CharField(allow_null=True, help_text="signed note of that size, if one was signed")
    entry = serializers.CharField(required=False, help_text="the entry text (callers with the read scope)")


class AuditInclusionApi(APIView):
    """Proof that entry N is in the log of size M (default: the current checkpoint's size). Open."""

    required_scope = None

    class InputSerializer(serializers.Serializer):
        entry = serializers.IntegerField(min_value=0)
        size = serializers.IntegerField(min_value=0, required=False)

    @extend_schema(parameters=[InputSerializer], responses={200: InclusionOutputSerializer, 400: ProblemSerializer},
                   summary="Inclusion proof of one entry (RFC 9162 audit path)")
    def get(self, request: Request) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        size = params.validated_data.get("size")
        proof = audit_inclusion(entry=params.validated_data["entry"], with_text=_may_read(request),
                                size=checkpoint_current().size if size is None else size)
        data = {"leaf_index": proof.leaf_index, "tree_size": proof.tree_size, "leaf_hash": proof.leaf_hash.hex(),
                "proof": _hex_list(proof.proof), "root_hash": proof.root_hash.hex(),
                "checkpoint": _note_at(proof.tree_size)}
        if proof.entry_text is not None:
            data["entry"] = proof.entry_text
        return Response(data)


class ConsistencyOutputSerializer(serializers.Serializer):
    first = serializers.IntegerField(help_text="`from`")
    second = serializers.IntegerField(help_text="`to`")
    first_root = serializers.CharField()
    second_root = serializers.CharField()
    proof = serializers.ListField(child=serializers.CharField(), help_text="hex hashes (RFC 9162 §2.1.4)")
    first_checkpoint = serializers.CharField(allow_null=True)
    second_checkpoint = serializers.CharField(allow_null=True)


class AuditConsistencyApi(APIView):
    """Proof that the log at size `from` is a prefix of the log at size `to` (default: the current checkpoint)."""

    required_scope = None
    authentication_classes: list[type] = []

    @extend_schema(parameters=[OpenApiParameter("from", int, required=True),
                               OpenApiParameter("to", int, required=False)],
                   responses={200: ConsistencyOutputSerializer, 400: ProblemSerializer},
                   summary="Consistency proof between two log sizes")
    def get(self, request: Request) -> Response:
        first, second = _size_param(request, "from"), _size_param(request, "to", required=False)
        proof = audit_consistency(first=first, second=checkpoint_current().size if second is None else second)
        return Response({"first": proof.first, "second": proof.second, "first_root": proof.first_root.hex(),
                         "second_root": proof.second_root.hex(), "proof": _hex_list(proof.proof),
                         "first_checkpoint": _note_at(proof.first), "second_checkpoint": _note_at(proof.second)})


def _size_param(request: Request, name: str, *, required: bool = True) -> int | None:
    """A non-negative integer query parameter (`from` is a Python keyword, so no serializer field can hold it)."""
    raw = request.query_params.get(name)
    if raw is None and not required:
        return None
    if raw is None or not raw.isdigit():
        raise ValidationError({name: ["a non-negative integer is required"]})
    return int(raw)


class AuditEntryOutputSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField()
    kind = serializers.CharField()
    subject = serializers.CharField()
    leaf_hash = serializers.CharField()
    entry = serializers.CharField(help_text="the canonical JSON text that was hashed")


class AuditEntryListApi(APIView):
    """Entries in log order, cursor-paged, filtered by kind and/or subject. Scope read."""

    required_scope = "read"

    class FilterSerializer(serializers.Serializer):
        kind = serializers.CharField(required=False)
        subject = serializers.CharField(required=False)

    @extend_schema(parameters=[FilterSerializer], responses=AuditEntryOutputSerializer(many=True),
                   summary="Audit-log entries, oldest first")
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        paginator = LogOrderCursor()
        page = paginator.paginate_queryset(audit_entry_list(**filters.validated_data), request, view=self)
        return paginator.get_paginated_response(AuditEntryOutputSerializer(page, many=True).data)
