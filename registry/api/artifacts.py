"""A run's artifacts: upload the bytes of a file its document names (provenance.artifacts), download them.

PUT  /api/v1/submissions/<id>/artifacts/<sha256>   raw body (application/octet-stream): kept if the document names
     that sha256 and the bytes hash to it and have the length it names (registry/services/artifacts.py)
GET  /api/v1/submissions/<id>/artifacts/<sha256>   the bytes, to whoever may read the run
"""

from __future__ import annotations

import base64
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.exceptions import NotFound
from registry.models import ApiToken, RunArtifact
from registry.selectors.artifacts import artifact_path, named_artifact
from registry.services.artifacts import artifact_store, artifact_stream, as_sha256


class ArtifactSerializer(serializers.ModelSerializer[RunArtifact]):
    url = serializers.SerializerMethodField(help_text="where to download it")

    class Meta:
        model = RunArtifact
        fields = ["run", "name", "sha256", "bytes", "format", "media_type", "stored_at", "uploaded_by_name", "url"]
        ref_name = "RunArtifact"

    def get_url(self, artifact: RunArtifact) -> str:
        return str(self.context["request"].build_absolute_uri(artifact_path(artifact.run_id, artifact.sha256)))


SHA256_PARAMETER = OpenApiParameter(
    "sha256",
    str,
    OpenApiParameter.PATH,
    pattern="^[0-9a-f]{64}$",
    description="the 64 hex digits the run's document names after `sha256:` in provenance.artifacts",
)


def _declared_length(request: Request) -> int | None:
    raw = request.META.get("CONTENT_LENGTH") or ""
    return int(raw) if raw.isascii() and raw.isdigit() else None


class SubmissionArtifactApi(APIView):
    """PUT uploads the bytes of a file the run's document names by sha256 (scope submit); GET downloads them (read)."""

    policy_action = {"GET": policy.RUN_READ, "PUT": policy.ARTIFACT_UPLOAD}
    parser_classes: list[Any] = []  # the body is read raw, as a stream, never parsed

    @extend_schema(
        parameters=[SHA256_PARAMETER],
        request={"application/octet-stream": OpenApiTypes.BINARY},
        responses={
            201: ArtifactSerializer,
            200: ArtifactSerializer,
            400: ProblemSerializer,
            401: ProblemSerializer,
            403: ProblemSerializer,
            404: ProblemSerializer,
            409: OpenApiResponse(ProblemSerializer, description="the run's document names no artifact with it"),
            413: ProblemSerializer,
            422: OpenApiResponse(ProblemSerializer, description="the bytes are not the file the document names"),
            503: ProblemSerializer,
        },
        summary="Upload a file the run's document names in provenance.artifacts (idempotent: the same bytes answer "
        "the artifact already kept)",
        description="The raw body is the file. Kept only if the run's document names this sha256, the body hashes "
        "to it and has the length the document names (422 otherwise), and it is at most BENCHREG_MAX_ARTIFACT_BYTES "
        "(413); 201 kept now, 200 kept before. A refused upload stores nothing.",
    )
    def put(self, request: Request, run_id: int, sha256: str) -> Response:
        # a submit-only token (a runner's) may upload what the run it submitted names
        run = policy.run_get(policy.for_request(request), run_id, policy.ARTIFACT_UPLOAD)
        token = request.auth if isinstance(request.auth, ApiToken) else None
        artifact, created = artifact_store(
            run=run,
            sha256=as_sha256(sha256),
            stream=request.stream,
            declared_length=_declared_length(request),
            uploaded_by=signed_in_user(request),
            token=token,
        )
        data = ArtifactSerializer(artifact, context={"request": request}).data
        return Response(data, status=201 if created else 200, headers={"Location": data["url"]})

    @extend_schema(
        parameters=[SHA256_PARAMETER],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            400: ProblemSerializer,
            404: ProblemSerializer,
            503: ProblemSerializer,
        },
        summary="Download a file the run's document names, as uploaded (its sha256 is the ETag, checked as it is sent)",
        description="Content-Type is the media type the document names (else application/octet-stream). The bytes "
        "are checked against the sha256 as they are sent: bytes that no longer hash to it end the response short "
        "of its Content-Length. 404 when the document names no such file, or names it but it was not uploaded.",
    )
    def get(self, request: Request, run_id: int, sha256: str) -> StreamingHttpResponse:
        run = policy.run_get(policy.for_request(request), run_id)
        digest = as_sha256(sha256)
        artifact = RunArtifact.objects.filter(run=run, sha256=digest).first()
        if artifact is None:
            named = named_artifact(run, digest)
            raise NotFound(
                f"run {run.pk}'s document names {named.get('name')} ({digest}), but it was not uploaded"
                if named is not None
                else f"run {run.pk}'s document names no artifact with {digest}"
            )
        response = StreamingHttpResponse(
            artifact_stream(artifact), content_type=artifact.media_type or "application/octet-stream"
        )
        response["Content-Length"] = str(artifact.bytes)
        response["ETag"] = f'"{artifact.sha256}"'
        hexdigest = artifact.sha256.removeprefix("sha256:")
        response["Repr-Digest"] = f"sha-256=:{base64.b64encode(bytes.fromhex(hexdigest)).decode()}:"
        response["Content-Disposition"] = f'attachment; filename="{artifact.name}"'
        return response
