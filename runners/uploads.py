"""The files an accepted document names in `provenance.artifacts` (a serving level's per-request export), uploaded
from the folder they were written to, each outcome in words: one function for `benchreg run serving --submit` and
for an agent's job (runners.agent.jobs).

The uploader is whatever can PUT one file as a run's artifact: runners.client.RegistryClient over HTTP (its bounded
retries of connection errors and 429/502/503/504 included), or the embedded agent's service-layer registry. A
failed upload leaves the file where it is and says so; the stored run is not touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


class Uploader(Protocol):
    def upload_artifact(self, run_id: int, sha256: str, path: Path) -> tuple[bool, str]:
        """PUT the file at `path` as run `run_id`'s artifact `sha256`: (True, what was kept) or (False, why not)."""
        ...


@dataclass(frozen=True)
class Upload:
    """One named file and what became of it. `path` is where it was looked for (and stays, when not uploaded)."""

    name: str
    run_id: int | None
    path: Path
    uploaded: bool
    words: str

    def line(self) -> str:
        """`artifact NAME of run ID: uploaded: N bytes, URL`, or `...: not uploaded: WHY; it stays at PATH`."""
        run = f"run {self.run_id}" if self.run_id is not None else "a run not stored"
        if self.uploaded:
            return f"artifact {self.name} of {run}: {self.words}"
        stays = f"; it stays at {self.path}" if self.path.is_file() else ""
        return f"artifact {self.name} of {run}: not uploaded: {self.words}{stays}"


def named_artifacts(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of the document's `provenance.artifacts` (none: [])."""
    named = (document.get("provenance") or {}).get("artifacts") or []
    return [entry for entry in named if isinstance(entry, dict)]


def upload_named(uploader: Uploader, document: dict[str, Any], folder: Path, run_id: int | None) -> list[Upload]:
    """Upload each file `document` names from `folder` (where it was written, under the name it states) as run
    `run_id`'s artifact, in the order named; one Upload each. A name that is not a plain file name, or a file that is
    not there, is not uploaded and says so."""
    done = []
    for named in named_artifacts(document):
        name, sha256 = str(named.get("name")), str(named.get("sha256"))
        plain = name not in ("", ".", "..") and "/" not in name and "\\" not in name
        file = folder / name if plain else folder
        if run_id is None or not plain or not file.is_file():
            why = "the run was not stored" if run_id is None else f"there is no such file in {folder}"
            done.append(Upload(name, run_id, file, False, why))
            continue
        uploaded, words = uploader.upload_artifact(run_id, sha256, file)
        done.append(Upload(name, run_id, file, uploaded, words))
    return done
