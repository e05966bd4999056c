"""Comparison endpoints: comparable runs for a run, create a comparison, read one."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from protocol.sizing import MAX_PRICE_PER_HOUR
from registry import policy
from registry.api.pagination import NewestFirstCursor
from registry.api.permissions import signed_in_user
from registry.api.schema import ProblemSerializer
from registry.api.strict import FreeFormObjectField, QuerySerializer, StrictSerializer
from registry.api.submissions import SubmissionSummarySerializer, withdrawn_words
from registry.models import Comparison
from registry.models.fields import MAX_ROW_ID
from registry.presentation.scaling import configuration_sizes_view
from registry.selectors.comparisons import comparable_runs, comparison_list, runs_by_reference
from registry.selectors.scaling import configuration_sizes
from registry.selectors.standing import comparison_conclusion, comparison_members
from registry.services.comparisons import comparison_create

RUN_REFERENCE_SCHEMA = {
    "oneOf": [{"type": "integer", "minimum": 1, "maximum": MAX_ROW_ID}, {"type": "string", "minLength": 1}]
}
AXES = [
    ("system", "system"),
    ("software", "software"),
    ("precision", "precision"),
    ("iso-quality", "iso-quality"),
    ("scaling", "scaling"),
]


@extend_schema_field(RUN_REFERENCE_SCHEMA)
class RunReferenceField(serializers.JSONField):
    """A run id (integer) or digest (string): documented as exactly that, checked by the validators below."""


@extend_schema_field(
    {"type": "array", "items": RUN_REFERENCE_SCHEMA, "minItems": 2, "maxItems": 200, "uniqueItems": True}
)
class RunReferencesField(serializers.ListField):
    """Two to 200 distinct runs; the service refuses one run named twice (also once by id and once by digest)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=RunReferenceField(), min_length=2, max_length=200, **kwargs)


class ComparableCursor(NewestFirstCursor):
    """The run, the axis and the key the page is about, then the usual page envelope."""

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        envelope = super().get_paginated_response_schema(schema)
        envelope["required"] = ["run", "axis", "comparability_key", *envelope.get("required", [])]
        envelope["properties"] = {
            "run": {"type": "integer"},
            "axis": {"type": "string", "enum": [a for a, _ in AXES]},
            "comparability_key": {"type": "string"},
            **envelope["properties"],
        }
        return envelope


