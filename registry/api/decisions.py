"""Decision endpoints: declare a procurement question (answered at once), list one's decisions, read one."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.pagination import NewestFirstCursor
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import FreeFormObjectField, WebhookURLField
from registry.exceptions import RegistryError
from registry.models import Agent, Decision
from registry.presentation.spreadsheet import csv_text
from registry.selectors.decisions import decision_latest_answer, decision_list
from registry.services.decision_followups import decision_gap_plan, decision_report
from registry.services.decisions import decision_create, decision_fresh


class DecisionInputSerializer(serializers.Serializer[Any]):
    title = serializers.CharField(max_length=200)
    question = FreeFormObjectField(
        help_text=(
            "phase, workload, workload_version?, scenario, objectives [{metric, percentile, max_ms}] (empty: "
            "throughput only), quality {metric?, target_ratio}, demand {peak, sustained, unit} (or {value, unit}: "
            "peak and sustained alike), headroom?, redundancy? (spare systems, N+k), candidates "
            "{accelerator_models?, accelerator_vendors?, precisions?, exclude_preview?}, prices {currency?, "
            "system_hour {'8x <accelerator model>' or '*': price per system-hour}, accelerator_hour {accelerator "
            "model: price per accelerator-hour}, purchase {'8x <model>': {price, lifetime_hours}}, energy_per_kwh?}, "
            "criteria ⊆ [cost, latency, energy]. A field the answer would not use is refused."
        )
    )
    webhook_url = WebhookURLField(
        required=False,
        default="",
        help_text=(
            "receives a signed decision.evidence_changed event. Only a caller who may submit runs may set one (403); "
            "http(s) without user:password@, its host a global address or a name resolving only to global addresses "
            "(422 otherwise; the operator may allow internal networks). Redirects are not followed."
        ),
    )

    class Meta:
        ref_name = "DecisionInput"


class DecisionOutputSerializer(serializers.ModelSerializer[Decision]):
    url = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()
    answer = serializers.SerializerMethodField()

    class Meta:
        model = Decision
        fields = [
            "id",
            "url",
            "page",
            "title",
            "question",
            "status",
            "change",
            "changed_at",
            "stale_since",
            "recompute_error",
            "webhook_url",
            "created_at",
            "answer",
        ]

    def get_url(self, decision: Decision) -> str:
        request: Request = self.context["request"]
        return request.build_absolute_uri(reverse("api-decision-detail", args=[decision.pk]))

    def get_page(self, decision: Decision) -> str:
        request: Request = self.context["request"]
        return request.build_absolute_uri(reverse("decision", args=[decision.pk]))

    def get_answer(self, decision: Decision) -> dict[str, Any] | None:
        latest = decision.answered or decision_latest_answer(decision=decision)
        if latest is None:
            return None
        return {
            "number": latest.number,
            "digest": latest.digest,
            "created_at": latest.created_at.isoformat(),
            **(latest.answer if self.context.get("full", True) else {"summary": latest.answer["summary"]}),
        }


CREATED = inline_serializer(
    "DecisionCreated",
    fields={
        "webhook_secret": serializers.CharField(
            help_text="Standard Webhooks secret for verifying the webhook; shown only in this answer"
        )
    },
)


class DecisionCollectionApi(APIView):
    """POST declares a decision and answers it (201); GET lists the caller's decisions (an admin's: all)."""

    policy_action = {"GET": policy.DECISION_READ, "POST": policy.DECISION_CREATE}
    pagination_class = NewestFirstCursor  # documents the page envelope and its cursor/limit parameters

    @extend_schema(
        request=DecisionInputSerializer,
        operation_id="decisions_create",
        description="Each person keeps at most BENCHREG_MAX_DECISIONS_PER_USER decisions (default 50); "
        "one more is refused with 409 (code too-many-decisions).",
        responses={
            201: DecisionOutputSerializer,
            400: ProblemSerializer,
            401: ProblemSerializer,
            403: ProblemSerializer,
            409: ProblemSerializer,
            422: ProblemSerializer,
        },
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.data, dict) and request.data.get("webhook_url"):
            policy.require(policy.for_request(request), policy.WEBHOOK_REGISTER, hidden=False)
        data = DecisionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decision = decision_create(owner=signed_in_user(request), **data.validated_data)
        body = dict(DecisionOutputSerializer(decision, context={"request": request}).data)
        if decision.webhook_secret:
            body["webhook_secret"] = decision.webhook_secret
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["url"]})

    @extend_schema(
        operation_id="decisions_list",
        responses={200: DecisionOutputSerializer(many=True), 401: ProblemSerializer, 403: ProblemSerializer},
    )
    def get(self, request: Request) -> Response:
        decisions = policy.visible_decisions(policy.for_request(request), decision_list())
        paginator = NewestFirstCursor()
        page = paginator.paginate_queryset(decisions, request, view=self)
        data = DecisionOutputSerializer(page, many=True, context={"request": request, "full": False}).data
        return paginator.get_paginated_response(data)


class DecisionDetailApi(APIView):
    policy_action = policy.DECISION_READ

    @extend_schema(
        operation_id="decisions_retrieve",
        responses={
            200: DecisionOutputSerializer,
            401: ProblemSerializer,
            403: ProblemSerializer,
            404: ProblemSerializer,
        },
    )
    def get(self, request: Request, decision_id: int) -> Response:
        decision = decision_fresh(decision=policy.decision_get(policy.for_request(request), decision_id))
        return Response(DecisionOutputSerializer(decision, context={"request": request}).data)


EXPORT_COLUMNS = (
    "configuration",
    "meets",
    "systems_needed",
    "systems_ci_low",
    "systems_ci_high",
    "cost_per_million",
    "cost_unit",
    "energy_per_output",
    "energy_unit",
    "precision",
    "quality",
    "gaps",
    "run_id",
    "run_digest",
    "run_url",
)


def decision_export_rows(answer: dict[str, Any], absolute: Any) -> list[dict[str, Any]]:
    """One row per cited run of each candidate, with the candidate's figures (the CSV and JSON export)."""
    rows = []
    for c in answer["candidates"]:
        for i, run in enumerate(c["runs"]):
            beside = {b["field"]: b["value"] for b in c["beside"][i]}
            rows.append(
                {
                    "configuration": c["label"],
                    "meets": c["meets"],
                    "systems_needed": c["systems_needed"]["value"],
                    "systems_ci_low": c["systems_needed"].get("ci_low"),
                    "systems_ci_high": c["systems_needed"].get("ci_high"),
                    # a training answer's candidates cost and use energy per run (protocol.decisions.training)
                    "cost_per_million": (c.get("cost_per_million") or c["cost_per_run"])["value"],
                    "cost_unit": (c.get("cost_per_million") or c["cost_per_run"])["unit"],
                    "energy_per_output": (c.get("energy_per_output") or c["energy_per_run"])["value"],
                    "energy_unit": (c.get("energy_per_output") or c["energy_per_run"])["unit"],
                    "precision": beside.get("precision.weights"),
                    "quality": beside.get("metrics.quality.value"),
                    "gaps": "; ".join(g["code"] for g in c["gaps"]),
                    "run_id": run["id"],
                    "run_digest": run["digest"],
                    "run_url": absolute(run["url"]),
                }
            )
    return rows


