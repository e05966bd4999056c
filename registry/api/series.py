"""Schedules, series, alerts and any run's history over the API (docs/series.md).

Schedules are their owner's (and admins'), like plans: a submitter creates one for a plan they own, changes,
pauses, resumes (PATCH `paused`) and deletes it; anyone else gets 404. Series, alerts and histories are
evidence derived from runs and are read like runs (scope `read`).
"""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.pagination import NewestFirstCursor
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import FreeFormObjectField, QuerySerializer, WebhookURLField
from registry.models import Alert, Schedule, ScheduleFire, Series
from registry.selectors.agents import agents_by_reference
from registry.selectors.series import alert_list, run_history, series_list
from registry.services.schedules import schedule_create, schedule_delete, schedule_update
from registry.services.series import alert_body

PROBLEMS = {400: ProblemSerializer, 401: ProblemSerializer, 403: ProblemSerializer}


# --- serializers -------------------------------------------------------------------------------------------


class MatrixEntrySerializer(serializers.Serializer[Any]):
    label = serializers.CharField(max_length=100)  # type: ignore[assignment]  # a declared field, not Field.label
    options = FreeFormObjectField(required=False, default=dict)

    class Meta:
        ref_name = "ScheduleMatrixEntry"


class ScheduleFireSerializer(serializers.Serializer[Any]):
    due_at = serializers.DateTimeField()
    variant = serializers.CharField()
    status = serializers.ChoiceField(choices=["fired", "partial", "missed"])
    plan = serializers.IntegerField(source="plan_id", allow_null=True)
    missed = serializers.ListField(child=serializers.DictField())


class ScheduleSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    plan = serializers.IntegerField(source="plan_id")
    cron = serializers.CharField()
    agents = serializers.SerializerMethodField()
    options = serializers.DictField()
    matrix = MatrixEntrySerializer(many=True)
    state = serializers.ChoiceField(choices=["active", "paused", "deleted"])
    paused = serializers.BooleanField()
    webhook_url = serializers.CharField()
    last_due_at = serializers.DateTimeField(allow_null=True)
    created_by_name = serializers.CharField()
    created_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)
    fires = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_agents(self, schedule: Schedule) -> list[str]:
        return sorted(a.name for a in schedule.agents.all())

    @extend_schema_field(ScheduleFireSerializer(many=True))
    def get_fires(self, schedule: Schedule) -> list[dict[str, Any]]:
        fires = ScheduleFire.objects.filter(schedule=schedule).order_by("-due_at", "variant")[:50]
        return ScheduleFireSerializer(fires, many=True).data  # type: ignore[return-value]


MAX_VARIANTS = settings.BENCHREG_SCHEDULE_MAX_VARIANTS
MATRIX_HELP = (
    f"at most {MAX_VARIANTS} variants (BENCHREG_SCHEDULE_MAX_VARIANTS), each with a unique label and "
    "options no other variant has; each due time queues variants x agents x precisions x batch sizes "
    f"jobs, at most {settings.BENCHREG_MAX_JOBS_PER_PLAN} (BENCHREG_MAX_JOBS_PER_PLAN)"
)
WEBHOOK_HELP = (
    "alerts are POSTed here, signed with the schedule's own secret: a new address gets a new secret, "
    "returned once as `webhook_secret` in this answer; an address the registry would not deliver to "
    "is refused (422)"
)


