"""Decision-report endpoints: request one, follow its lifecycle, download it, verify a PDF, get the certificate."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import FileResponse, HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from protocol.sizing import MAX_PRICE_PER_HOUR
from registry import policy
from registry.api.parsers import PayloadTooLarge
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import StrictSerializer
from registry.choices import ReportStatus
from registry.exceptions import RegistryError
from registry.models import Report
from registry.reports import CERTIFICATE_FILE
from registry.reports.signing import signing_identity
from registry.selectors.standing import comparison_conclusion
from registry.services.reports import report_open, report_request, report_verify


class ReportOutputSerializer(serializers.ModelSerializer[Report]):
    url = serializers.SerializerMethodField()
    download = serializers.SerializerMethodField(help_text="the PDF, once status is ready")
    comparison_digest = serializers.CharField(source="comparison.digest")
    conclusion = serializers.SerializerMethodField(
        help_text="the comparison's conclusion as it stands now: inconclusive once a run was withdrawn since"
    )

    class Meta:
        model = Report
        fields = [
            "id",
            "url",
            "status",
            "title",
            "decision",
            "comparison",
            "comparison_digest",
            "prices",
            "currency",
            "requested_by_name",
            "created_at",
            "started_at",
            "finished_at",
            "last_error",
            "download",
            "pdf_digest",
            "pdf_bytes",
            "evidence_digest",
            "checkpoint_size",
            "conclusion",
        ]

    def get_url(self, report: Report) -> str:
        request: Request = self.context["request"]
        return request.build_absolute_uri(reverse("api-report-detail", args=[report.pk]))

    def get_conclusion(self, report: Report) -> dict[str, Any]:
        return comparison_conclusion(report.comparison)

    def get_download(self, report: Report) -> str | None:
        if report.status != ReportStatus.READY:
            return None
        request: Request = self.context["request"]
        return request.build_absolute_uri(reverse("api-report-pdf", args=[report.pk]))


class ReportCollectionApi(APIView):
    """POST requests a decision report on a stored comparison: 202 with the queued (or, eagerly, ready) report.

    A request identical to one of yours that is queued, rendering or ready (same comparison and prices, title and
    decision) answers that report and queues nothing. At most BENCHREG_REPORTS_PENDING_PER_PERSON (default 3) of
    your reports are queued or rendering at once: one more is refused with 429 and Retry-After."""

    policy_action = {"GET": policy.REPORT_READ, "POST": policy.REPORT_REQUEST}

    class InputSerializer(StrictSerializer):
        comparison = serializers.IntegerField(min_value=1)
        title = serializers.CharField(max_length=200)
        decision = serializers.CharField(max_length=2000, help_text="the decision the report supports")
        prices = serializers.DictField(
            child=serializers.FloatField(min_value=0, max_value=MAX_PRICE_PER_HOUR),
            required=False,
            help_text="price per system-hour keyed as decisions key prices: a configuration '8x H100' "
            "(accelerators x accelerator model) or '*' for any system; a compared run's system.name is still read. "
            "A key that matches no compared run is refused (422) with the keys that would match. Default: the "
            "comparison's prices. Each from 0 to the plausible maximum",
        )
        currency = serializers.RegexField(r"^[A-Z]{3}$", required=False)

        class Meta:
            ref_name = "ReportInput"  # nested InputSerializers share a name; the schema needs distinct ones

    @extend_schema(
        request=InputSerializer,
        responses={
            202: ReportOutputSerializer,
            400: ProblemSerializer,
            404: ProblemSerializer,
            422: ProblemSerializer,
            429: ProblemSerializer,
        },
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        comparison = policy.comparison_get(policy.for_request(request), data.validated_data.pop("comparison"))
        report = report_request(comparison=comparison, requested_by=signed_in_user(request), **data.validated_data)
        report.refresh_from_db()  # rendered already when tasks run eagerly
        body = ReportOutputSerializer(report, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


class ReportDetailApi(APIView):
    """A report's status (queued, rendering, ready, failed with the reason) and its download link."""

    policy_action = policy.REPORT_READ

    @extend_schema(responses={200: ReportOutputSerializer, 404: ProblemSerializer})
    def get(self, request: Request, report_id: int) -> Response:
        report = policy.report_get(policy.for_request(request), report_id)
        return Response(ReportOutputSerializer(report, context={"request": request}).data)


class ReportPdfApi(APIView):
    """The signed PDF of a ready report (409 before it is ready)."""

    policy_action = policy.REPORT_READ

    @extend_schema(
        responses={
            (200, "application/pdf"): OpenApiTypes.BINARY,
            404: ProblemSerializer,
            409: ProblemSerializer,
            503: ProblemSerializer,
        }
    )
    def get(self, request: Request, report_id: int) -> FileResponse:
        report = policy.report_get(policy.for_request(request), report_id)
        response = FileResponse(
            report_open(report),
            content_type="application/pdf",
            as_attachment=True,
            filename=f"benchreg-report-{report.pk}.pdf",
        )
        response["X-Content-Digest"] = report.pdf_digest
        return response


class ReportVerifyApi(APIView):
    """Upload a report PDF (multipart field `file`): VALID or INVALID with every failed check. Open to anyone, so
    it is throttled (scope `verify`, BENCHREG_THROTTLE_VERIFY) and size-limited before the body is parsed
    (BENCHREG_MAX_VERIFY_BYTES, 413). Compressed streams inflate to at most BENCHREG_VERIFY_MAX_STREAM_BYTES each
    and BENCHREG_VERIFY_MAX_INFLATED_BYTES per revision read (defaults 32 and 64 MiB): a file that needs more is
    refused with 413 (code `inflated-too-large`) and nothing past the bound is inflated. Who withdrew a run and
    why is shown to callers with the read right."""

    policy_action = policy.REPORT_VERIFY
    throttle_scope = "verify"
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={
            "multipart/form-data": {
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string", "format": "binary"}},
            }
        },
        responses={200: OpenApiTypes.OBJECT, 400: ProblemSerializer, 413: ProblemSerializer, 429: ProblemSerializer},
    )
    def post(self, request: Request) -> Response:
        limit = settings.BENCHREG_MAX_VERIFY_BYTES
        too_large = PayloadTooLarge(f"a report to verify is at most {limit} bytes")
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:  # refused before a byte of the body is parsed
            raise too_large
        upload = request.FILES.get("file")
        if upload is None:
            raise RegistryError("upload the report PDF as the multipart field `file`", code="file-required")
        if upload.size > limit:  # a chunked body declares no length
            raise too_large
        with_reasons = policy.can(policy.for_request(request), policy.WITHDRAWAL_REASONS_READ)
        verdict = report_verify(pdf=upload.read(), with_reasons=with_reasons)
        bound = next((c for c in verdict.reasons if c.code == "within-bounds"), None)
        if bound is not None:
            raise RegistryError(
                f"not verified: {bound.message}",
                status=413,
                code="inflated-too-large",
                errors=[{"pointer": "/file", "message": bound.message}],
            )
        return Response(verdict.as_dict())


class ReportCertificateApi(APIView):
    """The registry's report-signing certificate and its issuers (PEM): what `benchreg verify --cert` takes."""

    policy_action = policy.REPORT_VERIFY
    authentication_classes: list[Any] = []

    @extend_schema(responses={(200, "application/x-pem-file"): OpenApiTypes.STR})
    def get(self, request: Request) -> HttpResponse:
        response = HttpResponse(signing_identity().public_pem(), content_type="application/x-pem-file")
        response["Content-Disposition"] = f'attachment; filename="{CERTIFICATE_FILE}"'
        return response
