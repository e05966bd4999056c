"""The matrix names a configuration by its differing settings in words, for every published round we hold: each shared
round of ../shared/data/mlperf-rounds imported whole (as `benchreg import mlperf` does), every page of columns read,
and no raw settings key (`loadgen.generated_samples_per_query=1024`, `user.conf:*.Offline.target_qps`) on any."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from protocol.comparability import setting_words
from registry.models import Submission
from registry.selectors.catalogue import CatalogueQuery
from registry.selectors.matrix import catalogue_matrix
from registry.services.imports import mlperf_import_rounds
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db
ROUNDS = Path(
    os.environ.get("BENCHREG_MLPERF_ROUNDS") or Path(__file__).resolve().parents[3].parent / "shared/data/mlperf-rounds"
)
SHARED_ROUNDS = sorted(p.name for p in ROUNDS.iterdir() if p.is_dir()) if ROUNDS.is_dir() else []
# A settings key as the importers write it: LoadGen's, the submitter's user.conf, MLCommons' endpoints client.
RAW_KEY = re.compile(r"(loadgen\.|user\.conf:|endpoints\.)[A-Za-z_*]|\b[a-z]+(?:\.[a-z_]+)+=")


def _settings_keys() -> set[str]:
    keys: set[str] = set()
    for document in Submission.objects.values_list("document", flat=True):
        keys |= set(((document.get("software") or {}).get("settings") or {}).keys())
    return keys


def _pages(client: Any) -> list[str]:
    """Every page of the matrix's columns, as a reader pages through them."""
    first = client.get("/matrix/")
    assert first.status_code == 200
    total = catalogue_matrix(CatalogueQuery()).column_total
    pages = [first.content.decode()]
    for n in range(2, -(-total // 5) + 1):
        response = client.get(f"/matrix/?cols={n}")
        assert response.status_code == 200
        pages.append(response.content.decode())
    return pages


@pytest.mark.parametrize("name", SHARED_ROUNDS)
def test_no_raw_settings_key_reaches_the_matrix_of_a_shared_round(name: str, django_user_model: Any) -> None:
    folder = ROUNDS / name
    admin = django_user_model.objects.create_superuser("ada", "ada@example.org", "pw-for-tests-only")
    mlperf_import_rounds(root=folder, submitted_by=admin)  # the round is read from the folder's name
    assert Submission.objects.exists(), f"nothing of {name} was stored"
    keys = _settings_keys()
    pages = _pages(signed_in(admin))
    for html in pages:
        assert not RAW_KEY.search(html), RAW_KEY.search(html)
        for key in keys:
            assert f"{key}=" not in html and f">{key}<" not in html, key
    # the cells that tell configurations apart say their settings in words, the words setting_words gives
    told = [
        cell.setting
        for row in catalogue_matrix(CatalogueQuery()).rows
        for cell in row.cells
        if cell is not None and cell.setting
    ]
    for words in told:
        assert not RAW_KEY.search(words), words
    if name.startswith("inference"):  # LoadGen's settings split one system's results of one set
        assert told, f"no cell of {name} tells configurations apart: the test reads nothing"
        assert any(words in " ".join(pages) for words in told)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("loadgen.generated_samples_per_query", 1024, "samples per query 1,024 as generated"),
        ("loadgen.samples_per_query", 8, "samples per query 8"),
        ("loadgen.target_qps", 29.5, "target QPS 29.5"),
        ("loadgen.target_latency_ns", 2_000_000_000, "target latency 2 s"),
        ("loadgen.target_latency_percentile", 0.99, "99th percentile latency target"),
        ("loadgen.schedule_rng_seed", "18209322760996052031", "schedule seed 18209322760996052031"),
        ("loadgen.print_timestamps", False, "timestamps printed no"),
        ("user.conf:*.Offline.target_qps", 720000, "target QPS 720,000 in user.conf"),
        ("user.conf:llama3_1-405b.Server.min_duration", 600000, "min duration 10 min in user.conf"),
        ("user.conf:*.MultiStream.target_latency_percentile", 99, "99th percentile latency target in user.conf"),
        ("endpoints.duration_ns", 660_000_000_000, "duration 11 min"),
        ("endpoints.type", "online", "endpoints test type online"),
        ("numpy.blas_threads", 2, "BLAS threads 2"),
        ("torch.backends.cuda.matmul.allow_tf32", True, "TF32 matmul yes"),
        ("env.OMP_NUM_THREADS", "8", "environment OMP_NUM_THREADS 8"),
        # keys no table names: split into words, never shown as the dotted key
        ("loadgen.accuracy_sample_count", 24576, "accuracy sample count 24,576"),
        ("vendor.engine.max_num_batched_tokens", 8192, "vendor engine max number of batched tokens 8,192"),
        ("vendor.queue_wait_ms", 5, "vendor queue wait 5 ms"),
        ("user.conf:*.Server.some_new_knob", None, "some new knob not stated in user.conf"),
        ("user.conf:*.MultiStream.target_latency", 7.3, "target latency 7.3 ms in user.conf"),
        ("loadgen.min_duration_ms", 9_600_000, "min duration 160 min"),
    ],
)
def test_a_setting_is_said_in_words(key: str, value: Any, words: str) -> None:
    assert setting_words(key, value) == words
