"""The agents and jobs pages: for those who plan runs, 404 for everyone else."""

from __future__ import annotations

from typing import Any

import pytest

from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_admins_see_agents_and_jobs(admin_user: Any, operations: dict[str, Any]) -> None:
    client = signed_in(admin_user)
    agents = client.get("/agents/").content.decode()
    assert "gpu-01" in agents and "online" in agents
    jobs = client.get("/jobs/").content.decode()
    assert "Running" in jobs or "running" in jobs
    assert "CUDA out of memory &lt;b&gt;boom&lt;/b&gt;" in jobs
    assert "failed" in client.get("/jobs/?status=failed").content.decode()


@pytest.mark.parametrize("url", ["/agents/", "/jobs/"])
def test_a_viewer_gets_404_for_pages_of_other_roles(viewer: Any, url: str) -> None:
    assert signed_in(viewer).get(url).status_code == 404
