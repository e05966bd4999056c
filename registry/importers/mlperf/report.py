"""The per-file report of an import plan, for the CLI and the admin upload: as JSON-ready data or plain text; with
the published table's referee report (`referee.py`) where there is one."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .plan import FileReport, ImportPlan
from .referee import RefereeReport


def report_dict(plan: ImportPlan, referee: RefereeReport | None = None) -> dict[str, Any]:
    """The plan as JSON-ready data: each item's outcome, flags and files, then the files no item used, then
    what the published table disagrees with (None when no table refereed the import)."""
    return {
        "round": plan.round,
        "round_source": plan.round_source,
        "errors": plan.errors,
        "warnings": plan.warnings,
        "items": [
            {
                "key": item.key,
                "status": item.status,
                "skipped": item.skipped,
                "errors": item.errors,
                "warnings": item.warnings,
                "files": [asdict(f) for f in item.files],
            }
            for item in plan.items
        ],
        "skipped": [asdict(f) for f in plan.skipped],
        "referee": referee.as_dict() if referee else None,
    }


def render_report(plan: ImportPlan, referee: RefereeReport | None = None) -> str:
    """A plain-text report: one block per item (errors, flags, one row per file), then unused files."""
    ready = sum(1 for item in plan.items if item.document)
    lines = [f"MLPerf import: {ready} of {len(plan.items)} runs ready; round {plan.round or '?'} ({plan.round_source})"]
    lines += [f"  error: {e}" for e in plan.errors] + [f"  note:  {w}" for w in plan.warnings]
    for item in plan.items:
        state = {"ready": "ready", "skipped": f"SKIPPED: {item.skipped}", "refused": "REFUSED: nothing will be stored"}[
            item.status
        ]
        lines += ["", f"{item.key}: {state}"]
        lines += [f"  error: {e}" for e in item.errors] + [f"  flag:  {w}" for w in item.warnings]
        lines += _file_rows(item.files)
    if plan.skipped:
        lines += ["", "files not used by any run:", *_file_rows(plan.skipped)]
    if referee:
        lines += ["", *referee.lines()]
    return "\n".join(lines)


def _file_rows(files: list[FileReport]) -> list[str]:
    return [f"  {f.status:<7} {(f.sha256 or '-')[:12]:<12}  {f.path}  ({f.reason})" for f in files]
