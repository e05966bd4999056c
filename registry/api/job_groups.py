"""Job groups over the API (registry/services/job_groups.py).

A planner creates a group plan (`POST plans/groups`: agents in rank order and a collectives or distributed-training
job), as any plan
(policy.GROUP_PLAN_CREATE). The agent's side: arrive at the rendezvous, and ask whether the group started (with the
endpoint to meet at) or failed (with why). Only a job's own agent may, as for every other step of its jobs
(policy.JOB_WORK); what it may not see is 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.agents import PlanSerializer
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import FreeFormObjectField, StrictSerializer
from registry.services.job_groups import (
    FORM_TIMEOUT_BOUNDS,
    GROUP_RUNNERS,
    MAX_GROUP_SIZE,
    group_agents,
    group_arrive,
    group_plan_create,
    group_view,
)


class ArriveSerializer(StrictSerializer):
    claimant = serializers.CharField(max_length=200)
    lease_seconds = serializers.IntegerField(min_value=1, default=120)
    endpoint = serializers.CharField(max_length=300, required=False, help_text="rank 0: host:port of the rendezvous")


class GroupViewSerializer(serializers.Serializer[dict[str, Any]]):
    group = serializers.IntegerField()
    status = serializers.CharField()
    rank = serializers.IntegerField()
    nnodes = serializers.IntegerField()
    rendezvous_id = serializers.CharField(allow_null=True)
    endpoint = serializers.CharField(allow_null=True)
    form_deadline_at = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    run = serializers.IntegerField(allow_null=True)
    spec = serializers.DictField(help_text="the member job's spec: what this node runs")


ANSWERS = {200: GroupViewSerializer, 400: ProblemSerializer, 404: ProblemSerializer, 409: ProblemSerializer}


class JobGroupArriveApi(APIView):
    """The agent claims its member job and so arrives; the last arrival starts the group."""

    policy_action = policy.AGENT_SELF

    @extend_schema(request=ArriveSerializer, responses=ANSWERS)
    def post(self, request: Request, job_id: int) -> Response:
        job = policy.job_get(policy.for_request(request), job_id, policy.JOB_WORK)
        data = ArriveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(GroupViewSerializer(group_arrive(job=job, **data.validated_data)).data)


class JobGroupApi(APIView):
    """What a member waiting at the rendezvous polls: started (endpoint, run id) or failed (why)."""

    policy_action = policy.AGENT_SELF

    @extend_schema(responses=ANSWERS)
    def get(self, request: Request, job_id: int) -> Response:
        job = policy.job_get(policy.for_request(request), job_id, policy.JOB_WORK)
        return Response(GroupViewSerializer(group_view(job=job)).data)


class GroupPlanSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField(help_text="the group")
    status = serializers.CharField()
    size = serializers.IntegerField()
    form_deadline_at = serializers.DateTimeField()
    plan = PlanSerializer(help_text="its jobs in rank order")


class GroupPlanCreateApi(APIView):
    """Create a group plan: one job per agent, its rank its place in `agents`; the jobs start together or not at all
    (docs/agents.md, "Job groups"), each sent to its agent after commit."""

    policy_action = policy.GROUP_PLAN_CREATE

    class InputSerializer(StrictSerializer):
        name = serializers.CharField(max_length=200, required=False, default="")
        agents = serializers.ListField(
            child=serializers.CharField(max_length=60),
            min_length=2,
            max_length=MAX_GROUP_SIZE,
            help_text="enrolled agents by id or name, in rank order, each once; rank 0 hosts the rendezvous",
        )
        runner = serializers.ChoiceField(
            choices=sorted(GROUP_RUNNERS), help_text="what every agent runs on its node, on the group's rendezvous"
        )
        spec = FreeFormObjectField(
            help_text="collectives: collective, nproc_per_node, min_bytes, max_bytes, step_factor, warmup, iters, "
            "dtype, device; distributed-training: workload, nproc_per_node, parallelism (ddp, fsdp), precision, "
            "device (cpu: gloo, cuda: NCCL), batch_size (per device), accumulation, steps, warmup_steps, "
            "repetitions, threads, sequence_length, seed, learning_rate. nnodes is the number of agents"
        )
        form_timeout = serializers.IntegerField(
            min_value=FORM_TIMEOUT_BOUNDS[0], max_value=FORM_TIMEOUT_BOUNDS[1], default=300
        )
        soft_time_limit = serializers.IntegerField(min_value=10, max_value=7 * 86400, default=1800)
        time_limit = serializers.IntegerField(
            min_value=11, max_value=7 * 86400 + 3600, required=False, allow_null=True, default=None
        )

        class Meta:
            ref_name = "GroupPlanInput"

    @extend_schema(
        request=InputSerializer,
        responses={201: GroupPlanSerializer, 400: ProblemSerializer, 422: ProblemSerializer},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        agents = group_agents(fields.pop("agents"))
        group = group_plan_create(created_by=signed_in_user(request), agents=agents, **fields)
        return Response(GroupPlanSerializer(group).data, status=status.HTTP_201_CREATED)
