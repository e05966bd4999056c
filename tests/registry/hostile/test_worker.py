"""The embedded broker (registry/worker/broker.py) against the files that killed the embedded worker: kombu's filesystem
transport let a consumer read a message its producer had not finished writing, and any unparsable file then ended
the Celery worker for good. A consumer must never see a half-written message, and a file that does not parse (torn,
empty, foreign, not a kombu envelope) is set aside in the quarantine folder while the next message is served."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from tests.registry.ops.services import ROOT


@pytest.fixture
def queue_dir(tmp_path: Path) -> Path:
    for folder in ("messages", "processed", "control", "staging", "quarantine"):
        (tmp_path / folder).mkdir()
    return tmp_path


def _connection(root: Path) -> Connection:
    return Connection(
        "filesystem://",
        transport="registry.worker.broker:Transport",
        transport_options={
            "data_folder_in": str(root / "messages"),
            "data_folder_out": str(root / "messages"),
            "processed_folder": str(root / "processed"),
            "control_folder": str(root / "control"),
            "staging_folder": str(root / "staging"),
            "quarantine_folder": str(root / "quarantine"),
        },
    )


UNREADABLE = {
    "00_empty.celery.msg": b"",
    "01_torn.celery.msg": b'{"body": "eyJhcmdzIjog',
    "02_not-utf8.celery.msg": b"\xff\xfe\x00",
    "03_not-an-object.celery.msg": b"[1, 2, 3]",
    "04_no-envelope.celery.msg": b'{"body": "e30=", "headers": {}}',
    "05_deep.celery.msg": b"[" * 100_000 + b"]" * 100_000,
}


def test_unreadable_message_files_are_quarantined_and_the_next_message_is_served(queue_dir: Path) -> None:
    with _connection(queue_dir) as connection:
        queue = connection.SimpleQueue("celery")
        queue.put({"n": 1})
        for name, content in UNREADABLE.items():  # named to sort before the real message: they are read first
            (queue_dir / "messages" / name).write_bytes(content)
        message = queue.get_nowait()
        assert message.payload == {"n": 1}
        message.ack()
        with pytest.raises(Empty):
            queue.get_nowait()
    assert sorted(p.name for p in (queue_dir / "quarantine").iterdir()) == sorted(UNREADABLE)
    assert list((queue_dir / "messages").iterdir()) == []


PRODUCER = """
import sys
from pathlib import Path
from tests.registry.hostile.test_worker import _connection
with _connection(Path(sys.argv[1])) as connection:
    outbox = connection.SimpleQueue("celery")
    for n in range(int(sys.argv[2])):
        outbox.put({"n": n, "pad": "x" * 2048})
"""


def test_a_consumer_never_reads_a_message_its_producer_is_still_writing(queue_dir: Path) -> None:
    """A producer process (as a web process is) writes while this one drains: kombu's own transport fails this
    within a few dozen messages (JSONDecodeError on a file not written yet)."""
    count = 300
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER, str(queue_dir), str(count)], cwd=ROOT)
    received: list[int] = []
    try:
        with _connection(queue_dir) as connection:
            inbox = connection.SimpleQueue("celery")
            deadline = time.monotonic() + 45
            while len(received) < count and time.monotonic() < deadline:
                try:
                    message = inbox.get_nowait()  # one listing per call, as fast as it goes: the widest window
                except Empty:
                    continue
                received.append(message.payload["n"])
                message.ack()
    finally:
        if producer.poll() is None:
            producer.kill()
        producer.wait(timeout=30)
    assert sorted(received) == list(range(count))
    assert list((queue_dir / "quarantine").iterdir()) == []
    assert list((queue_dir / "staging").iterdir()) == []  # every staged file was renamed into place
