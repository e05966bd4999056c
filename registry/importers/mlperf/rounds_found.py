"""Which MLPerf rounds a folder holds, and of which suite: a results repository (one round), or a folder holding
several, such as an Inference round beside a Training round.

A folder holds an Inference round when it has results/<system>/<benchmark>/<scenario>/ folders, a Training round
when it has results/<system>/<benchmark>/result_<n>.txt files. A folder holding both, or several folders named
after different rounds, is split into its subfolders, each read as a round of its own: each takes its suite from
its contents and its round from its own name ('inference_results_v5.1', 'training_v4.0'), as when it is imported
alone.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .rules import SCENARIO_FOLDERS
from .training import RESULT_FILE
from .tree import real_dir, subfolders

INFERENCE, TRAINING = "inference", "training"
ROUND_NAME = re.compile(r"v(\d+\.\d+)$")  # how both importers read a round from a folder's name


@dataclass(frozen=True)
class RoundFolder:
    """A folder to import as one round: its path and its suite ('inference' or 'training'; None: none found)."""

    path: Path
    suite: str | None


def round_folders(root: Path) -> list[RoundFolder]:
    """`root` alone when it holds one suite (or none: the importer then says what is missing); otherwise the
    folders below it that each hold one suite, in name order. Links to folders are not followed."""
    root = Path(root)
    found = _suites_by_submission(root)
    return _split(root, found) or [RoundFolder(root, None)]


def _split(folder: Path, found: dict[Path, set[str]]) -> list[RoundFolder]:
    """`folder` as one round, or split into its subfolders when it holds both suites, or several folders named
    after different rounds (and no round in its own name). A submitter's folder (holding results/) is never split."""
    inside = {place: suites for place, suites in found.items() if place == folder or folder in place.parents}
    if not inside:
        return []
    suites = set().union(*inside.values())
    if folder not in found and (len(suites) > 1 or _several_rounds(folder, inside)):
        return [part for sub in subfolders(folder) for part in _split(sub, found)]
    return [RoundFolder(folder, suites.pop() if len(suites) == 1 else None)]


def _several_rounds(folder: Path, inside: dict[Path, set[str]]) -> bool:
    """Whether results lie under two or more subfolders named after different rounds ('..._v5.0', '..._v5.1')
    while `folder`'s own name names none."""
    if ROUND_NAME.search(folder.name):
        return False
    named = {
        match[1]
        for place in inside
        if (match := ROUND_NAME.search(place.relative_to(folder).parts[0] if place != folder else ""))
    }
    return len(named) > 1


def _suites_by_submission(root: Path) -> dict[Path, set[str]]:
    """For each folder holding results/ (a submitter's folder): the suites its results are of. One walk."""
    found: dict[Path, set[str]] = {}
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if real_dir(here / d)]
        parts = here.relative_to(root).parts
        if len(parts) < 3 or parts[-3] != "results":
            continue
        submission = here.parents[2]  # <submission>/results/<system>/<benchmark>
        if any(RESULT_FILE.match(name) for name in names):
            found.setdefault(submission, set()).add(TRAINING)
        if any(d.lower() in SCENARIO_FOLDERS for d in dirs):
            found.setdefault(submission, set()).add(INFERENCE)
        dirs[:] = []  # below results/<system>/<benchmark>/ lie a result's own files only
    return found