class MatrixField(serializers.ListField):
    """A schedule's matrix: its length is checked before any entry is (a 20,000-entry body costs nothing)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=MatrixEntrySerializer(), max_length=MAX_VARIANTS, **kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
        if isinstance(data, list) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class ScheduleCreateSerializer(serializers.Serializer[Any]):
    plan = serializers.IntegerField(help_text="a plan you own: its configuration is what the schedule repeats")
    name = serializers.CharField(max_length=200, required=False, default="")
    cron = serializers.CharField(max_length=120, help_text="minute hour day-of-month month day-of-week, UTC")
    agents = serializers.ListField(child=serializers.CharField(max_length=60), min_length=1, max_length=200)
    options = FreeFormObjectField(required=False, default=dict, help_text="RunSpec fields over the plan's")
    matrix = MatrixField(required=False, default=list, help_text=MATRIX_HELP)
    webhook_url = WebhookURLField(required=False, default="", help_text=WEBHOOK_HELP)

    class Meta:
        ref_name = "ScheduleCreateInput"


class ScheduleChangeSerializer(serializers.Serializer[Any]):
    cron = serializers.CharField(max_length=120, required=False)
    options = FreeFormObjectField(required=False)
    matrix = MatrixField(required=False, help_text=MATRIX_HELP)
    paused = serializers.BooleanField(required=False, help_text="true pauses, false resumes (from now)")
    webhook_url = WebhookURLField(required=False, help_text=WEBHOOK_HELP)

    class Meta:
        ref_name = "ScheduleChangeInput"


class SeriesSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    schedule = serializers.IntegerField(source="schedule_id")
    variant = serializers.CharField()
    agent = serializers.CharField(source="agent.name")
    config_key = serializers.CharField()
    headline_metric = serializers.CharField()
    created_at = serializers.DateTimeField()


class ChangeSerializer(serializers.Serializer[Any]):
    changed = serializers.BooleanField(allow_null=True)
    ratio = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    reference_runs = serializers.IntegerField()
    evidence = serializers.CharField(allow_null=True)
    direction = serializers.CharField()
    confidence = serializers.FloatField()
    method = serializers.CharField()


class HistoryPointSerializer(serializers.Serializer[Any]):
    run = serializers.IntegerField()
    digest = serializers.CharField()
    submitted_at = serializers.DateTimeField()
    measured_at = serializers.DateTimeField(allow_null=True, help_text="provenance.started_at")
    at = serializers.DateTimeField(help_text="the time plotted: measured_at, or in a series submitted_at")
    round = serializers.CharField(allow_null=True)
    software = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    enough_evidence = serializers.BooleanField()
    change_point = serializers.BooleanField()
    change = ChangeSerializer(allow_null=True)


class SoftwareGroupSerializer(serializers.Serializer[Any]):
    software = serializers.CharField()
    runs = serializers.ListField(child=serializers.IntegerField())
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    independent_values = serializers.IntegerField()
    enough_evidence = serializers.BooleanField()
    evidence = serializers.CharField(allow_null=True)
    interval_method = serializers.CharField()


class UnplacedRunSerializer(serializers.Serializer[Any]):
    run = serializers.IntegerField()
    digest = serializers.CharField()
    submitted_at = serializers.DateTimeField()
    round = serializers.CharField(allow_null=True)
    software = serializers.CharField()
    headline = serializers.FloatField(allow_null=True)
    reason = serializers.CharField()


class HistorySerializer(serializers.Serializer[Any]):
    run = serializers.IntegerField()
    scope = serializers.ChoiceField(choices=["series", "configuration", "published"])
    time_basis = serializers.ChoiceField(
        choices=["measured", "submitted"], help_text="which time of each run `at` is: a series' is submitted"
    )
    series = serializers.IntegerField(allow_null=True)
    metric = serializers.CharField()
    unit = serializers.CharField(allow_null=True)
    lower_is_better = serializers.BooleanField()
    method = serializers.CharField()
    truncated = serializers.BooleanField()
    points = HistoryPointSerializer(many=True)
    software = SoftwareGroupSerializer(many=True)
    alerts = serializers.ListField(child=serializers.IntegerField())
    unplaced = UnplacedRunSerializer(many=True, help_text="runs with no measured time: not on the time axis")


class SeriesDetailSerializer(SeriesSerializer):
    history = HistorySerializer(allow_null=True)


class RunRefSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    digest = serializers.CharField()


class DifferenceSerializer(serializers.Serializer[Any]):
    pointer = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


class AlertSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    series = serializers.IntegerField()
    schedule = serializers.IntegerField()
    variant = serializers.CharField()
    agent = serializers.CharField()
    metric = serializers.CharField()
    run = RunRefSerializer()
    previous = RunRefSerializer()
    reference_runs = serializers.ListField(child=serializers.IntegerField())
    ratio = serializers.FloatField()
    ci_low = serializers.FloatField()
    ci_high = serializers.FloatField()
    confidence = serializers.FloatField()
    p_value = serializers.FloatField()
    direction = serializers.ChoiceField(choices=["better", "worse"])
    differences = DifferenceSerializer(many=True)
    method = serializers.CharField()
    summary = serializers.CharField()


# --- schedules ---------------------------------------------------------------------------------------------


class ScheduleAnswerSerializer(ScheduleSerializer):
    """What a create or change answers (the schema only: `webhook_secret` is added by _with_secret, once)."""

    webhook_secret = serializers.CharField(
        required=False,
        help_text="Standard Webhooks secret (whsec_…) for verifying this schedule's alerts; only in "
        "the answer that set its webhook_url, never shown again",
    )


SCHEDULE_WITH_SECRET = ScheduleAnswerSerializer


def _with_secret(schedule: Schedule, before: str) -> dict[str, Any]:
    """The schedule, plus its webhook secret when this answer is the one that made it (shown only once)."""
    body = dict(ScheduleSerializer(schedule).data)
    if schedule.webhook_secret and schedule.webhook_secret != before:
        body["webhook_secret"] = schedule.webhook_secret
    return body


class ScheduleCollectionApi(APIView):
    """Your schedules (an admin's: all), newest first; create one for a plan you own."""

    policy_action = {"GET": policy.SCHEDULE_LIST, "POST": policy.SCHEDULE_CREATE}
    pagination_class = NewestFirstCursor  # documents the page envelope and its cursor/limit parameters

    @extend_schema(responses={200: ScheduleSerializer(many=True), 401: ProblemSerializer, 403: ProblemSerializer})
    def get(self, request: Request) -> Response:
        schedules = policy.visible_schedules(policy.for_request(request), Schedule.objects.all())
        paginator = NewestFirstCursor()
        page = paginator.paginate_queryset(schedules.prefetch_related("agents"), request, view=self)
        return paginator.get_paginated_response(ScheduleSerializer(page, many=True).data)

    @extend_schema(
        request=ScheduleCreateSerializer,
        responses={201: SCHEDULE_WITH_SECRET, 404: ProblemSerializer, 422: ProblemSerializer, **PROBLEMS},
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.data, dict) and request.data.get("webhook_url"):
            policy.require(policy.for_request(request), policy.WEBHOOK_REGISTER, hidden=False)
        data = ScheduleCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        plan = policy.plan_get(policy.for_request(request), fields.pop("plan"))
        agents = agents_by_reference(fields.pop("agents"))
        schedule = schedule_create(created_by=signed_in_user(request), plan=plan, agents=agents, **fields)
        return Response(_with_secret(schedule, ""), status=status.HTTP_201_CREATED)


class ScheduleDetailApi(APIView):
    """One schedule with its latest 50 fires (fired, partial or missed): its owner and admins."""

    policy_action = {"GET": policy.SCHEDULE_READ, "PATCH": policy.SCHEDULE_CHANGE, "DELETE": policy.SCHEDULE_CHANGE}

    @extend_schema(responses={200: ScheduleSerializer, 401: ProblemSerializer, 404: ProblemSerializer})
    def get(self, request: Request, schedule_id: int) -> Response:
        return Response(ScheduleSerializer(policy.schedule_get(policy.for_request(request), schedule_id)).data)

    @extend_schema(
        request=ScheduleChangeSerializer,
        responses={
            200: SCHEDULE_WITH_SECRET,
            404: ProblemSerializer,
            409: ProblemSerializer,
            422: ProblemSerializer,
            **PROBLEMS,
        },
    )
    def patch(self, request: Request, schedule_id: int) -> Response:
        schedule = policy.schedule_get(policy.for_request(request), schedule_id, policy.SCHEDULE_CHANGE)
        if isinstance(request.data, dict) and request.data.get("webhook_url"):
            policy.require(policy.for_request(request), policy.WEBHOOK_REGISTER, hidden=False)
        data = ScheduleChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        before = schedule.webhook_secret
        schedule = schedule_update(schedule=schedule, actor=request.user.get_username(), **data.validated_data)
        return Response(_with_secret(schedule, before))

    @extend_schema(
        request=None,
        responses={200: ScheduleSerializer, 401: ProblemSerializer, 403: ProblemSerializer, 404: ProblemSerializer},
    )
    def delete(self, request: Request, schedule_id: int) -> Response:
        schedule = policy.schedule_get(policy.for_request(request), schedule_id, policy.SCHEDULE_CHANGE)
        schedule = schedule_delete(schedule=schedule, actor=request.user.get_username())
        return Response(ScheduleSerializer(schedule).data)


# --- series, alerts, history -------------------------------------------------------------------------------


class SeriesFilterSerializer(QuerySerializer):
    schedule = serializers.IntegerField(min_value=0, required=False, help_text="the schedule's id")
    agent = serializers.CharField(required=False, help_text="the agent's name")


class SeriesCollectionApi(APIView):
    """Series, newest first; filter by schedule (id) and agent (name)."""

    policy_action = policy.SERIES_READ
    pagination_class = NewestFirstCursor  # documents the page envelope and its cursor/limit parameters

    @extend_schema(
        parameters=[SeriesFilterSerializer],
        responses={200: SeriesSerializer(many=True), 401: ProblemSerializer, 403: ProblemSerializer},
    )
    def get(self, request: Request) -> Response:
        filters = SeriesFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        qs = series_list()
        if (schedule := filters.validated_data.get("schedule")) is not None:
            qs = qs.filter(schedule_id=schedule)
        if agent := filters.validated_data.get("agent"):
            qs = qs.filter(agent__name=agent)
        paginator = NewestFirstCursor()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(SeriesSerializer(page, many=True).data)


class SeriesDetailApi(APIView):
    """One series with its history: every run's headline, interval and change-point verdict, per software too."""

    policy_action = policy.SERIES_READ

    @extend_schema(
        responses={200: SeriesDetailSerializer, 401: ProblemSerializer, 403: ProblemSerializer, 404: ProblemSerializer}
    )
    def get(self, request: Request, series_id: int) -> Response:
        series: Series = policy.series_get(policy.for_request(request), series_id)
        latest = series.members.select_related("run").order_by("-run_id").first()
        body = dict(SeriesSerializer(series).data)
        body["history"] = run_history(run=latest.run).as_dict() if latest is not None else None
        return Response(body)


class AlertCollectionApi(APIView):
    """Alerts, newest first."""

    policy_action = policy.SERIES_READ
    pagination_class = NewestFirstCursor  # documents the page envelope and its cursor/limit parameters

    @extend_schema(responses={200: AlertSerializer(many=True), 401: ProblemSerializer, 403: ProblemSerializer})
    def get(self, request: Request) -> Response:
        paginator = NewestFirstCursor()
        page = paginator.paginate_queryset(alert_list(), request, view=self)
        # NewestFirstCursor has a page size, so DRF always answers a page (None only without one).
        return paginator.get_paginated_response([alert_body(a) for a in cast("list[Alert]", page)])


class AlertDetailApi(APIView):
    """One alert: the runs, the change with its interval, and what else changed between them."""

    policy_action = policy.SERIES_READ

    @extend_schema(
        responses={200: AlertSerializer, 401: ProblemSerializer, 403: ProblemSerializer, 404: ProblemSerializer}
    )
    def get(self, request: Request, alert_id: int) -> Response:
        return Response(alert_body(policy.alert_get(policy.for_request(request), alert_id)))


class SubmissionHistoryApi(APIView):
    """The history of a run's configuration (its series, or every run with the same configuration)."""

    policy_action = policy.SERIES_READ

    @extend_schema(
        responses={200: HistorySerializer, 401: ProblemSerializer, 403: ProblemSerializer, 404: ProblemSerializer}
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = policy.run_get(policy.for_request(request), run_id)
        return Response(run_history(run=run).as_dict())