class DecisionExportApi(APIView):
    """The latest answer as CSV (one row per cited run) or JSON (?format=json): each run's digest and URL."""

    policy_action = policy.DECISION_READ

    @extend_schema(
        operation_id="decisions_export",
        parameters=[OpenApiParameter("as", enum=["csv", "json"], default="csv")],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
            401: ProblemSerializer,
            403: ProblemSerializer,
            404: ProblemSerializer,
        },
    )
    def get(self, request: Request, decision_id: int) -> HttpResponse:
        decision = decision_fresh(decision=policy.decision_get(policy.for_request(request), decision_id))
        latest = decision_latest_answer(decision=decision)
        answer = latest.answer if latest else {"candidates": []}
        rows = decision_export_rows(answer, request.build_absolute_uri)
        if request.query_params.get("as") == "json":
            return JsonResponse(
                {
                    "decision": decision.pk,
                    "status": decision.status,
                    "answer": latest.number if latest else None,
                    "digest": latest.digest if latest else None,
                    "rows": rows,
                }
            )
        response = HttpResponse(csv_text(rows, EXPORT_COLUMNS), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="decision-{decision.pk}.csv"'
        return response


class DecisionReportApi(APIView):
    """POST issues a signed report of the decision's answer (re-answered first if its evidence changed): 202."""

    policy_action = policy.DECISION_READ

    @extend_schema(
        operation_id="decisions_report",
        request=None,
        responses={
            202: inline_serializer(
                "DecisionReportQueued",
                fields={
                    "report": serializers.IntegerField(),
                    "status": serializers.CharField(),
                    "url": serializers.URLField(),
                },
            ),
            401: ProblemSerializer,
            403: ProblemSerializer,
            404: ProblemSerializer,
            422: ProblemSerializer,
        },
    )
    def post(self, request: Request, decision_id: int) -> Response:
        decision = policy.decision_get(policy.for_request(request), decision_id)
        policy.require(policy.for_request(request), policy.DECISION_CREATE, hidden=False)
        report = decision_report(decision=decision, requested_by=signed_in_user(request))
        report.refresh_from_db()
        url = request.build_absolute_uri(reverse("api-report-detail", args=[report.pk]))
        return Response(
            {"report": report.pk, "status": report.status, "url": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )


class DecisionGapPlanInputSerializer(serializers.Serializer[Any]):
    candidate = serializers.CharField(max_length=500, help_text="a candidate's label from the answer")
    agents = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=100)
    repetitions = serializers.IntegerField(min_value=3, max_value=50, default=3)
    options = FreeFormObjectField(required=False, help_text="further RunSpec fields (quick, backend, …)")

    class Meta:
        ref_name = "DecisionGapPlanInput"


class DecisionGapPlanApi(APIView):
    """POST turns a missing or weak candidate into a benchmark plan for enrolled agents (201)."""

    policy_action = policy.PLAN_CREATE

    @extend_schema(
        operation_id="decisions_gap_plan",
        request=DecisionGapPlanInputSerializer,
        responses={
            201: inline_serializer(
                "DecisionGapPlan", fields={"plan": serializers.IntegerField(), "jobs": serializers.IntegerField()}
            ),
            400: ProblemSerializer,
            401: ProblemSerializer,
            403: ProblemSerializer,
            404: ProblemSerializer,
        },
    )
    def post(self, request: Request, decision_id: int) -> Response:
        principal = policy.for_request(request)
        decision = policy.decision_get(principal, decision_id)
        data = DecisionGapPlanInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        wanted = data.validated_data["agents"]
        agents = list(Agent.objects.filter(pk__in=wanted, revoked_at__isnull=True))
        if len(agents) != len(set(wanted)):
            raise RegistryError(
                "an agent is unknown or revoked",
                code="invalid-plan",
                errors=[{"pointer": "/agents", "message": "enrolled, not revoked agents"}],
            )
        plan = decision_gap_plan(
            decision=decision,
            candidate=data.validated_data["candidate"],
            agents=agents,
            created_by=signed_in_user(request),
            repetitions=data.validated_data["repetitions"],
            options=data.validated_data.get("options"),
        )
        return Response({"plan": plan.pk, "jobs": plan.jobs.count()}, status=status.HTTP_201_CREATED)
