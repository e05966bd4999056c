"""Submission endpoints: submit one run, list runs with filters, read one run exactly as stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any, cast

from django.http import HttpResponse
from django.urls import reverse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from protocol.per_accelerator import per_accelerator
from registry import policy
from registry.api.exception_handlers import problem
from registry.api.filters import SubmissionFilter
from registry.api.pagination import NewestFirstCursor
from registry.api.parsers import DocumentBatch, JSONDocumentParser, NDJSONBatchParser
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import StrictSerializer, reject_empty_parameters
from registry.choices import AuditKind
from registry.models import ApiToken, Submission
from registry.presentation.per_accelerator import run_figures
from registry.selectors.artifacts import run_artifacts
from registry.selectors.audit import audit_seq_of
from registry.selectors.submissions import submission_list
from registry.services.submissions import (
    InvalidDocument,
    submission_create,
    submission_create_batch,
    submission_withdraw,
)


class SubmissionSummarySerializer(serializers.ModelSerializer[Submission]):
    url = serializers.SerializerMethodField()
    withdrawn = serializers.SerializerMethodField()
    per_accelerator = serializers.SerializerMethodField(
        help_text="throughput, output tokens/s and input+output tokens/s per accelerator: derived from the run "
        "(for MLPerf results 'derived, not an MLPerf metric'), each with its unit, or the reason it is absent"
    )

    class Meta:
        model = Submission
        fields = [
            "id",
            "digest",
            "url",
            "comparability_key",
            "protocol_version",
            "phase",
            "workload_name",
            "workload_version",
            "scenario_kind",
            "precision_weights",
            "precision_activations",
            "batch_size",
            "system_name",
            "accelerator_vendor",
            "accelerator_model",
            "accelerator_count",
            "submitter",
            "source",
            "started_at",
            "headline_metric",
            "headline_value",
            "headline_unit",
            "headline_lower_is_better",
            "trust",
            "submitted_by_name",
            "submitted_at",
            "withdrawn",
            "per_accelerator",
        ]

    def to_representation(self, instance: Submission) -> dict[str, Any]:
        """What ModelSerializer.to_representation answers (the same fields, order, conversions and None), without
        building the fields: ModelSerializer builds its 28 fields from the model for every serializer instance,
        about 1 ms, more than the rest of a single submission's answer (issue 42). Each model field's conversion is
        the bound field of one prototype built once per process (`_summary_plan`); conversions are pure, so the
        prototype is shared by threads. Tests check the answer equals DRF's own for stored and withdrawn runs."""
        out: dict[str, Any] = {}
        for name, source, convert in _summary_plan():
            if convert is None:
                out[name] = getattr(self, f"get_{name}")(instance)
            else:
                value = getattr(instance, source)
                out[name] = None if value is None else convert(value)
        return out

    def get_url(self, run: Submission) -> str:
        request: Request = self.context["request"]
        return request.build_absolute_uri(reverse("api-submission-detail", args=[run.pk]))

    def get_withdrawn(self, run: Submission) -> dict[str, str] | None:
        return withdrawn_words(run)

    def get_per_accelerator(self, run: Submission) -> dict[str, Any]:
        return run_figures(run).as_dict()


@cache
def _summary_plan() -> tuple[tuple[str, str, Callable[[Any], Any] | None], ...]:
    """(name, attribute, conversion) of each field of SubmissionSummarySerializer in order; conversion None for a
    method field (`get_<name>`). Built once from a prototype's fields."""
    plan: list[tuple[str, str, Callable[[Any], Any] | None]] = []
    for name, field in SubmissionSummarySerializer().fields.items():
        if isinstance(field, serializers.SerializerMethodField):
            plan.append((name, name, None))
        else:
            assert len(field.source_attrs) == 1, f"{name}: a model column read directly"
            plan.append((name, field.source_attrs[0], field.to_representation))
    return tuple(plan)


def withdrawn_words(run: Submission) -> dict[str, str] | None:
    """Who withdrew the run, when and why; None while it stands."""
    withdrawal = getattr(run, "withdrawal", None)
    if withdrawal is None:
        return None
    return {"reason": withdrawal.reason, "by": withdrawal.withdrawn_by_name, "at": withdrawal.withdrawn_at.isoformat()}


# --- a batch of documents (application/x-ndjson), one result line per document line ---------------------


