"""Token endpoints: a person (session or token, never an agent) lists, creates and revokes their own tokens.

A new token carries at most what the caller may do itself (registry.policy.TOKEN_MINT): a read-only token or a
viewer's session cannot mint `submit`, and only admins can mint `admin`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from registry import policy
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import StrictSerializer
from registry.choices import Scope
from registry.selectors.tokens import token_list_for
from registry.services.tokens import token_mint, token_revoke


class TokenOutputSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class TokenCollectionApi(APIView):
    """GET: your tokens. POST: a new token, shown once in `token` (403 for a scope beyond your own rights)."""

    policy_action = policy.TOKEN_MANAGE

    class InputSerializer(StrictSerializer):
        name = serializers.CharField(max_length=100)
        scopes = serializers.ListField(child=serializers.ChoiceField(choices=Scope.choices), min_length=1)
        expires_at = serializers.DateTimeField(required=False, allow_null=True)

        class Meta:
            ref_name = "TokenInput"  # nested InputSerializers share a name; the schema needs distinct ones

    @extend_schema(responses=TokenOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(TokenOutputSerializer(token_list_for(user=signed_in_user(request)), many=True).data)

    @extend_schema(
        request=InputSerializer, responses={201: TokenOutputSerializer, 400: ProblemSerializer, 403: ProblemSerializer}
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, plain = token_mint(principal=policy.for_request(request), **data.validated_data)
        return Response({**TokenOutputSerializer(token).data, "token": plain}, status=status.HTTP_201_CREATED)


class TokenRevokeApi(APIView):
    """DELETE revokes one of your tokens (the row stays, marked revoked); anyone else's is 404."""

    policy_action = policy.TOKEN_MANAGE

    @extend_schema(responses={200: TokenOutputSerializer, 404: ProblemSerializer})
    def delete(self, request: Request, token_id: int) -> Response:
        token = policy.token_get(policy.for_request(request), token_id)
        token_revoke(token=token, actor=request.user.get_username())
        return Response(TokenOutputSerializer(token).data)
