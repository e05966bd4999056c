"""MLCommons' citation of an imported result in words: one text for the run page, comparisons and signed reports.

MLCommons' results messaging guidelines ask a cited MLPerf result to name its result ID, the suite and version,
the division, the benchmark and scenario, and the date the result was retrieved, with where to see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def citation_words(citation: Mapping[str, Any]) -> str:
    """'MLPerf Inference v5.1 Closed, result 5.1-0001: llama2-70b-99, Offline (datacenter; audit ID ...),
    retrieved 2026-12-01 from MLCommons' summary_results.json.' A table without result IDs (v6.1's summary.json)
    is said to have none rather than left blank."""
    division = str(citation.get("division") or "").capitalize()
    result = f"result {citation['result_id']}" if citation.get("result_id") else "no result ID in MLCommons' table"
    where = "; ".join(
        part
        for part in (
            str(citation.get("suite") or ""),
            f"audit ID {citation['unique_id']}" if citation.get("unique_id") else "",
        )
        if part
    )
    return (
        f"MLPerf Inference {citation.get('round')} {division}, {result}: {citation.get('benchmark')}, "
        f"{citation.get('scenario')}{f' ({where})' if where else ''}, retrieved {citation.get('retrieved')} from "
        f"MLCommons' {citation.get('table')}."
    )
