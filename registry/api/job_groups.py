"""The agent's side of a job group (registry/services/job_groups.py): arrive at the rendezvous, and ask whether the
group started (with the endpoint to meet at) or failed (with why). Only a job's own agent may, as for every other
step of its jobs (policy.JOB_WORK); what it may not see is 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.schema import ProblemSerializer
from registry.api.strict import StrictSerializer
from registry.services.job_groups import group_arrive, group_view


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
