"""The audit log's pages in Chromium, read by someone without an account at 1,280 and 390 px: no page wider than its
window, axe-core finds nothing serious, the filter works, the witness's cosignature and the run's proofs read as
verified, and the proofs download as a file (screenshots under test-artifacts/screenshots/audit-*.png)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from protocol.cosignature import CosignerKey, cosign
from registry.choices import CheckpointReason
from registry.models import Cosignature
from registry.services.audit import checkpoint_sign
from registry.services.submissions import submission_create, submission_withdraw
from tests.registry.services.test_submissions import document_variant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDE, NARROW = 1280, 390


@pytest.fixture
def audited(settings: Any, tmp_path: Path, django_user_model: Any, server_example: dict[str, Any]) -> list[Any]:
    """Three runs (one withdrawn) and a checkpoint over them, cosigned by a configured witness."""
    user = django_user_model.objects.create_user("lab-7", password="a-long-browser-test-password")
    settings.DATA_DIR = tmp_path
    settings.BENCHREG_CHECKPOINT_KEY = ""
    settings.BENCHREG_LOG_ORIGIN = "benchreg.test/audit"
    runs = [submission_create(document=document_variant(server_example, i), submitted_by=user)[0] for i in range(3)]
    submission_withdraw(submission=runs[0], reason="driver not recorded", actor=user)
    checkpoint = checkpoint_sign(reason=CheckpointReason.MANUAL)
    witness = CosignerKey("witness.example.org/governance", Ed25519PrivateKey.generate())
    line = cosign(checkpoint.note[: checkpoint.note.index("\n\n") + 1].encode(), witness, 1_790_000_000)
    Cosignature.objects.create(
        checkpoint=checkpoint, witness=witness.name, vkey=witness.public.vkey, line=line.rstrip("\n"),
        timestamp=1_790_000_000, created_at=datetime.now(UTC),
    )  # fmt: skip
    settings.BENCHREG_WITNESSES = [f"http://127.0.0.1:9 {witness.public.vkey}"]
    return runs


def _fits_and_passes_axe(page: Any, name: str, shoot: Any) -> None:
    from axe_playwright_python.sync_playwright import Axe

    for width in (WIDE, NARROW):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(50)
        overflow = page.evaluate(
            """() => ({width: document.documentElement.scrollWidth, window: innerWidth,
            past: Array.from(document.querySelectorAll('body *')).filter(e => {
              const r = e.getBoundingClientRect(); return r.width > 0 && r.right > innerWidth + 0.5 &&
                !e.closest('.table-wrap, pre'); })
              .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))
            })"""
        )
        assert overflow["width"] <= overflow["window"], f"{name} at {width} px: {overflow}"
        bad = [v for v in Axe().run(page).response["violations"] if v["impact"] in ("serious", "critical")]
        assert not bad, f"{name} at {width} px: " + "; ".join(
            f"{v['id']}: {v['help']} at {[n['target'] for n in v['nodes']][:3]}" for v in bad
        )
        shoot(page, f"audit-{name}-{width}")
    page.set_viewport_size({"width": WIDE, "height": 900})


def test_a_reader_without_an_account_reads_the_log_and_checks_a_runs_proofs(
    live_server: Any, page: Any, shoot: Any, audited: list[Any]
) -> None:
    base = live_server.url
    page.goto(base + "/audit/")
    assert page.get_by_role("heading", level=1).inner_text() == "Audit log"
    checkpoints = page.locator("#checkpoints-heading").locator("..").inner_text()
    assert "Checkpoint of size 4" in checkpoints and "signature verified" in checkpoints
    assert "witness.example.org/governance cosigned it — verified." in checkpoints
    assert page.locator(".table--audit tbody tr").count() == 4
    _fits_and_passes_axe(page, "log", shoot)

    page.get_by_label("Kind").select_option("run.withdrawn")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/audit/?kind=run.withdrawn*")
    assert page.locator(".table--audit tbody tr").count() == 1

    page.get_by_role("link", name=f"proofs of run {audited[0].pk}").click()
    page.wait_for_url(f"**/audit/runs/{audited[0].pk}/")
    verdicts = page.locator(".proof__verdict").all_inner_texts()
    assert verdicts == [
        "Entry 0 is included in the checkpoint of size 4 — proof verified.",
        "Entry 3 is included in the checkpoint of size 4 — proof verified.",
    ]
    _fits_and_passes_axe(page, "run", shoot)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the proofs (JSON)").click()
    assert download.value.suggested_filename == f"audit-run-{audited[0].pk}-proofs.json"
    proofs = json.loads(Path(download.value.path()).read_text())
    assert [e["seq"] for e in proofs["entries"]] == [0, 3] and proofs["tree_size"] == 4
