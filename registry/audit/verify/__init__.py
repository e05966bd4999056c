"""Re-verify the whole audit log from the database, as a governance reviewer would, and say what does not match.

The package's public API is `verify_log` and what it returns (`Report` of `Finding`s); one module per part of the
check below (entries, checkpoints, runs, withdrawals). Entries are read and rebuilt with protocol.audit_entries.

What is checked (`verify_log`):
  1. every entry: its text hashes to its stored leaf hash; its text agrees with its columns (seq, time, kind,
     subject; actor in format 1; in format 3 its `who` commitment is recomputed from actor, actor_user and
     actor_token with the registry's commitment key); the sequence has no gaps; the head row counts them all;
  2. every stored checkpoint: its signature verifies with a trusted key and its root is the root of the first
     `size` leaves as recomputed from the entry texts now;
  3. every checkpoint file a reviewer kept (signed notes): the same, so a rewrite of the log *and* its stored
     checkpoints still shows against a copy held outside the database;
  4. every run, streamed with its `run.submitted` entry (one join, CHUNK rows at a time): its canonical text hashes
     to its digest; its document, summary, origin and comparability-key columns are recomputed from that text; its
     entry is rebuilt from the row as stored (id, trust, submitted_at, and in format 3 who stored it: name, user,
     token) and compared with the logged one; every such entry has its run. Withdrawals likewise (reason, and in
     format 3 who withdrew it and when). Each mismatch names the run, the column, the stored and the expected value.

Nothing here trusts the per-process tree cache of registry.selectors.audit: the tree is rebuilt from the texts.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.signed_note import VerifierKey
from registry.audit.keys import trusted_verifier_keys
from registry.audit.sequencer import audit_integrate
from registry.audit.verify import progress
from registry.audit.verify.checkpoints import verify_checkpoint_files, verify_stored_checkpoints, verify_witnesses
from registry.audit.verify.entries import entry_count, verify_entries, verify_head
from registry.audit.verify.findings import Finding, Report
from registry.audit.verify.runs import run_count, verify_run_entries, verify_runs
from registry.audit.verify.withdrawals import verify_withdrawals

__all__ = ["Finding", "Report", "verify_log"]


def verify_log(
    *,
    checkpoint_files: Sequence[tuple[str, bytes]] = (),
    keys: Sequence[str | VerifierKey] | None = None,
    witnesses: Sequence[str] = (),
    quorum: int = 0,
    say_progress: progress.Say | None = None,
    progress_every: float = 5.0,
) -> Report:
    """Check everything listed in the module docstring. `checkpoint_files` are (name, signed note bytes);
    `keys` are the verifier keys to trust (default: the registry's current and configured earlier keys).

    With `quorum` > 0, every checkpoint file (or, without files, the latest stored checkpoint with its
    cosignatures) must carry valid cosignatures by at least `quorum` of `witnesses` (cosignature/v1 verifier keys).

    With `say_progress`, how many entries and runs have been checked is said through it every `progress_every`
    seconds while they are (registry/audit/verify/progress.py).
    """
    trusted = list(keys) if keys else list(trusted_verifier_keys())
    report = Report()
    with progress.reporting(say_progress, progress_every):
        # Entries queued by committed changes are numbered first, so every committed change has its entry to check.
        audit_integrate()
        with progress.phase("entries", entry_count):
            _verify_tree(report, trusted, checkpoint_files)
        if quorum > 0:
            verify_witnesses(report, checkpoint_files, witnesses, quorum)
        with progress.phase("runs", run_count):
            verify_runs(report)
        verify_run_entries(report)
        verify_withdrawals(report)
    return report


def _verify_tree(
    report: Report, trusted: Sequence[str | VerifierKey], checkpoint_files: Sequence[tuple[str, bytes]]
) -> None:
    """The entries, the tree they make, the head row, and the stored and given checkpoints against that tree."""
    tree = verify_entries(report)
    report.size, report.root = tree.size, tree.root()
    verify_head(report)
    verify_stored_checkpoints(report, tree, trusted)
    verify_checkpoint_files(report, tree, trusted, checkpoint_files)
