"""What the server's console says for requests it refuses: a line, not a stack."""

from __future__ import annotations

import io
import logging

import pytest
from django.test import Client


@pytest.mark.django_db
def test_a_host_the_registry_does_not_serve_is_one_line_not_a_traceback() -> None:
    logger = logging.getLogger("django.security.DisallowedHost")
    # the settings' console_brief (pytest adds its capturing handlers beside it); its stream is whatever stderr was
    # when the settings were applied, so its output is read through a handler with its filters on a stream of ours
    (handler,) = [h for h in logger.handlers if type(h) is logging.StreamHandler]
    said = io.StringIO()
    probe = logging.StreamHandler(said)
    probe.filters = list(handler.filters)
    logger.addHandler(probe)
    try:
        response = Client().get("/readyz", HTTP_HOST="scanner.example")
    finally:
        logger.removeHandler(probe)
    assert not logger.propagate  # nothing goes on to the root's handler, which would print the traceback
    assert response.status_code == 400
    assert said.getvalue().splitlines() == [
        "Invalid HTTP_HOST header: 'scanner.example'. You may need to add 'scanner.example' to ALLOWED_HOSTS."
    ]
