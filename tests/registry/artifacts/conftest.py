"""The serving runner's simulated endpoint (its own process), for the runner's --submit against a live registry."""

from tests.runners.serving.conftest import endpoint  # noqa: F401
