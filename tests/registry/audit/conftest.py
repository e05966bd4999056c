from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _checkpoint_key_in_tmp(settings: Any, tmp_path: Path) -> Path:
    """Each test signs with a key generated on first use in its own data directory, never the developer's."""
    settings.DATA_DIR = tmp_path
    settings.BENCHREG_CHECKPOINT_KEY = ""
    settings.BENCHREG_LOG_ORIGIN = "benchreg.test/audit"
    return tmp_path
