"""Shared fixtures. Tests marked `postgres` need the real server; with BENCHREG_REQUIRE_POSTGRES=1 (CI)
running them on another database is an error, not a skip."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "protocol" / "examples"
SHARED = ROOT.parent / "shared"


def load_example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


@pytest.fixture
def server_example() -> dict[str, Any]:
    return load_example("inference-server-h100-bf16")


@pytest.fixture
def offline_example() -> dict[str, Any]:
    return load_example("inference-offline-cpu-int8")


@pytest.fixture
def training_example() -> dict[str, Any]:
    return load_example("training-h100-bf16")


def _database_vendor() -> str:
    url = os.environ.get("DATABASE_URL", "")
    return "postgresql" if url.startswith(("postgres://", "postgresql://")) else "sqlite"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _database_vendor() == "postgresql":
        return
    required = os.environ.get("BENCHREG_REQUIRE_POSTGRES") == "1"
    for item in items:
        if "postgres" in item.keywords:
            if required:
                raise pytest.UsageError("BENCHREG_REQUIRE_POSTGRES=1 but DATABASE_URL is not PostgreSQL")
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://..."))
