"""Input the API takes exactly as documented (docs/api.md, "Input is taken as documented").

DRF coerces: a CharField takes 0 as "0", a FloatField takes false as 0.0, and a form-style query string treats
`?status=` as if `status` were absent. The OpenAPI description says a name is a string and a status is one of
its values, so the API refuses the rest with 400 and a pointer, as the description promises.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.http import Http404
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotAcceptable, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser

from registry.exceptions import RegistryError


def _unstorable(text: str) -> bool:
    """NUL, or a lone UTF-16 surrogate: valid in JSON text, impossible to store in PostgreSQL text or JSONB."""
    return "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text)


def unstorable_pointers(value: Any, pointer: str = "") -> list[str]:
    """JSON pointers of every string (or object key) in `value` that the database cannot store."""
    if isinstance(value, str):
        return [pointer] if _unstorable(value) else []
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            here = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            found += [here] if _unstorable(str(key)) else unstorable_pointers(item, here)
        return found
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in unstorable_pointers(item, f"{pointer}/{i}")]
    return []


class UnstorableText(RegistryError):
    status = 422
    code = "unstorable-text"


def refuse_unstorable(value: Any, where: str = "the body") -> None:
    pointers = unstorable_pointers(value)
    if pointers:
        raise UnstorableText(f"{where} contains text the registry cannot store (NUL or a lone surrogate)",
                             errors=[{"pointer": p, "code": "unstorable-text",
                                      "message": "NUL characters and unpaired surrogates cannot be stored"}
                                     for p in pointers[:50]])


class StrictJSONParser(JSONParser):
    """JSON bodies, refusing text no database column can hold with 422 and a pointer (not a 500 at the INSERT)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        refuse_unstorable(data)
        return data

class UndeliverableAddress(RegistryError):
    status = 422
    code = "undeliverable-address"


WEBHOOK_URL_MAX_LENGTH = 500


@extend_schema_field({"type": "string", "format": "uri", "pattern": "^https?://[^/?#]+",
                     "maxLength": WEBHOOK_URL_MAX_LENGTH})
class WebhookURLField(serializers.CharField):
    """An http(s) address the registry POSTs signed events to; "" for none.

    Two steps, because the OpenAPI description can only say "an http(s) URI": a value that is not one is a bad
    request (400); a URI no request can reach (a host name over DNS's 253 characters, a label over 63, no
    top-level domain) or may not reach (credentials in it, a host that is or resolves to a non-global address)
    is understood but refused on its merits (422), with its pointer either way.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", WEBHOOK_URL_MAX_LENGTH)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        url = super().to_internal_value(data)
        if not url:
            return url
        try:
            parts = urlsplit(url)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValidationError("Enter an http or https URL.", code="invalid")
        try:
            URLValidator(schemes=["http", "https"])(url)
        except DjangoValidationError:
            raise UndeliverableAddress(
                "the webhook address is a URI no request can reach",
                errors=[{"pointer": f"/{self.field_name}", "code": "undeliverable-address",
                         "message": "not a reachable http(s) address (host name, its labels or its domain)"}],
            ) from None
        from registry.services.webhooks import webhook_url_problem

        problem = webhook_url_problem(url)  # no credentials; global destinations only (docs/security.md)
        if problem:
            raise UndeliverableAddress(
                f"the webhook address is refused: {problem}",
                errors=[{"pointer": f"/{self.field_name}", "code": "undeliverable-address", "message": problem}],
            )
        return url


_JSON_TYPES: list[tuple[type[serializers.Field], tuple[type, ...], str]] = [
    (serializers.BooleanField, (bool,), "a boolean"),
    (serializers.IntegerField, (int,), "an integer"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.MultipleChoiceField, (list,), "an array"),
    (serializers.ChoiceField, (str,), "a string"),
    (serializers.CharField, (str,), "a string"),
    (serializers.DateTimeField, (str,), "a string (RFC 3339 date-time)"),
    (serializers.ListField, (list,), "an array"),
    (serializers.DictField, (dict,), "an object"),
    (serializers.Serializer, (dict,), "an object"),
]


def _type_problems(field: serializers.Field, value: Any) -> list[str]:
    """Why `value` is not the JSON type `field` documents ([] when it is); children of arrays and maps too."""
    if value is None:
        return [] if field.allow_null else ["may not be null"]
    for kind, types, words in _JSON_TYPES:
        if isinstance(field, kind):
            if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
                return [f"must be {words}"]
            break
    child = getattr(field, "child", None)
    if isinstance(field, serializers.ListField) and child is not None:
        return [f"item {i}: {p}" for i, item in enumerate(value) for p in _type_problems(child, item)]
    if isinstance(field, serializers.DictField) and child is not None:
        return [f"{key!r}: {p}" for key, item in value.items() for p in _type_problems(child, item)]
    return []


class StrictSerializer(serializers.Serializer):
    """A JSON request body: each field must already be the JSON type the description gives it."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            errors = {name: problems for name, field in self.fields.items()
                      if not field.read_only and name in data and (problems := _type_problems(field, data[name]))}
            if errors:
                raise ValidationError(errors)
        return super().to_internal_value(data)


class QuerySerializer(serializers.Serializer):
    """Query parameters: a parameter that is present must have a value (`?status=` is refused, not ignored)."""

    def to_internal_value(self, data: Any) -> Any:
        reject_empty_parameters(data, list(self.fields))
        return super().to_internal_value(data)


def reject_empty_parameters(query: Any, names: list[str]) -> None:
    """400 for a named parameter that is present without a value; 422 for any value the database cannot hold."""
    empty = {name: ["must not be empty"] for name in names if name in query and "" in query.getlist(name)}
    if empty:
        raise ValidationError(empty)
    refuse_unstorable({key: query.getlist(key) for key in query}, "the query string")


class StrictFormatNegotiation(DefaultContentNegotiation):
    """`?format=` names a representation the view has, or the answer is 406 (DRF answers 404, or ignores an
    empty value), which the description lists on every operation."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: str | None = None) -> Any:
        requested = request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) if format_suffix is None else None
        if requested is not None and requested not in {r.format for r in renderers}:
            raise NotAcceptable(f"format={requested!r} is not one of {sorted({r.format for r in renderers})}")
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Http404:
            raise NotAcceptable("no representation matches the requested format") from None
