"""The protocol as data: the submission schema and the comparability contract, for clients and reports."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import protocol
from protocol.comparability import contract_document
from registry import policy


class ProtocolApi(APIView):
    """Protocol version, the JSON Schema and the comparability contract. Open to anyone."""

    policy_action = policy.PROTOCOL_READ
    authentication_classes: list[type] = []

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="The protocol: schema and comparability contract")
    def get(self, request: Request) -> Response:
        return Response(
            {
                "protocol": f"{protocol.PROTOCOL_NAME}/{protocol.PROTOCOL_VERSION_LATEST}",
                "schema": protocol.submission_schema(),
                "contract": contract_document(),
            }
        )
