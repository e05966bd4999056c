"""Filters for run lists: the indexed columns users ask about."""

from __future__ import annotations

import django_filters
from django import forms

from protocol import rules
from protocol.summary import COLUMNS, Column
from registry.choices import Trust
from registry.models import Submission


class IntegerFilter(django_filters.NumberFilter):  # type: ignore[misc]  # django-filter has no type hints
    """A whole number, as the description says (NumberFilter would take 0.5 and match nothing)."""

    field_class = forms.IntegerField


class FloatFilter(django_filters.NumberFilter):  # type: ignore[misc]  # django-filter has no type hints
    """A number compared with a float column: any finite number (NumberFilter's decimal refuses beyond 1e50, which
    the API description cannot say, and a float column holds up to about 1.8e308)."""

    field_class = forms.FloatField

    def get_max_validator(self) -> None:
        return None  # FloatField already refuses what is not a finite number


def _column_filter(column: Column) -> django_filters.Filter:
    """The run list's filter on a summary column, as protocol.summary.COLUMNS declares it."""
    kinds = {"integer": IntegerFilter, "float": FloatFilter}
    kind = kinds.get(column.kind, django_filters.CharFilter)
    return kind(field_name=column.name, lookup_expr=column.lookup, help_text=column.help or None)


# The summary columns' filters, one per declared `filter` (query parameter: filter); the class below adds the rest.
_COLUMN_FILTERS = {c.filter: _column_filter(c) for c in COLUMNS if c.filter}


class _Filters(django_filters.FilterSet):  # type: ignore[misc]  # django-filter has no type hints
    """Filters on what is not a summary column (who submitted, trust, times), and phase's choices."""

    phase = django_filters.ChoiceFilter(choices=[(p, p) for p in rules.SCENARIOS_BY_PHASE])  # collective since 1.3
    submitted_by = django_filters.CharFilter(field_name="submitted_by_name", help_text="registry user")
    trust = django_filters.MultipleChoiceFilter(
        choices=Trust.choices, help_text="vouched, declared, imported or example (repeatable)"
    )
    comparability_key = django_filters.CharFilter()
    submitted_after = django_filters.IsoDateTimeFilter(field_name="submitted_at", lookup_expr="gte")
    submitted_before = django_filters.IsoDateTimeFilter(field_name="submitted_at", lookup_expr="lt")
    started_after = django_filters.IsoDateTimeFilter(field_name="started_at", lookup_expr="gte")
    started_before = django_filters.IsoDateTimeFilter(field_name="started_at", lookup_expr="lt")

    class Meta:
        model = Submission
        fields: list[str] = []


# Declared filters of the class body win over the generated ones (phase is a choice among two).
SubmissionFilter: type[_Filters] = type(
    "SubmissionFilter", (_Filters,), {k: v for k, v in _COLUMN_FILTERS.items() if k != "phase"}
)