class SubmissionBatchResultSerializer(serializers.Serializer[Any]):
    """One line of a batch's answer: what became of the document on line `line` of the request."""

    line = serializers.IntegerField(help_text="the document's line in the request, from 1 (blank lines count)")
    status = serializers.IntegerField(help_text="201 stored, 200 already known, else the problem's status")
    result = serializers.ChoiceField(choices=["stored", "known", "refused"])
    id = serializers.IntegerField(required=False, help_text="the run (stored or known)")
    note = serializers.CharField(
        required=False,
        help_text="when the document states a measurement already stored from the same source files: which run, "
        "and whether it was known (nothing stored) or replaced (withdrawn, kept on record)",
    )
    digest = serializers.CharField(required=False)
    url = serializers.CharField(required=False)
    problem = ProblemSerializer(
        required=False,
        help_text="why it was refused: the problem details a single submission of it would get, pointers included",
    )

    class Meta:
        ref_name = "SubmissionBatchResult"


def _batch_lines(request: Request, batch: DocumentBatch, token: ApiToken | None) -> list[dict[str, Any]]:
    numbers = [number for number, _ in batch.lines]
    outcomes = submission_create_batch(
        documents=(document for _, document in batch.lines), submitted_by=signed_in_user(request), token=token
    )
    lines: list[dict[str, Any]] = []
    for number, outcome in zip(numbers, outcomes, strict=True):
        if outcome.run is not None:
            lines.append(
                {
                    "line": number,
                    "status": 201 if outcome.status == "stored" else 200,
                    "result": outcome.status,
                    "id": outcome.run.pk,
                    "digest": outcome.run.digest,
                    "url": request.build_absolute_uri(reverse("api-submission-detail", args=[outcome.run.pk])),
                    **({"note": outcome.note} if outcome.note else {}),
                }
            )
        else:
            error = outcome.error
            assert error is not None
            lines.append(
                {
                    "line": number,
                    "status": error.status,
                    "result": "refused",
                    "problem": problem(error.status, error.code, error.message, error.errors or None),
                }
            )
    return lines


class SubmissionCollectionApi(APIView):
    """POST submits one run, or a batch of runs as NDJSON (scope submit); GET lists runs (scope read)."""

    parser_classes = [JSONDocumentParser, NDJSONBatchParser]
    filterset_class = SubmissionFilter
    filter_backends = [DjangoFilterBackend]  # documents the filters; get() applies them itself
    pagination_class = NewestFirstCursor  # documents the page envelope and its cursor/limit parameters
    queryset = Submission.objects.none()  # the model the filters document (never evaluated)

    policy_action = {"GET": policy.RUN_READ, "POST": policy.RUN_SUBMIT}
    request_body_required = True  # the description says so (registry/api/schema.py); post() refuses an empty one

    @extend_schema(
        request={"application/json": OpenApiTypes.OBJECT, "application/x-ndjson": OpenApiTypes.STR},
        responses={
            (201, "application/json"): SubmissionSummarySerializer,
            (200, "application/json"): SubmissionSummarySerializer,
            (200, "application/x-ndjson"): OpenApiResponse(
                SubmissionBatchResultSerializer,
                description="a batch: one SubmissionBatchResult per line, in request order",
            ),
            (400, "application/problem+json"): ProblemSerializer,
            (401, "application/problem+json"): ProblemSerializer,
            (403, "application/problem+json"): ProblemSerializer,
            (413, "application/problem+json"): ProblemSerializer,
            (415, "application/problem+json"): ProblemSerializer,
            (429, "application/problem+json"): ProblemSerializer,
        },
        summary="Submit one run, or a batch of runs as NDJSON (idempotent: the same document returns the same run)",
        description="`application/json`: one document; 201 stored, 200 already known. "
        "`application/x-ndjson`: one document per line (at most BENCHREG_MAX_BATCH_DOCUMENTS "
        "lines and BENCHREG_MAX_BATCH_BYTES bytes); 200 with one result line per document, "
        "each stored, known or refused alone with the problem details a single submission "
        "would get.",
    )
    def post(self, request: Request) -> Response | HttpResponse:
        token = request.auth if isinstance(request.auth, ApiToken) else None
        if request.stream is None:  # DRF parses no body of length 0: say so, not every field a document lacks
            raise InvalidDocument(
                "the body is empty",
                errors=[{"pointer": "", "code": "empty-body", "message": "send one JSON document, or NDJSON lines"}],
            )
        if isinstance(request.data, DocumentBatch):
            body = "".join(
                json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"
                for line in _batch_lines(request, request.data, token)
            )
            return HttpResponse(body.encode(), content_type="application/x-ndjson")
        # The service's transaction is the request's only one (no savepoint around it: two round trips fewer).
        # The answer is built after its commit without touching the database for a run stored just now (its
        # summary columns are in memory and it is not withdrawn), so no read after the commit can fail a request
        # that stored the run; a failure before the commit stores nothing (503).
        # The JSON parser reads any JSON value; protocol.check refuses one that is not an object, with its pointer.
        document = cast(Any, request.data)
        run, created = submission_create(document=document, submitted_by=signed_in_user(request), token=token)
        if created:
            run._state.fields_cache["withdrawal"] = None  # a run stored just now is not withdrawn: no query
        data = SubmissionSummarySerializer(run, context={"request": request}).data
        return Response(
            data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK, headers={"Location": data["url"]}
        )

    @extend_schema(
        responses=SubmissionSummarySerializer(many=True),
        summary="List runs, newest first, with filters and cursor pagination",
    )
    def get(self, request: Request) -> Response:
        reject_empty_parameters(request.query_params, list(SubmissionFilter.base_filters))
        runs = SubmissionFilter(request.query_params, queryset=submission_list(), request=request)
        if not runs.is_valid():
            raise ValidationError(runs.errors)
        paginator = NewestFirstCursor()
        page: list[Submission] | None = paginator.paginate_queryset(runs.qs, request, view=self)
        data = SubmissionSummarySerializer(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)


