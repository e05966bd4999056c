"""The test loop's own machinery holds: `--dist loadgroup` (scripts/test) keeps every test of an xdist_group on one
worker, so a fixture shared through a group (the authorization world, the embedded server, the published rounds) is
built once. pytest 9.2 broke this without a word (pytest-dev/pytest-xdist#1386: the groups were ignored and those
fixtures built on every worker); this test runs a small suite the way scripts/test runs ours and watches where each
test ran, so a pytest or xdist release that breaks it again fails here instead of slowing the suite unseen."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

GROUPED = 6
ALONE = 6

SUITE = f"""
import time
import pytest

@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range({GROUPED}))
def test_grouped(i):
    time.sleep(0.2)

@pytest.mark.parametrize("i", range({ALONE}))
def test_alone(i):
    time.sleep(0.2)
"""


def test_loadgroup_runs_every_test_of_a_group_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_groups.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this project's configuration
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    here = ["-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "test_groups.py"]
    options = ["-p", "no:django", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *here, *options],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d+)\] .*PASSED (\S+)", done.stdout, re.MULTILINE)
    assert len(ran) == GROUPED + ALONE, done.stdout[-3000:]
    workers = {worker for worker, _ in ran}
    assert len(workers) == 2, f"the premise: both workers took tests ({done.stdout[-3000:]})"
    grouped = {worker for worker, test in ran if "test_grouped" in test}
    assert len(grouped) == 1, f"the group's tests ran on {sorted(grouped)}:\n{done.stdout[-3000:]}"
