"""The OpenAPI description's conventions, applied to every operation in one place (docs/api.md).

Views annotate what is particular to them (`extend_schema`: the request serializer, success responses, errors
only they raise). This schema class adds what every view shares, from the view's own configuration, so an
endpoint cannot forget it and the description stays what the server does:

  400  the operation reads a body or query parameters          (problem+json, `errors` with JSON pointers),
       including a JSON body nested deeper than BENCHREG_MAX_JSON_DEPTH or holding a number beyond every double
  422  the same: well-formed but refused on its merits, e.g. NUL or a lone surrogate in a string
       (registry.api.strict: PostgreSQL can store neither)
  401  the view authenticates (an invalid or revoked token is refused even where no credential is needed)
  403  the view authenticates: a missing right, or a session's unsafe request without its CSRF token
  404  the path has parameters (the object does not exist, or the caller may not see it), or the list is paged
       (an unknown or tampered `cursor`)
  406  always: an Accept header no renderer can satisfy
  413  the operation reads a body: larger than DATA_UPLOAD_MAX_MEMORY_SIZE (BENCHREG_MAX_SUBMISSION_BYTES + 1 KiB)
  415  the operation reads a body: a Content-Type no parser takes
  429  the view is throttled (Retry-After)
  503  always: the database is unavailable (Retry-After); see docs/operations.md

Every error response is `application/problem+json` with the `Problem` schema, whatever the view annotated.
Operations open to anyone (their policy action needs no credential: registry.policy.open_to_anyone) list `{}`
among their security requirements, so clients know a credential is optional there.
"""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

from registry import policy
from registry.api.permissions import view_action

PROBLEM = "application/problem+json"
RETRY_AFTER = {
    "Retry-After": {"schema": {"type": "integer", "minimum": 0}, "description": "seconds to wait before trying again"}
}
# One character Python's str.strip keeps (str.isspace() false), spelled alike in ECMA-262 and Python regexes. Not
# `\S`: ECMA's whitespace lacks U+001C-U+001F and U+0085, which Python strips, and has U+FEFF, which it keeps.
NOT_WHITESPACE = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
STANDARD_ERRORS = {
    "400": "The request is not valid: every problem is listed in `errors` with a JSON pointer (a JSON body may "
    "nest arrays and objects at most BENCHREG_MAX_JSON_DEPTH levels deep, default 32, and hold no number "
    "beyond the largest double).",
    "401": "No valid credential: the token is missing where one is needed, or invalid, expired or revoked.",
    "403": "The credential lacks the right for this operation (or a session's unsafe request lacks its CSRF token).",
    "404": "No such object, or the caller may not see it.",
    "406": "No representation matches the Accept header.",
    "413": "The body is larger than this operation accepts (default 5 MiB + 1 KiB; BENCHREG_MAX_SUBMISSION_BYTES).",
    "415": "The body's Content-Type is not one this operation reads.",
    "422": "Well-formed, but refused on its merits (including text no database can store: NUL, lone surrogates).",
    "429": "Too many requests: wait Retry-After seconds.",
    "503": "The registry cannot reach its database right now: nothing was stored; retry after Retry-After seconds.",
}


class ProblemSerializer(serializers.Serializer[Any]):
    """RFC 9457 problem details with benchreg's list of document errors."""

    type = serializers.CharField()
    title = serializers.CharField()
    status = serializers.IntegerField()
    code = serializers.CharField()
    detail = serializers.CharField()
    # A declared field, not Serializer.errors: DRF's metaclass takes declared fields off the class.
    errors = serializers.ListField(child=serializers.DictField(), required=False)  # type: ignore[assignment]

    class Meta:
        ref_name = "Problem"


class ContractSchema(AutoSchema):
    """drf-spectacular's AutoSchema plus the shared responses and security above."""

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: Any
    ) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        problem_ref = self.resolve_serializer(ProblemSerializer, "response").ref
        body = operation.get("requestBody")
        if body is not None and self._body_required(body):
            body["required"] = True
        for parameter in operation.get("parameters", []):
            schema = parameter.get("schema", {})
            if parameter.get("in") == "query" and schema.get("type") == "string" and "enum" not in schema:
                schema.setdefault("minLength", 1)  # a present parameter has a value (registry.api.strict)
        responses: dict[str, Any] = operation.setdefault("responses", {})
        for code in self._shared_error_codes(operation):
            responses.setdefault(code, {"description": STANDARD_ERRORS[code]})
        for code, response in responses.items():
            if code.isdigit() and int(code) >= 400:
                response["content"] = {PROBLEM: {"schema": problem_ref}}
                response.setdefault("description", STANDARD_ERRORS.get(code, ""))
                if code in ("429", "503"):
                    response.setdefault("headers", {}).update(RETRY_AFTER)
        if self._is_open() and operation.get("security") and {} not in operation["security"]:
            operation["security"].append({})
        return operation

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> dict[str, Any]:
        """drf-spectacular's description of a field, plus what a CharField that trims its input takes: the server
        strips surrounding whitespace and then refuses a blank value, so "at least one character" (minLength 1) is
        not enough; one character that is not whitespace (NOT_WHITESPACE) is."""
        schema: dict[str, Any] = super()._map_serializer_field(field, direction, bypass_extensions)  # type: ignore[no-untyped-call]
        trims = getattr(field, "trim_whitespace", False) and not getattr(field, "allow_blank", True)
        own_pattern = any(isinstance(v, RegexValidator) for v in getattr(field, "validators", []))  # added later
        if direction == "request" and trims and not own_pattern and schema.get("type") == "string":
            schema["pattern"] = NOT_WHITESPACE
        return schema

    def _body_required(self, body: dict[str, Any]) -> bool:
        """An operation needs its body where a schema given inline lists required properties (drf-spectacular
        marks a serializer's itself, not a schema written as a dict), or where the view says so
        (`request_body_required`: a body whose schema is any object, such as a run document)."""
        inline = [media.get("schema", {}) for media in body.get("content", {}).values()]
        return getattr(self.view, "request_body_required", False) or any(schema.get("required") for schema in inline)

    def _shared_error_codes(self, operation: dict[str, Any]) -> list[str]:
        codes = ["406", "503"]
        has_body = "requestBody" in operation
        has_query = any(p.get("in") == "query" for p in operation.get("parameters", []))
        if has_body or has_query:
            codes += ["400", "422"]
        if has_body:
            codes += ["413", "415"]
        if self.view.get_authenticators():
            codes += ["401", "403"]
        paged = self.method == "GET" and getattr(self.view, "pagination_class", None) is not None
        if paged or any(p.get("in") == "path" for p in operation.get("parameters", [])):
            codes.append("404")  # no such object, or (paged lists) an unknown cursor
        if self.view.get_throttles():
            codes.append("429")
        return codes

    def _is_open(self) -> bool:
        return policy.open_to_anyone(view_action(self.view, self.method))
