"""Input the API takes exactly as documented (docs/api.md, "Input is taken as documented").

DRF coerces: a CharField takes 0 as "0", a FloatField takes false as 0.0, and a form-style query string treats
`?status=` as if `status` were absent. The OpenAPI description says a name is a string and a status is one of
its values, so the API refuses the rest with 400 and a pointer, as the description promises.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.http import Http404
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, NotAcceptable, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser

import protocol
from protocol.checks import numbers_are_representable
from registry.exceptions import RegistryError
from registry.services.webhooks import webhook_url_problem


def unstorable_pointers(value: Any) -> list[str]:
    """JSON pointers of every string (or object key) in `value` that the database cannot store: NUL, or a lone
    UTF-16 surrogate (valid in JSON text, impossible to store in PostgreSQL text or JSONB)."""
    return [e.pointer for e in protocol.value_errors(value, max_depth=sys.maxsize) if e.code == "unstorable-text"]


class UnstorableText(RegistryError):
    status = 422
    code = "unstorable-text"


class UnreadableJSON(RegistryError):
    """A body that parses (or nearly) but that no endpoint can take: nested too deep, or numbers no double holds."""

    status = 400
    code = "parse-error"


def refuse_unstorable(value: Any, where: str = "the body") -> None:
    pointers = unstorable_pointers(value)
    if pointers:
        raise UnstorableText(
            f"{where} contains text the registry cannot store (NUL or a lone surrogate)",
            errors=[
                {
                    "pointer": p,
                    "code": "unstorable-text",
                    "message": "NUL characters and unpaired surrogates cannot be stored",
                }
                for p in pointers[:50]
            ],
        )


class StrictJSONParser(JSONParser):
    """JSON bodies, refusing what no endpoint can take with a pointer, before any code meets it: arrays and objects
    nested deeper than BENCHREG_MAX_JSON_DEPTH and numbers beyond every IEEE double (1e400 parses as Infinity,
    which no JSON column takes) (400), text no database column can hold (422, not a 500 at the INSERT). Integers
    beyond ±2^53 pass here: each field states and checks its own range."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        depth = settings.MAX_JSON_DEPTH
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:  # the C scanner recurses per level: far beyond the bound, no pointer to give
            raise UnreadableJSON(
                f"JSON parse error - arrays and objects are nested more than {depth} levels deep",
                errors=[{"pointer": "", "code": "too-deep", "message": f"nested more than {depth} levels deep"}],
            ) from None
        problems = protocol.value_errors(data, max_depth=depth, numbers=True)
        unreadable = [e.as_dict() for e in problems if e.code != "unstorable-text"]
        if unreadable:
            raise UnreadableJSON("JSON parse error - the body holds what no endpoint takes", errors=unreadable[:50])
        if problems:
            refuse_unstorable(data)
        return data


class FreeFormObjectField(serializers.DictField):
    """A JSON object kept as given (run options, an agent's inventory, sizing): the registry writes it in RFC 8785
    canonical form (audit entries, request keys), which takes no integer beyond ±(2^53 - 1). Such a number is
    refused here with its pointer, instead of failing when the object is written: 422, since the OpenAPI
    description allows any number there (registry/api/exception_handlers.UNPROCESSABLE)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value: dict[str, Any] = super().to_internal_value(data)
        problems = list(numbers_are_representable(value))
        if problems:
            raise ValidationError(_nested_errors(problems[:50]))
        return value


def _nested_errors(problems: list[protocol.Error]) -> dict[str, Any]:
    """DRF's nested error dict for pointers inside one field (flattened back into the same pointers)."""
    out: dict[str, Any] = {}
    for problem in problems:
        *parents, last = problem.pointer.split("/")[1:]
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node.setdefault(last, []).append(ErrorDetail(problem.message, code=problem.code))
    return out


class UndeliverableAddress(RegistryError):
    status = 422
    code = "undeliverable-address"


WEBHOOK_URL_MAX_LENGTH = 500


@extend_schema_field(
    {"type": "string", "format": "uri", "pattern": "^https?://[^/?#]+", "maxLength": WEBHOOK_URL_MAX_LENGTH}
)
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
                errors=[
                    {
                        "pointer": f"/{self.field_name}",
                        "code": "undeliverable-address",
                        "message": "not a reachable http(s) address (host name, its labels or its domain)",
                    }
                ],
            ) from None
        problem = webhook_url_problem(url)  # no credentials; global destinations only (docs/security.md)
        if problem:
            raise UndeliverableAddress(
                f"the webhook address is refused: {problem}",
                errors=[{"pointer": f"/{self.field_name}", "code": "undeliverable-address", "message": problem}],
            )
        return url


_JSON_TYPES: list[tuple[type[serializers.Field[Any, Any, Any, Any]], tuple[type, ...], str]] = [
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


def _type_problems(field: serializers.Field[Any, Any, Any, Any], value: Any) -> list[str]:
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


class StrictSerializer(serializers.Serializer[Any]):
    """A JSON request body: each field must already be the JSON type the description gives it."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            errors = {
                name: problems
                for name, field in self.fields.items()
                if not field.read_only and name in data and (problems := _type_problems(field, data[name]))
            }
            if errors:
                raise ValidationError(errors)
        return super().to_internal_value(data)


class QuerySerializer(serializers.Serializer[Any]):
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
