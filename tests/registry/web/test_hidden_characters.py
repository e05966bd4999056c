"""Pages show the characters that draw nothing or reorder text as code points (registry/web/hidden_characters.py):
a system named "lab" + RIGHT-TO-LEFT OVERRIDE + "10h" read "labh01" in the catalogue."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.registry.web.conftest import signed_in, variant

pytestmark = pytest.mark.django_db
RLO = "\u202e"


def test_a_name_that_would_reorder_itself_is_shown_with_its_code_point_everywhere_a_page_shows_it(
    viewer: Any, submitter: Any, server_example: dict[str, Any]
) -> None:
    from registry.services.submissions import submission_create

    run, _ = submission_create(document=variant(server_example, f"lab{RLO}10h", 1300.0), submitted_by=submitter)
    twin, _ = submission_create(document=variant(server_example, "lab-⟦U+202E⟧", 1310.0), submitted_by=submitter)
    client = signed_in(viewer)
    for path in ("/", f"/runs/{run.pk}/", f"/runs/{twin.pk}/"):
        response = client.get(path)
        html = response.content.decode()
        assert response.status_code == 200 and RLO not in html, path
        assert int(response["Content-Length"]) == len(response.content), path  # measured after the rewrite
    catalogue = client.get("/").content.decode()
    assert "lab⟦U+202E⟧10h" in catalogue
    assert "lab-⟦U+27E6⟧U+202E⟧" in catalogue  # typed brackets cannot pass for a spelled character
    assert run.document["system"]["name"] == f"lab{RLO}10h"  # the data keep the name as submitted
    searched = client.get("/?q=" + quote(f"lab{RLO}")).content.decode()
    assert f'value="lab{RLO}"' in searched  # the search box sends back what was typed


def test_a_page_with_nothing_to_show_differently_is_left_as_it_is(viewer: Any, fleet: dict[str, Any]) -> None:
    html = signed_in(viewer).get(f"/runs/{fleet['a'].pk}/").content.decode()
    assert "⟦" not in html
    assert any(char in html for char in "—·×")  # other characters beyond ASCII pass untouched
