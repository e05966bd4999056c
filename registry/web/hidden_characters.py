"""Pages and charts show the characters that draw nothing or reorder text as their code points
(registry/presentation/codepoints.py): a system named "lab" + U+202E + "10h" read "labh01" in the catalogue, its
run page and its charts, while the signed report wrote "lab⟦U+202E⟧10h". One middleware, so no template can forget.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from registry.presentation.codepoints import spell_html

SHOWN = frozenset({"text/html", "image/svg+xml"})
KEEP = frozenset({"textarea"})  # what a form sends back stays as it came (attributes are never changed)


class HiddenCharacters:
    """Rewrites the text of HTML pages and SVG charts; a response with nothing to spell is passed on untouched."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        kind = response.get("Content-Type", "").partition(";")[0].strip()
        if response.streaming or kind not in SHOWN:
            return response
        charset = response.charset or "utf-8"
        try:
            text = response.content.decode(charset)
        except (UnicodeDecodeError, LookupError):
            return response
        spelled, count = spell_html(text, keep=KEEP)
        if count:
            response.content = spelled.encode(charset)
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
        return response
