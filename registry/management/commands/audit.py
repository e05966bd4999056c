"""`benchreg audit verify|checkpoint|export|show`: check the audit log, sign or export checkpoints, show the head.

verify [--checkpoint FILE ...] [--key VKEY ...] [--witness VKEY ... --require-witnesses K]
       [--progress-every SECONDS | --quiet]       recompute everything; exit 1 naming the first mismatch (how far
                                                  it has got said on stderr every 5 s, for a large registry)
checkpoint                                        sign a checkpoint of the current head now
export --out FILE                                 write the latest signed checkpoint (a C2SP note) to FILE,
                                                  signing one first if the log has grown since
show                                              the head, the latest checkpoint and the verifier key
sequence [--follow] [--interval S]                number queued entries now (or keep doing so: a sequencer
                                                  loop for BENCHREG_AUDIT_SEQUENCING=worker without beat)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from protocol.signed_note import NoteError
from registry.audit.keys import checkpoint_key, log_origin
from registry.audit.sequencer import audit_integrate
from registry.audit.verify import Report, verify_log
from registry.choices import CheckpointReason
from registry.selectors.audit import audit_pending_count, audit_size, checkpoint_latest
from registry.services.audit import checkpoint_sign
from runners.arguments import count, number

MAX_LISTED = 50  # findings printed in full; the rest are counted


class Command(BaseCommand):
    help = "Verify the audit log, sign or export a checkpoint, or show the log's head."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="{verify,checkpoint,export,show,sequence}")
        _add_verify_arguments(sub.add_parser("verify", help="recompute the log and check it against checkpoints"))
        sub.add_parser("checkpoint", help="sign a checkpoint of the current head now")
        export = sub.add_parser("export", help="write the latest signed checkpoint to a file")
        export.add_argument(
            "--out", required=True, type=Path, help="file to write the checkpoint to (replaced if there)"
        )
        sub.add_parser("show", help="the head, the latest checkpoint and the verifier key")
        sequence = sub.add_parser("sequence", help="number queued entries (one sequencer at a time)")
        sequence.add_argument("--follow", action="store_true", help="keep sequencing until interrupted")
        sequence.add_argument(
            "--interval", type=number(above=0, high=3600), default=0.2, help="seconds between passes (--follow)"
        )

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"_{action}")(**options)

    def _verify(
        self,
        *,
        checkpoint: list[Path],
        key: list[str],
        witness: list[str],
        require_witnesses: int,
        progress_every: float,
        quiet: bool,
        **_: Any,
    ) -> None:
        if require_witnesses > len(witness):
            raise CommandError(
                f"--require-witnesses {require_witnesses} needs at least as many --witness keys (got {len(witness)})"
            )
        files = _read_checkpoint_files(checkpoint)
        try:
            report = verify_log(
                checkpoint_files=files,
                keys=key or None,
                witnesses=witness,
                quorum=require_witnesses,
                say_progress=None if quiet else self._say_progress,
                progress_every=progress_every,
            )
        except NoteError as exc:  # a malformed --key or --witness
            raise CommandError(str(exc)) from None
        self._print_summary(report)
        if report.ok:
            self.stdout.write(self.style.SUCCESS("OK: every entry, checkpoint and run matches"))
            return
        self._print_findings(report)
        raise CommandError(f"audit log verification FAILED: {_headline(report)}")

    def _say_progress(self, line: str) -> None:
        self.stderr.write(line)
        self.stderr.flush()

    def _print_summary(self, report: Report) -> None:
        self.stdout.write(f"audit log {log_origin()}: {report.size} entries, root {report.root.hex()}")
        self.stdout.write(
            f"checked {report.checkpoints} stored checkpoints, {report.files} checkpoint files, "
            f"{report.runs} runs, {report.withdrawals} withdrawals"
        )
        for name, cosigners in report.cosigned:
            self.stdout.write(f"{name}: cosigned by {cosigners} of the given witnesses")

    def _print_findings(self, report: Report) -> None:
        if (entry := report.first_entry()) is not None:
            self.stdout.write(self.style.ERROR(f"first mismatching entry: #{entry.seq}: {entry.message}"))
        if (run := report.first_run()) is not None:
            self.stdout.write(self.style.ERROR(f"first mismatching run: {run.run}: {run.message}"))
        self.stdout.write(f"{len(report.findings)} problem(s):")
        for finding in report.findings[:MAX_LISTED]:
            self.stdout.write(f"  {finding}")
        if len(report.findings) > MAX_LISTED:
            self.stdout.write(f"  ... and {len(report.findings) - MAX_LISTED} more")

    def _checkpoint(self, **_: Any) -> None:
        checkpoint = checkpoint_sign(reason=CheckpointReason.MANUAL)
        self.stdout.write(f"checkpoint {checkpoint.pk}: size {checkpoint.size}, root {checkpoint.root_hash}")

    def _export(self, *, out: Path, **_: Any) -> None:
        # The latest checkpoint, or a new one first if the log has grown since: what a reviewer keeps should
        # cover everything there is.
        checkpoint = checkpoint_sign(reason=CheckpointReason.MANUAL)
        # Written beside the target and renamed, so an interrupted export never leaves half a note.
        tmp = out.with_name(f".{out.name}.tmp")
        try:
            tmp.write_text(checkpoint.note, encoding="utf-8")
            tmp.replace(out)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
        self.stdout.write(f"wrote checkpoint {checkpoint.pk} (size {checkpoint.size}) to {out}")

    def _show(self, **_: Any) -> None:
        latest = checkpoint_latest()
        self.stdout.write(f"origin:       {log_origin()}")
        self.stdout.write(f"entries:      {audit_size()}")
        self.stdout.write(f"queued:       {audit_pending_count()} (not yet numbered)")
        self.stdout.write(f"verifier key: {checkpoint_key().vkey}")
        if latest is None:
            self.stdout.write("checkpoint:   none yet (benchreg audit checkpoint)")
        else:
            self.stdout.write(
                f"checkpoint:   {latest.pk}, size {latest.size}, {latest.reason}, "
                f"{latest.created_at.isoformat()}\n{latest.note}"
            )

    def _sequence(self, *, follow: bool, interval: float, **_: Any) -> None:
        while True:
            count = audit_integrate()
            if count or not follow:
                self.stdout.write(f"integrated {count} entries; the log has {audit_size()}")
            if not follow:
                return
            time.sleep(interval)


def _add_verify_arguments(verify: CommandParser) -> None:
    verify.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a signed checkpoint kept outside the registry (repeatable)",
    )
    verify.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="VKEY",
        help="trust only these verifier keys (default: the registry's own)",
    )
    verify.add_argument(
        "--witness",
        action="append",
        default=[],
        metavar="VKEY",
        help="a witness's cosignature/v1 verifier key (repeatable)",
    )
    verify.add_argument(
        "--require-witnesses",
        type=count(0, 1000),
        default=0,
        metavar="K",
        help="every --checkpoint FILE (else the latest cosigned stored checkpoint) must carry "
        "cosignatures by at least K of the --witness keys",
    )
    verify.add_argument(
        "--progress-every",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="say on stderr how many entries and runs have been checked every SECONDS while they are (default 5; "
        "a part done sooner says nothing)",
    )
    verify.add_argument("--quiet", action="store_true", help="say nothing of the progress")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 seconds or more: {text!r}")
    return value


def _read_checkpoint_files(paths: list[Path]) -> list[tuple[str, bytes]]:
    files = []
    for path in paths:
        try:
            files.append((str(path), path.read_bytes()))
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    return files


def _headline(report: Report) -> str:
    parts = []
    if (entry := report.first_entry()) is not None:
        parts.append(f"first mismatching entry #{entry.seq}")
    if (run := report.first_run()) is not None:
        parts.append(f"first mismatching run {run.run}")
    others = [f for f in report.findings if f.seq is None and f.run is None]
    if others:
        parts.append(str(others[0]))
    return "; ".join(parts)
