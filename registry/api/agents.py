"""Agents and jobs over the API: enrolment, heartbeats, plans, jobs, and the agent's side of a job.

Who may do what is registry.policy's: admins (session or `admin`-scoped token) create enrolment tokens and revoke
agents; submitters and admins list agents (names and state, never inventories); an agent's inventory is shown to
admins and to the agent itself; plans and jobs are visible to the plan's owner and admins, who alone may cancel;
an agent's own token (scope `agent`) claims, starts, renews, completes and fails its OWN jobs only. What a caller
may not see is 404, like what does not exist. Enrolment itself is authenticated by the single-use enrolment
token in the body.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.pagination import NewestFirstCursor
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import FreeFormObjectField, QuerySerializer, StrictSerializer
from registry.choices import JobStatus
from registry.exceptions import NotFound
from registry.models import Agent, Job, Submission
from registry.selectors.agents import agent_list, agents_by_reference, enrolment_token_list, job_list
from registry.services.agents import agent_enroll, agent_heartbeat, agent_revoke, enrolment_token_create
from registry.services.jobs import job_cancel, job_claim, job_complete, job_fail, job_heartbeat, job_start
from registry.services.plans import check_runner_fields, plan_create, serving_plan_create


def _own_agent(request: Request) -> Agent:
    agent = policy.for_request(request).agent
    if agent is None:
        raise NotFound("this credential is not an enrolled agent's")
    return agent  # type: ignore[no-any-return]


# --- serializers -------------------------------------------------------------------------------------------


class EnrolmentTokenSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    prefix = serializers.CharField()
    note = serializers.CharField()
    created_by_name = serializers.CharField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    used_at = serializers.DateTimeField(allow_null=True)


class AgentSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    queue = serializers.CharField()
    embedded = serializers.BooleanField()
    online = serializers.BooleanField(source="is_online")
    last_heartbeat_at = serializers.DateTimeField(allow_null=True)
    enrolled_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)


class AgentDetailSerializer(AgentSerializer):
    inventory = serializers.JSONField()


class JobSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    plan = serializers.IntegerField(source="plan_id")
    agent = serializers.CharField(source="agent_name")
    agent_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    spec = serializers.JSONField()
    attempts = serializers.IntegerField()
    soft_time_limit = serializers.IntegerField()
    time_limit = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    claimed_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    deadline_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    run = serializers.IntegerField(source="run_id", allow_null=True)
    run_digest = serializers.SerializerMethodField()
    last_error = serializers.CharField()

    def get_run_digest(self, job: Job) -> str | None:
        return cast(Submission, job.run).digest if job.run_id else None  # run_id set: run is a Submission


class PlanSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    runner = serializers.CharField()
    workload = serializers.CharField()
    precisions = serializers.ListField(child=serializers.CharField())
    batch_sizes = serializers.ListField(child=serializers.IntegerField(allow_null=True))
    scenario = serializers.CharField(allow_null=True)
    repetitions = serializers.IntegerField(allow_null=True)
    options = serializers.DictField()
    soft_time_limit = serializers.IntegerField()
    time_limit = serializers.IntegerField()
    created_by_name = serializers.CharField()
    created_at = serializers.DateTimeField()
    jobs = serializers.SerializerMethodField()

    def get_jobs(self, plan: Any) -> list[dict[str, Any]]:
        return JobSerializer(plan.jobs.select_related("run").order_by("id"), many=True).data  # type: ignore[return-value]


# --- enrolment and agents ----------------------------------------------------------------------------------


class EnrolmentTokenCollectionApi(APIView):
    """GET: enrolment tokens (never the secrets). POST: a new single-use token, shown once in `token`."""

    policy_action = policy.ENROLMENT_MANAGE

    class InputSerializer(StrictSerializer):
        expires_in = serializers.IntegerField(
            min_value=60, max_value=30 * 86400, default=3600, help_text="seconds until it expires"
        )
        note = serializers.CharField(max_length=200, required=False, default="")

        class Meta:
            ref_name = "EnrolmentTokenInput"  # nested InputSerializers share a name; the schema needs distinct ones

    @extend_schema(responses=EnrolmentTokenSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(EnrolmentTokenSerializer(enrolment_token_list(), many=True).data)

    @extend_schema(request=InputSerializer, responses={201: EnrolmentTokenSerializer})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        row, plain = enrolment_token_create(
            created_by=signed_in_user(request),
            note=data.validated_data["note"],
            expires_in=timedelta(seconds=data.validated_data["expires_in"]),
        )
        return Response({**EnrolmentTokenSerializer(row).data, "token": plain}, status=status.HTTP_201_CREATED)


class AgentEnrollApi(APIView):
    """Enrol a machine with a single-use enrolment token. Returns the agent's own token once."""

    policy_action = policy.AGENT_ENROL
    authentication_classes: list[type] = []

    class InputSerializer(StrictSerializer):
        token = serializers.CharField(max_length=200)
        name = serializers.CharField(max_length=60)
        inventory = FreeFormObjectField(required=False, default=dict)

        class Meta:
            ref_name = "AgentEnrollInput"  # nested InputSerializers share a name; the schema needs distinct ones

    class OutputSerializer(serializers.Serializer[Any]):
        agent = AgentSerializer()
        token = serializers.CharField(help_text="the agent's own API token, shown once")
        broker_url = serializers.CharField(help_text="where the agent's worker takes its jobs from")

        class Meta:
            ref_name = "AgentEnrollOutput"

    @extend_schema(
        request=InputSerializer, responses={201: OutputSerializer, 400: ProblemSerializer, 403: ProblemSerializer}
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        agent, plain = agent_enroll(
            enrolment_token=data.validated_data["token"],
            name=data.validated_data["name"],
            inventory=data.validated_data["inventory"],
        )
        return Response(
            {"agent": AgentSerializer(agent).data, "token": plain, "broker_url": settings.BENCHREG_AGENT_BROKER_URL},
            status=status.HTTP_201_CREATED,
        )


class AgentCollectionApi(APIView):
    """Enrolled agents with their online/offline state (submitters and admins: whom a plan may name)."""

    policy_action = policy.AGENT_LIST

    @extend_schema(responses=AgentSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(AgentSerializer(agent_list(), many=True).data)


class AgentDetailApi(APIView):
    """One agent with its inventory (host names and addresses): admins, and the agent itself."""

    policy_action = policy.AGENT_READ

    @extend_schema(responses={200: AgentDetailSerializer, 404: ProblemSerializer})
    def get(self, request: Request, agent_id: int) -> Response:
        return Response(AgentDetailSerializer(policy.agent_get(policy.for_request(request), agent_id)).data)


class AgentRevokeApi(APIView):
    """Revoke an agent (admins): its token stops working and its unfinished jobs are cancelled."""

    policy_action = policy.AGENT_REVOKE

    @extend_schema(request=None, responses={200: AgentSerializer, 403: ProblemSerializer, 404: ProblemSerializer})
    def post(self, request: Request, agent_id: int) -> Response:
        principal = policy.for_request(request)
        agent = agent_revoke(
            agent=policy.agent_get(principal, agent_id, policy.AGENT_REVOKE), actor=request.user.get_username()
        )
        return Response(AgentSerializer(agent).data)


class AgentMeApi(APIView):
    """The calling agent as the registry sees it, with its latest jobs (`benchreg agent status`)."""

    policy_action = policy.AGENT_SELF

    @extend_schema(responses=AgentDetailSerializer)
    def get(self, request: Request) -> Response:
        agent = _own_agent(request)
        jobs = job_list(agent=agent.name)[:20]
        return Response({**AgentDetailSerializer(agent).data, "jobs": JobSerializer(jobs, many=True).data})


class AgentHeartbeatApi(APIView):
    policy_action = policy.AGENT_SELF

    class InputSerializer(StrictSerializer):
        inventory = FreeFormObjectField(required=False)

        class Meta:
            ref_name = "AgentHeartbeatInput"  # nested InputSerializers share a name; the schema needs distinct ones

    @extend_schema(request=InputSerializer, responses=AgentSerializer)
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        agent = agent_heartbeat(agent=_own_agent(request), inventory=data.validated_data.get("inventory"))
        return Response(AgentSerializer(agent).data)


# --- plans and jobs (people) -------------------------------------------------------------------------------

MAX_BATCH_SIZE = 2**20
JOBS_BOUND = (
    "a plan makes one job per agent x precision x batch size, at most BENCHREG_MAX_JOBS_PER_PLAN (default 1000)"
)


class PlanCollectionApi(APIView):
    """Create a plan: one job per agent x precision x batch size (runner serving: per agent x load level of the
    `serving` job), each dispatched to its agent after commit."""

    policy_action = policy.PLAN_CREATE

    class InputSerializer(StrictSerializer):
        name = serializers.CharField(max_length=200, required=False, default="")
        agents = serializers.ListField(
            child=serializers.CharField(max_length=60),
            min_length=1,
            max_length=200,
            help_text=f"each agent once; {JOBS_BOUND}",
        )
        runner = serializers.ChoiceField(choices=["inference", "training", "serving"])
        workload = serializers.CharField(max_length=100, required=False, help_text="inference and training")
        precisions = serializers.ListField(
            child=serializers.CharField(max_length=20),
            min_length=1,
            max_length=20,
            required=False,
            help_text="each precision once; inference and training",
        )
        # A batch beyond 2^20 samples is no accelerator's; the bound keeps the value inside every integer column.
        batch_sizes = serializers.ListField(
            child=serializers.IntegerField(min_value=1, max_value=MAX_BATCH_SIZE),
            required=False,
            default=list,
            max_length=50,
            help_text="each batch size once",
        )
        scenario = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)
        repetitions = serializers.IntegerField(
            min_value=1, max_value=100, required=False, allow_null=True, default=None
        )
        options = FreeFormObjectField(required=False, default=dict)
        soft_time_limit = serializers.IntegerField(min_value=10, max_value=7 * 86400, default=1800)
        time_limit = serializers.IntegerField(
            min_value=11, max_value=7 * 86400 + 3600, required=False, allow_null=True, default=None
        )
        serving = FreeFormObjectField(
            required=False,
            help_text="runner serving only: the serving job (endpoint, model, request shape, load, objectives, "
            "deployment), one job per agent and load level sharing a sweep id; docs/serving.md, 'As an agent job'",
        )

        class Meta:
            ref_name = "PlanInput"  # nested InputSerializers share a name; the schema needs distinct ones

    @extend_schema(
        request=InputSerializer, responses={201: PlanSerializer, 400: ProblemSerializer, 404: ProblemSerializer}
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        agents = agents_by_reference(fields.pop("agents"))  # unknown agents: 404 before anything else
        check_runner_fields(fields["runner"], set(request.data))
        user, serving_job = signed_in_user(request), fields.pop("serving", None)
        if serving_job is None:
            plan = plan_create(created_by=user, agents=agents, **fields)
        else:
            limits = {name: fields[name] for name in ("name", "soft_time_limit", "time_limit")}
            plan = serving_plan_create(created_by=user, agents=agents, serving_job=serving_job, **limits)
        return Response(PlanSerializer(plan).data, status=status.HTTP_201_CREATED)


class PlanDetailApi(APIView):
    """A plan and its jobs: its owner and admins."""

    policy_action = policy.PLAN_READ

    @extend_schema(responses={200: PlanSerializer, 404: ProblemSerializer})
    def get(self, request: Request, plan_id: int) -> Response:
        return Response(PlanSerializer(policy.plan_get(policy.for_request(request), plan_id)).data)


class JobCollectionApi(APIView):
    """Jobs, newest first; filter by status, agent (name) and plan. A submitter sees their plans' jobs only."""

    policy_action = policy.JOB_LIST
    pagination_class = NewestFirstCursor  # documents the page envelope and its parameters

    class FilterSerializer(QuerySerializer):
        status = serializers.ChoiceField(choices=JobStatus.choices, required=False)
        agent = serializers.CharField(required=False, help_text="the agent's name")
        plan = serializers.IntegerField(min_value=1, required=False)

        class Meta:
            ref_name = "JobFilter"

    @extend_schema(parameters=[FilterSerializer], responses=JobSerializer(many=True))
    def get(self, request: Request) -> Response:
        params = self.FilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        jobs = job_list(
            status=params.validated_data.get("status"),
            agent=params.validated_data.get("agent"),
            plan=params.validated_data.get("plan"),
        )
        jobs = policy.visible_jobs(policy.for_request(request), jobs)
        paginator = NewestFirstCursor()
        page = paginator.paginate_queryset(jobs, request, view=self)
        return paginator.get_paginated_response(JobSerializer(page, many=True).data)


class JobDetailApi(APIView):
    """One job: the plan's owner, admins, and the agent it is for."""

    policy_action = policy.JOB_READ

    @extend_schema(responses={200: JobSerializer, 404: ProblemSerializer})
    def get(self, request: Request, job_id: int) -> Response:
        return Response(JobSerializer(policy.job_get(policy.for_request(request), job_id)).data)


class JobCancelApi(APIView):
    """Cancel a job: the plan's owner (with `submit`) and admins; 409 once it is finished."""

    policy_action = policy.JOB_CANCEL

    @extend_schema(
        request=None,
        responses={200: JobSerializer, 403: ProblemSerializer, 404: ProblemSerializer, 409: ProblemSerializer},
    )
    def post(self, request: Request, job_id: int) -> Response:
        job = policy.job_get(policy.for_request(request), job_id, policy.JOB_CANCEL)
        job = job_cancel(job=job, actor=request.user.get_username())
        return Response(JobSerializer(job).data)


# --- the agent's side of its own jobs ----------------------------------------------------------------------


class ClaimantSerializer(StrictSerializer):
    claimant = serializers.CharField(max_length=200)


class LeaseSerializer(ClaimantSerializer):
    lease_seconds = serializers.IntegerField(min_value=1, default=120)


class FailSerializer(ClaimantSerializer):
    error = serializers.CharField(max_length=10_000)
    timed_out = serializers.BooleanField(default=False)


class CompleteSerializer(StrictSerializer):
    run = serializers.IntegerField(required=False)
    digest = serializers.CharField(max_length=71, required=False)


# What an agent's call on its job answers: the job, or 409 when the job's state does not allow the call (it has
# finished: `job-finished`; another claimant holds its lease: `job-leased`; it holds no run or another: complete).
JOB_ANSWERS = {
    200: JobSerializer,
    409: OpenApiResponse(ProblemSerializer, description="the job's state does not allow this call"),
}


class _AgentJobApi(APIView):
    """POST on one of the caller's own jobs: validate, call the service, return the job."""

    policy_action = policy.AGENT_SELF
    input_serializer: type[serializers.Serializer[Any]] = ClaimantSerializer

    def act(self, job: Job, data: dict[str, Any]) -> Job:
        raise NotImplementedError

    def post(self, request: Request, job_id: int) -> Response:
        job = policy.job_get(policy.for_request(request), job_id, policy.JOB_WORK)
        data = self.input_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(JobSerializer(self.act(job, dict(data.validated_data))).data)


class JobClaimApi(_AgentJobApi):
    """Conditional claim with a lease: 200 and the job's spec, or 409 (finished, or held: `job-leased`)."""

    input_serializer = LeaseSerializer

    @extend_schema(request=LeaseSerializer, responses=JOB_ANSWERS)
    def post(self, request: Request, job_id: int) -> Response:
        return super().post(request, job_id)

    def act(self, job: Job, data: dict[str, Any]) -> Job:
        return job_claim(job=job, **data)


class JobStartApi(_AgentJobApi):
    @extend_schema(request=ClaimantSerializer, responses=JOB_ANSWERS)
    def post(self, request: Request, job_id: int) -> Response:
        return super().post(request, job_id)

    def act(self, job: Job, data: dict[str, Any]) -> Job:
        return job_start(job=job, **data)


class JobHeartbeatApi(_AgentJobApi):
    input_serializer = LeaseSerializer

    @extend_schema(request=LeaseSerializer, responses=JOB_ANSWERS)
    def post(self, request: Request, job_id: int) -> Response:
        return super().post(request, job_id)

    def act(self, job: Job, data: dict[str, Any]) -> Job:
        return job_heartbeat(job=job, **data)


class JobCompleteApi(_AgentJobApi):
    """Confirms the job's run (linked when the run was submitted); 409 if the job holds another run or none."""

    input_serializer = CompleteSerializer

    @extend_schema(request=CompleteSerializer, responses=JOB_ANSWERS)
    def post(self, request: Request, job_id: int) -> Response:
        return super().post(request, job_id)

    def act(self, job: Job, data: dict[str, Any]) -> Job:
        return job_complete(job=job, run_id=data.get("run"), digest=data.get("digest"))


class JobFailApi(_AgentJobApi):
    input_serializer = FailSerializer

    @extend_schema(request=FailSerializer, responses=JOB_ANSWERS)
    def post(self, request: Request, job_id: int) -> Response:
        return super().post(request, job_id)

    def act(self, job: Job, data: dict[str, Any]) -> Job:
        return job_fail(job=job, **data)
