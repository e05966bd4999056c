"""The framework floor for `bench.ingest`: what a single submission costs before it touches the database.

`POST /bench/floor` goes through everything a real submission goes through up to storage (gunicorn, the
middleware, DRF, token authentication and the `submit` scope through registry.policy, the strict JSON parser,
protocol.check, the comparability keys and the summary columns), then answers 201 with the digest and stores
nothing: no lookup of the digest, no INSERT, no audit entry, no serializer. No request that validates and
stores a run can be faster, so its rate bounds what the real endpoint can reach on this machine.

Served only under the bench's own settings (`DJANGO_SETTINGS_MODULE=bench.floor_settings`, whose URLs are this
module's); the product never routes to it.
"""

from __future__ import annotations

from django.urls import path
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from protocol.comparability import comparability_keys, contract
from registry import policy
from registry.api.parsers import JSONDocumentParser
from registry.services.submissions import submission_check
from registry.urls import urlpatterns as product_urlpatterns


class FloorApi(APIView):
    parser_classes = [JSONDocumentParser]
    policy_action = policy.RUN_SUBMIT

    def post(self, request: Request) -> Response:
        checked = submission_check(request.data)  # the real endpoint's checks and problem details
        keys = comparability_keys(checked.document)
        checked.summary.columns()  # the run's summary columns, as storing it would
        return Response(
            {"digest": checked.digest, "comparability_key": keys[contract().default_axis]},
            status=status.HTTP_201_CREATED,
        )


urlpatterns = [path("bench/floor", FloorApi.as_view()), *product_urlpatterns]
