"""Submission endpoints: submit one run, list runs with filters, read one run exactly as stored."""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.filters import SubmissionFilter
from registry.api.pagination import NewestFirstCursor
from registry.api.parsers import JSONDocumentParser
from registry.models import ApiToken, Submission
from registry.selectors.submissions import submission_list
from registry.services.submissions import submission_create, submission_withdraw


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details with benchreg's list of document errors."""

    type = serializers.CharField()
    title = serializers.CharField()
    status = serializers.IntegerField()
    code = serializers.CharField()
    detail = serializers.CharField()
    errors = serializers.ListField(child=serializers.DictField(), required=False)


class SubmissionSummarySerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    withdrawn = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ["id", "digest", "url", "comparability_key", "protocol_version", "phase", "workload_name",
                  "workload_version", "scenario_kind", "precision_weights", "precision_activations", "batch_size",
                  "system_name", "accelerator_vendor", "accelerator_model", "accelerator_count", "submitter",
                  "source", "started_at", "headline_metric", "headline_value", "headline_unit",
                  "headline_lower_is_better", "trust", "submitted_by_name", "submitted_at", "withdrawn"]

    def get_url(self, run: Submission) -> str:
        return self.context["request"].build_absolute_uri(reverse("api-submission-detail", args=[run.pk]))

    def get_withdrawn(self, run: Submission) -> dict[str, str] | None:
        return withdrawn_words(run)


def withdrawn_words(run: Submission) -> dict[str, str] | None:
    """Who withdrew the run, when and why; None while it stands."""
    withdrawal = getattr(run, "withdrawal", None)
    if withdrawal is None:
        return None
    return {"reason": withdrawal.reason, "by": withdrawal.withdrawn_by_name, "at": withdrawal.withdrawn_at.isoformat()}


class SubmissionCollectionApi(APIView):
    """POST submits one run (scope submit); GET lists runs (scope read)."""

    parser_classes = [JSONDocumentParser]
    filterset_class = SubmissionFilter

    @property
    def required_scope(self) -> str:
        return "submit" if self.request.method == "POST" else "read"

    @extend_schema(request={"application/json": OpenApiTypes.OBJECT},
                   responses={201: SubmissionSummarySerializer, 200: SubmissionSummarySerializer,
                              400: ProblemSerializer, 413: ProblemSerializer, 415: ProblemSerializer},
                   summary="Submit one run (idempotent: the same document returns the same run)")
    def post(self, request: Request) -> Response:
        token = request.auth if isinstance(request.auth, ApiToken) else None
        run, created = submission_create(document=request.data, submitted_by=request.user, token=token)
        data = SubmissionSummarySerializer(run, context={"request": request}).data
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
                        headers={"Location": data["url"]})

    @extend_schema(parameters=[SubmissionFilter], responses=SubmissionSummarySerializer(many=True),
                   summary="List runs, newest first, with filters and cursor pagination")
    def get(self, request: Request) -> Response:
        runs = SubmissionFilter(request.query_params, queryset=submission_list(), request=request)
        if not runs.is_valid():
            raise ValidationError(runs.errors)
        paginator = NewestFirstCursor()
        page = paginator.paginate_queryset(runs.qs, request, view=self)
        data = SubmissionSummarySerializer(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)


class SubmissionDetailApi(APIView):
    """One run: registry metadata plus `document`, byte for byte the stored canonical form."""

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT), 404: ProblemSerializer},
                   summary="Read one run with its metadata")
    def get(self, request: Request, run_id: int) -> HttpResponse:
        run = policy.run_get(policy.for_request(request), run_id)
        meta = json.dumps(SubmissionSummarySerializer(run, context={"request": request}).data,
                          separators=(",", ":"), ensure_ascii=False)
        # Splice the stored canonical text in as it is, so no float or key order is re-serialised.
        body = meta[:-1] + ',"document":' + run.canonical + "}"
        return HttpResponse(body.encode(), content_type="application/json")


class SubmissionDocumentApi(APIView):
    """The canonical document alone: its SHA-256 is the run's digest, so anyone can check it."""

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT), 404: ProblemSerializer},
                   summary="The run's canonical RFC 8785 document (hashes to its digest)")
    def get(self, request: Request, run_id: int) -> HttpResponse:
        run = policy.run_get(policy.for_request(request), run_id)
        response = HttpResponse(run.canonical.encode(), content_type="application/json")
        response["Digest"] = run.digest
        return response


class SubmissionWithdrawApi(APIView):
    """Withdraw a run (admins, including an `admin`-scoped token): the run stays, marked withdrawn, with the
    reason; the withdrawal is an audit-log entry. 409 if it is already withdrawn."""

    policy_action = policy.RUN_WITHDRAW

    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=2000, help_text="why: shown with the run and in the audit log")

        class Meta:
            ref_name = "WithdrawInput"

    class OutputSerializer(serializers.Serializer):
        run = serializers.IntegerField(source="submission_id")
        digest = serializers.CharField(source="submission.digest")
        reason = serializers.CharField()
        withdrawn_by = serializers.CharField(source="withdrawn_by_name")
        withdrawn_at = serializers.DateTimeField()

        class Meta:
            ref_name = "Withdrawal"

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, 400: ProblemSerializer,
                                                       403: ProblemSerializer, 404: ProblemSerializer,
                                                       409: ProblemSerializer},
                   summary="Withdraw a run, with a reason (admins)")
    def post(self, request: Request, run_id: int) -> Response:
        principal = policy.for_request(request)
        run = policy.run_get(principal, run_id, policy.RUN_WITHDRAW)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        withdrawal = submission_withdraw(submission=run, reason=data.validated_data["reason"], actor=request.user)
        return Response(self.OutputSerializer(withdrawal).data)
