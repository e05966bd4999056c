"""The embedded default's broker: kombu's filesystem transport, made safe for producers and a consumer sharing
one folder (docs/operations.md, "The embedded worker").

kombu's own `_put` opens the message file under its final name and then writes it, while the consumer lists the
folder and reads whatever matches; a consumer that lists in between reads an empty or torn file, and the JSON
error it raises ends the Celery worker (kombu issue #1551). Here a message is written under a staging folder on the
same filesystem and renamed into place (`os.replace` is atomic on POSIX), so the consumer only ever sees whole
files; and a file that still does not parse (a crash mid-write by some other writer, a disk error, a hand-made
file) is moved to the quarantine folder and logged, never raised, so the worker goes on with the next message.

Selected with `CELERY_BROKER_TRANSPORT = "registry.worker.broker:Transport"` beside `CELERY_BROKER_URL = "filesystem://"`
(registry/settings.py); the folders come from the same transport options as kombu's (`data_folder_in`, ...) plus
`staging_folder` and `quarantine_folder`.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger(__name__)

# A table file that kombu's _queue_bind is creating reads empty for an instant (it opens, then locks): retry.
TABLE_READ_ATTEMPTS = 5


class Channel(filesystem.Channel):
    """kombu's filesystem channel with atomic writes and a consumer that quarantines what it cannot read."""

    def _folder(self, option: str, default: str) -> Path:
        folder = Path(self.transport_options.get(option) or Path(self.data_folder_out).parent / default)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def staging_folder(self) -> Path:
        return self._folder("staging_folder", "staging")

    @property
    def quarantine_folder(self) -> Path:
        return self._folder("quarantine_folder", "quarantine")

    # kombu's filesystem.Channel._put has this signature; kombu-stubs only declare the virtual base's.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Write the message whole under the staging folder, then rename it into the queue folder."""
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        fd, staged = tempfile.mkstemp(dir=self.staging_folder, prefix=".", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
                file.flush()
                os.fsync(file.fileno())  # a power cut must not leave a renamed but empty message
            Path(staged).replace(Path(self.data_folder_out) / name)
        except OSError as exc:
            Path(staged).unlink(missing_ok=True)
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc

    # kombu's filesystem.Channel._get has this signature; kombu-stubs only declare the virtual base's.
    def _get(self, queue: str) -> Any:  # type: ignore[override]
        """The oldest whole message of `queue`; unreadable files are quarantined on the way."""
        wanted = f"{queue}.msg"
        # The claim is a rename into the processed folder, which is on the same filesystem (kombu's default is
        # the system temporary folder, where a move may be a copy): two consumers never get the same file.
        claims = Path(self.processed_folder)
        claims.mkdir(parents=True, exist_ok=True)
        incoming = Path(self.data_folder_in)
        for filename in sorted(os.listdir(incoming)):  # noqa: PTH208 - names only, sorted: the oldest first
            if filename.partition(".")[2] != wanted:
                continue
            claimed = claims / filename
            try:
                (incoming / filename).rename(claimed)
            except OSError:
                continue  # another consumer took it
            try:
                payload = loads(bytes_to_str(claimed.read_bytes()))
                self.Message(payload, channel=self)  # the envelope kombu delivers from: fails here, not later
            except Exception as exc:  # whatever makes it unreadable, the worker must go on
                self._quarantine(claimed, exc)
                continue
            if not self.store_processed:
                claimed.unlink()
            return payload
        raise Empty()

    def _quarantine(self, claimed: Path, exc: Exception) -> None:
        target = self.quarantine_folder / claimed.name
        try:
            claimed.replace(target)
        except OSError:
            target = claimed
        log.error(
            "unreadable message %s quarantined as %s (%s: %s); the worker goes on",
            claimed.name,
            target,
            type(exc).__name__,
            str(exc)[:200],
        )

    def get_table(self, exchange: str) -> Any:
        for attempt in range(TABLE_READ_ATTEMPTS):
            try:
                return super().get_table(exchange)
            except ValueError:
                if attempt == TABLE_READ_ATTEMPTS - 1:
                    raise ChannelError(f"exchange table {exchange!r} is unreadable") from None
                time.sleep(0.02)
        return []  # not reached


class Transport(filesystem.Transport):
    """kombu's filesystem transport with the channel above."""

    Channel = Channel
