"""Every API operation names the policy action it performs (registry.api.permissions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

from registry import policy
from registry.api.permissions import ActionAllowed, view_action

METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")


def _api_views(patterns: list[Any] | None = None) -> Iterator[Any]:
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            yield from _api_views(entry.url_patterns)
        elif isinstance(entry, URLPattern) and getattr(entry.callback, "__module__", "").startswith("registry.api"):
            yield entry.callback.view_class


def test_every_api_view_names_an_action_with_a_rule_for_every_method() -> None:
    views = list(_api_views())
    assert views
    for view in views:
        assert ActionAllowed in [*view.permission_classes], view.__name__
        for method in METHODS:
            assert view_action(view(), method) in policy.RULES, (view.__name__, method)
