"""Filters for run lists: the indexed columns users ask about."""

from __future__ import annotations

import django_filters
from django import forms

from registry.choices import Trust
from registry.models import Submission


class IntegerFilter(django_filters.NumberFilter):  # type: ignore[misc]  # django-filter has no type hints
    """A whole number, as the description says (NumberFilter would take 0.5 and match nothing)."""

    field_class = forms.IntegerField


class SubmissionFilter(django_filters.FilterSet):  # type: ignore[misc]  # django-filter has no type hints
    phase = django_filters.ChoiceFilter(choices=[("training", "training"), ("inference", "inference")])
    workload = django_filters.CharFilter(field_name="workload_name")
    workload_version = django_filters.CharFilter()
    scenario = django_filters.CharFilter(field_name="scenario_kind")
    precision = django_filters.CharFilter(field_name="precision_weights", help_text="weights format, e.g. bf16 or int8")
    activations = django_filters.CharFilter(field_name="precision_activations")
    batch_size = IntegerFilter()
    accelerator = django_filters.CharFilter(field_name="accelerator_model")
    vendor = django_filters.CharFilter(field_name="accelerator_vendor", lookup_expr="iexact")
    system = django_filters.CharFilter(field_name="system_name")
    submitter = django_filters.CharFilter(help_text="provenance.submitter as stated in the document")
    submitted_by = django_filters.CharFilter(field_name="submitted_by_name", help_text="registry user")
    source = django_filters.CharFilter()
    trust = django_filters.MultipleChoiceFilter(
        choices=Trust.choices, help_text="vouched, declared, imported or example (repeatable)"
    )
    comparability_key = django_filters.CharFilter()
    round = django_filters.CharFilter(field_name="origin_round", help_text="published round, e.g. v5.1")
    division = django_filters.CharFilter(
        field_name="origin_division", lookup_expr="iexact", help_text="MLPerf division: closed, open or network"
    )
    category = django_filters.CharFilter(
        field_name="origin_category",
        lookup_expr="icontains",
        help_text="datacenter or edge (a 'datacenter,edge' system matches both)",
    )
    availability = django_filters.CharFilter(
        field_name="origin_availability", lookup_expr="iexact", help_text="available, preview or research"
    )
    # Figures per accelerator (derived: protocol.per_accelerator); a run without the figure never matches.
    min_throughput_per_accelerator = django_filters.NumberFilter(
        field_name="per_accelerator_throughput", lookup_expr="gte", help_text="throughput per accelerator, in its unit"
    )
    min_output_tokens_per_accelerator = django_filters.NumberFilter(
        field_name="per_accelerator_output_tokens", lookup_expr="gte", help_text="output tokens/s per accelerator"
    )
    min_total_tokens_per_accelerator = django_filters.NumberFilter(
        field_name="per_accelerator_total_tokens",
        lookup_expr="gte",
        help_text="input+output tokens/s per accelerator (as InferenceMAX plots it)",
    )
    submitted_after = django_filters.IsoDateTimeFilter(field_name="submitted_at", lookup_expr="gte")
    submitted_before = django_filters.IsoDateTimeFilter(field_name="submitted_at", lookup_expr="lt")
    started_after = django_filters.IsoDateTimeFilter(field_name="started_at", lookup_expr="gte")
    started_before = django_filters.IsoDateTimeFilter(field_name="started_at", lookup_expr="lt")

    class Meta:
        model = Submission
        fields: list[str] = []