class ComparableRunsApi(APIView):
    """Runs comparable with this one on an axis (same controlled fields): one index lookup."""

    policy_action = policy.RUN_READ

    pagination_class = ComparableCursor  # documents the page envelope and its parameters

    class FilterSerializer(QuerySerializer):
        # `axis` is checked by comparable_runs (400 `unknown-axis`, naming the axes); documented below.
        axis = serializers.CharField(default="system")
        include_withdrawn = serializers.BooleanField(default=False)

        class Meta:
            ref_name = "ComparableFilter"

    @extend_schema(
        parameters=[
            OpenApiParameter("axis", enum=[a for a, _ in AXES], default="system"),
            OpenApiParameter("include_withdrawn", bool, default=False),
        ],
        responses={200: SubmissionSummarySerializer(many=True), 404: ProblemSerializer},
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = policy.run_get(policy.for_request(request), run_id)
        params = self.FilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        axis, include = params.validated_data["axis"], params.validated_data["include_withdrawn"]
        runs = comparable_runs(run=run, axis=axis, include_withdrawn=include)
        paginator = ComparableCursor()
        page = paginator.paginate_queryset(runs, request, view=self)
        data = SubmissionSummarySerializer(page, many=True, context={"request": request}).data
        response = paginator.get_paginated_response(data)
        response.data = {"run": run.pk, "axis": axis, "comparability_key": run.key_for(axis), **response.data}
        return response


class ComparisonOutputSerializer(serializers.ModelSerializer[Comparison]):
    url = serializers.SerializerMethodField()
    run_ids = serializers.SerializerMethodField()

    class Meta:
        model = Comparison
        fields = ["id", "digest", "url", "axis", "run_ids", "inputs", "result", "created_by_name", "created_at"]

    def get_url(self, comparison: Comparison) -> str:
        request: Request = self.context["request"]
        return request.build_absolute_uri(reverse("api-comparison-detail", args=[comparison.pk]))

    def get_run_ids(self, comparison: Comparison) -> list[int]:
        return [m.submission_id for m in comparison.members.all()]


class ComparisonSummarySerializer(ComparisonOutputSerializer):
    """A comparison in a list: everything but its result (GET /comparisons/{id} has it)."""

    class Meta(ComparisonOutputSerializer.Meta):
        fields = [f for f in ComparisonOutputSerializer.Meta.fields if f != "result"]


class ComparisonCollectionApi(APIView):
    """POST compares runs (201, or 422 naming every offending field); GET lists stored comparisons."""

    policy_action = {"GET": policy.COMPARISON_READ, "POST": policy.COMPARISON_CREATE}

    pagination_class = NewestFirstCursor  # documents the page envelope of GET and its parameters

    class InputSerializer(StrictSerializer):
        runs = RunReferencesField(help_text="run ids or digests, each run once")
        axis = serializers.ChoiceField(choices=AXES, default="system")
        prices = serializers.DictField(
            child=serializers.FloatField(min_value=0, max_value=MAX_PRICE_PER_HOUR),
            required=False,
            help_text="price per system-hour, by system.name (a stated assumption; "
            f"0 to {MAX_PRICE_PER_HOUR:g}, as a report's prices)",
        )
        currency = serializers.RegexField(r"^[A-Z]{3}$", default="USD")
        sizing = FreeFormObjectField(required=False, help_text="target_load, load_unit, latency_objectives")
        baseline = RunReferenceField(
            required=False,
            help_text="run id or digest of one of the runs: its "
            "configuration is the baseline (default: the first run's)",
        )

        class Meta:
            ref_name = "ComparisonInput"  # nested InputSerializers share a name; the schema needs distinct ones

        def validate_runs(self, value: list[Any]) -> list[int | str]:
            if not all(isinstance(v, int | str) and not isinstance(v, bool) for v in value):
                raise serializers.ValidationError("each run is an id (integer) or a digest (string)")
            return value

        def validate_baseline(self, value: Any) -> int | str:
            if not isinstance(value, int | str) or isinstance(value, bool):
                raise serializers.ValidationError("the baseline is a run id (integer) or a digest (string)")
            return value

    @extend_schema(
        request=InputSerializer,
        responses={
            201: ComparisonOutputSerializer,
            200: ComparisonOutputSerializer,
            400: ProblemSerializer,
            422: ProblemSerializer,
        },
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        runs = runs_by_reference(refs=data.validated_data.pop("runs"))
        comparison, created = comparison_create(
            runs=runs,
            created_by=signed_in_user(request),
            baseline=data.validated_data.pop("baseline", None),
            **data.validated_data,
        )
        body = ComparisonOutputSerializer(comparison, context={"request": request}).data
        return Response(
            body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK, headers={"Location": body["url"]}
        )

    @extend_schema(responses=ComparisonSummarySerializer(many=True))
    def get(self, request: Request) -> Response:
        paginator = NewestFirstCursor()
        page = paginator.paginate_queryset(comparison_list().prefetch_related("members"), request, view=self)
        data = ComparisonSummarySerializer(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)


class ComparisonDetailApi(APIView):
    policy_action = policy.COMPARISON_READ

    @extend_schema(responses={200: ComparisonOutputSerializer, 404: ProblemSerializer})
    def get(self, request: Request, comparison_id: int) -> Response:
        comparison = policy.comparison_get(policy.for_request(request), comparison_id)
        runs = comparison_members(comparison)
        # As it stands today: a run withdrawn since makes the (immutable) stored conclusion "inconclusive".
        return Response(
            {
                **ComparisonOutputSerializer(comparison, context={"request": request}).data,
                "conclusion": comparison_conclusion(comparison, runs),
                "runs": [
                    {"id": r.pk, "digest": r.digest, "trust": r.trust, "withdrawn": withdrawn_words(r)} for r in runs
                ],
            }
        )


class SizesSerializer(StrictSerializer):
    """A run's configuration at every stored size: the runs (this one among them), the sizes present, and the curve
    as protocol.scaling.curve gives it (speedup and efficiency against the smallest size; for imported MLPerf
    Training results labelled "derived, not an MLPerf metric")."""

    run = serializers.IntegerField()
    axis = serializers.CharField()
    comparability_key = serializers.CharField()
    run_ids = serializers.ListField(child=serializers.IntegerField())
    sizes = serializers.ListField(child=serializers.IntegerField())
    gap = serializers.CharField(allow_null=True)
    curve = FreeFormObjectField()


class SubmissionSizesApi(APIView):
    """This run's configuration at other sizes: the runs with its key on the scaling axis, of its submitter."""

    policy_action = policy.RUN_READ

    @extend_schema(responses={200: SizesSerializer, 404: ProblemSerializer})
    def get(self, request: Request, run_id: int) -> Response:
        run = policy.run_get(policy.for_request(request), run_id)
        runs = configuration_sizes(run=run)
        ids = [r.pk for r in runs]
        found = configuration_sizes_view([r.document for r in runs], ids)
        return Response(
            {
                "run": run.pk,
                "axis": "scaling",
                "comparability_key": run.key_for("scaling"),
                "run_ids": ids,
                "sizes": found["sizes"],
                "gap": found["gap"],
                "curve": found["curve"],
            }
        )