class SubmissionDetailApi(APIView):
    """One run: registry metadata plus `document`, byte for byte the stored canonical form."""

    policy_action = policy.RUN_READ

    @extend_schema(
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT), 404: ProblemSerializer},
        summary="Read one run with its metadata",
    )
    def get(self, request: Request, run_id: int) -> HttpResponse:
        run = policy.run_get(policy.for_request(request), run_id)
        data = SubmissionSummarySerializer(run, context={"request": request}).data
        # The number of its run.submitted audit entry: with id, digest, trust and submitted_at, all a third party
        # needs to rebuild the entry's text (protocol/audit_entries.py) and check its leaf.
        data["audit_seq"] = audit_seq_of(kind=AuditKind.RUN_SUBMITTED, subject=run.digest)
        # MLCommons' citations of an imported result (result ID, audit ID, Details link, retrieval date)
        data["citations"] = [c.as_evidence() for c in run.citations.order_by("retrieved_at", "pk")]
        # From the document itself: the reasons for an absent figure are exact (lists read the columns).
        data["per_accelerator"] = per_accelerator(run.document).as_dict()
        # the files its document names (provenance.artifacts): each stored one with its download
        data["artifacts"] = [
            {**a, "url": request.build_absolute_uri(a["path"]) if a["path"] else None} for a in run_artifacts(run)
        ]
        meta = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        # Splice the stored canonical text in as it is, so no float or key order is re-serialised.
        body = meta[:-1] + ',"document":' + run.canonical + "}"
        return HttpResponse(body.encode(), content_type="application/json")


class SubmissionDocumentApi(APIView):
    """The canonical document alone: its SHA-256 is the run's digest, so anyone can check it."""

    policy_action = policy.RUN_READ

    @extend_schema(
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT), 404: ProblemSerializer},
        summary="The run's canonical RFC 8785 document (hashes to its digest)",
    )
    def get(self, request: Request, run_id: int) -> HttpResponse:
        run = policy.run_get(policy.for_request(request), run_id)
        response = HttpResponse(run.canonical.encode(), content_type="application/json")
        response["Digest"] = run.digest
        return response


class SubmissionWithdrawApi(APIView):
    """Withdraw a run (admins, including an `admin`-scoped token): the run stays, marked withdrawn, with the
    reason; the withdrawal is an audit-log entry. 409 if it is already withdrawn."""

    policy_action = policy.RUN_WITHDRAW

    class InputSerializer(StrictSerializer):
        reason = serializers.CharField(max_length=2000, help_text="why: shown with the run and in the audit log")

        class Meta:
            ref_name = "WithdrawInput"

    class OutputSerializer(serializers.Serializer[Any]):
        run = serializers.IntegerField(source="submission_id")
        digest = serializers.CharField(source="submission.digest")
        reason = serializers.CharField()
        withdrawn_by = serializers.CharField(source="withdrawn_by_name")
        withdrawn_at = serializers.DateTimeField()

        class Meta:
            ref_name = "Withdrawal"

    @extend_schema(
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            400: ProblemSerializer,
            403: ProblemSerializer,
            404: ProblemSerializer,
            409: ProblemSerializer,
        },
        summary="Withdraw a run, with a reason (admins)",
    )
    def post(self, request: Request, run_id: int) -> Response:
        principal = policy.for_request(request)
        run = policy.run_get(principal, run_id, policy.RUN_WITHDRAW)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        withdrawal = submission_withdraw(
            submission=run, reason=data.validated_data["reason"], actor=signed_in_user(request)
        )
        return Response(self.OutputSerializer(withdrawal).data)
