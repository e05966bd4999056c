"""`benchreg witness`: a C2SP tlog-witness (https://c2sp.org/tlog-witness) for the registry's audit log.

Run it on another machine (a governance office, a second lab) with its own Ed25519 key and its own state. The
registry POSTs each new checkpoint to `<url>/add-checkpoint` with a consistency proof from the size the witness
last cosigned; the witness checks the log's signature, the proof, and that the new checkpoint extends what it saw,
records it, and answers with a C2SP tlog-cosignature line. Anything else is refused with the protocol's status
and a plain-text reason: 404 unknown log, 403 no valid log signature, 400 malformed, 409 (with the witness's size,
`text/x.tlog.size`) when the old size is not the one it holds or the same size has another root (a fork), 422
when the consistency proof does not verify.

`GET /checkpoint?origin=<origin>` returns the latest checkpoint the witness cosigned, with its cosignature: a
reviewer can fetch it from the witness directly and give it to `benchreg audit verify --checkpoint`.

Plain Python (protocol/ and the standard library's HTTP server); no Django, no database. State is one JSON file,
replaced atomically under a lock, so a check and its update are one step (the race the spec warns about).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import json
import math
import os
import socket
import stat
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from protocol.cosignature import CosignerKey, cosign, cosigner_key, parse_cosigner_key
from protocol.signed_note import (
    Checkpoint,
    InvalidSignatureError,
    NoteError,
    UnknownKeyError,
    VerifierKey,
    open_note,
    parse_verifier_key,
)
from protocol.transparency import verify_consistency

MAX_BODY = 64 * 1024
MAX_PROOF_LINES = 63
# A client that stalls must not hold the witness: each request (its line, headers and body) is read within
# REQUEST_DEADLINE_S in all, each read waits at most READ_TIMEOUT_S, and at most MAX_CONNECTIONS connections are
# served at once (one thread each); the next is answered 503 and closed without a thread of its own.
READ_TIMEOUT_S = 10.0
REQUEST_DEADLINE_S = 30.0
MAX_CONNECTIONS = 64


class KeyFileError(Exception):
    """A key file that is missing, unreadable, malformed or readable by others than its owner."""


def read_private_key_file(path: Path) -> str:
    """The text of a private key file, refused if the group or others may read or write it (chmod 600)."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii")
    except OSError as exc:
        raise KeyFileError(f"cannot read the key file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise KeyFileError(f"{path} is not a key file (not ASCII)") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(
            f"{path} is readable or writable by group or others (mode {stat.S_IMODE(mode):o}); run chmod 600 {path}"
        )
    return text


def write_private_key_file(path: Path, text: str) -> None:
    """Create a key file with mode 0600; never overwrite one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(text + "\n")


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes

    @classmethod
    def text(cls, status: int, message: str) -> Answer:
        return cls(status, "text/plain; charset=utf-8", (message + "\n").encode())


class Witness:
    """The witness's key, the logs it follows (origin -> verifier keys) and its state file."""

    def __init__(self, key: CosignerKey, log_keys: Sequence[str], state_path: Path) -> None:
        self.key = key
        self.logs: dict[str, list[VerifierKey]] = {}
        for vkey in log_keys:
            parsed = parse_verifier_key(vkey)
            self.logs.setdefault(parsed.name, []).append(parsed)
        self.state_path = state_path
        self.lock = threading.Lock()

    # -- state ---------------------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        try:
            loaded: dict[str, Any] = json.loads(self.state_path.read_text())
            return loaded
        except FileNotFoundError:
            return {}

    def _save(self, state: dict[str, Any]) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
        tmp.replace(self.state_path)

    def latest(self, origin: str) -> str | None:
        """The latest cosigned checkpoint for `origin`, as a signed note with this witness's cosignature."""
        with self.lock:
            record = self._state().get(origin)
        return None if record is None else str(record["note"])

    # -- add-checkpoint ------------------------------------------------------------------------------------

    def add_checkpoint(self, body: bytes) -> Answer:
        opened = self._open_request(body)
        if isinstance(opened, Answer):
            return opened
        origin, old_size, proof, note, checkpoint = opened
        if old_size > checkpoint.size:
            return Answer.text(400, f"old size {old_size} is larger than the checkpoint's size {checkpoint.size}")
        with self.lock:
            state = self._state()
            refusal = _extension_refusal(state.get(origin), old_size, proof, checkpoint)
            if refusal is not None:
                return refusal
            line = cosign(checkpoint.body(), self.key, int(time.time()))
            state[origin] = {
                "size": checkpoint.size,
                "root": base64.b64encode(checkpoint.root_hash).decode(),
                "note": _with_line(note, line),
            }
            self._save(state)
        return Answer(200, "text/plain; charset=utf-8", line.encode())

    def _open_request(self, body: bytes) -> Answer | tuple[str, int, list[bytes], bytes, Checkpoint]:
        """The request's (origin, old size, proof, note, checkpoint), or the Answer refusing it."""
        try:
            old_size, proof, note = _parse_request(body)
        except ValueError as exc:
            return Answer.text(400, f"malformed add-checkpoint request: {exc}")
        try:
            origin = note.split(b"\n", 1)[0].decode()
        except UnicodeDecodeError:
            return Answer.text(400, "the checkpoint's origin line is not UTF-8")
        keys = self.logs.get(origin)
        if keys is None:
            return Answer.text(404, f"unknown log {origin!r}: this witness follows {sorted(self.logs)}")
        try:
            checkpoint, _ = open_note(note, keys)
        except (UnknownKeyError, InvalidSignatureError) as exc:
            return Answer.text(403, f"the checkpoint is not signed by the log's key: {exc}")
        except NoteError as exc:
            return Answer.text(400, f"malformed checkpoint: {exc}")
        return origin, old_size, proof, note, checkpoint


def _extension_refusal(
    record: dict[str, Any] | None, old_size: int, proof: list[bytes], checkpoint: Checkpoint
) -> Answer | None:
    """The Answer refusing `checkpoint` as an extension of the cosigned `record`, or None when it extends it."""
    size = 0 if record is None else int(record["size"])
    if old_size != size:
        return Answer(409, "text/x.tlog.size", f"{size}\n".encode())
    old_root = None if record is None else base64.b64decode(record["root"])
    if old_size == checkpoint.size and old_root is not None and old_root != checkpoint.root_hash:
        return Answer(409, "text/x.tlog.size", f"{size}\n".encode())
    if old_size == 0:
        if proof:
            return Answer.text(422, "the consistency proof from size 0 must be empty")
    elif old_root is None or not verify_consistency(old_size, checkpoint.size, old_root, checkpoint.root_hash, proof):
        return Answer.text(
            422,
            f"refused: checkpoint {checkpoint.size} is not consistent with the "
            f"checkpoint {old_size} this witness cosigned (the log forked or was "
            "rewritten)",
        )
    return None


def _with_line(note: bytes, line: str) -> str:
    return note.decode() + line


def _parse_request(body: bytes) -> tuple[int, list[bytes], bytes]:
    """(old size, consistency proof hashes, the signed checkpoint note). Raises ValueError."""
    head, sep, note = body.partition(b"\n\n")
    if not sep:
        raise ValueError("no blank line before the checkpoint")
    lines = head.decode("ascii", errors="replace").split("\n")
    first = lines[0]
    if not first.startswith("old ") or not first[4:].isdigit() or (first[4:] != "0" and first[4] == "0"):
        raise ValueError("the first line must be `old <size>` (decimal, no leading zeros)")
    if len(lines) - 1 > MAX_PROOF_LINES:
        raise ValueError(f"more than {MAX_PROOF_LINES} consistency proof lines")
    proof = []
    for line in lines[1:]:
        try:
            raw = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"proof line {line[:50]!r} is not base64") from None
        if len(raw) != 32:
            raise ValueError("a proof line encodes one 32-byte hash")
        proof.append(raw)
    return int(first[4:]), proof, note


class _WitnessHandler(BaseHTTPRequestHandler):
    """The witness's HTTP handler; `_handler` subclasses it with its witness, read timeout and deadline."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the spec asks
    # Headers and body go out in two writes: with Nagle's algorithm on, the body waited for the client's delayed ACK
    # of the headers (40 ms on Linux) on a kept-alive connection. StreamRequestHandler sets TCP_NODELAY for this.
    disable_nagle_algorithm = True
    timeout = READ_TIMEOUT_S  # StreamRequestHandler sets it on the socket: every read waits at most this
    deadline = REQUEST_DEADLINE_S
    witness: Witness

    def handle_one_request(self) -> None:
        # The socket timeout bounds each read, not a client that drips a byte per read: past the deadline
        # the connection is shut down, which ends the blocked read and this connection's thread.
        watchdog = threading.Timer(self.deadline, self._cut)
        watchdog.daemon = True
        watchdog.start()
        try:
            super().handle_one_request()
        except OSError:
            self.close_connection = True
        finally:
            watchdog.cancel()

    def _cut(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # already closed: nothing to cut
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(answer.body)

    def do_POST(self) -> None:
        if urlsplit(self.path).path.rstrip("/").split("/")[-1] != "add-checkpoint":
            self._send(Answer.text(404, "POST <prefix>/add-checkpoint"))
            return
        try:
            length = int(self.headers.get("Content-Length") or "0")
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            self._send(Answer.text(400, f"a request body of 1..{MAX_BODY} bytes with its Content-Length"))
            return
        self._send(self.witness.add_checkpoint(self.rfile.read(length)))

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.rstrip("/").split("/")[-1] != "checkpoint":
            self._send(Answer.text(404, "GET <prefix>/checkpoint?origin=<origin>"))
            return
        origin = (parse_qs(url.query).get("origin") or [""])[0]
        note = self.witness.latest(origin)
        if note is None:
            self._send(Answer.text(404, f"no checkpoint cosigned for {origin!r}"))
            return
        self._send(Answer(200, "text/plain; charset=utf-8", note.encode()))

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"witness {self.address_string()} {format % args}\n")


def _handler(
    witness: Witness, read_timeout: float = READ_TIMEOUT_S, deadline: float = REQUEST_DEADLINE_S
) -> type[BaseHTTPRequestHandler]:
    class Handler(_WitnessHandler):
        pass

    Handler.witness = witness
    Handler.timeout = read_timeout
    Handler.deadline = deadline
    return Handler


class BoundedThreadingHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most `max_connections` connections (threads) at once; one more is answered
    503 with Retry-After and closed by the accepting thread, so stalled clients cannot exhaust the process."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], max_connections: int = MAX_CONNECTIONS
    ) -> None:
        super().__init__(address, handler)
        self.slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):  # the client left already
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
                    b"Connection: close\r\n\r\n"
                )
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


def serve(
    witness: Witness,
    host: str,
    port: int,
    *,
    max_connections: int = MAX_CONNECTIONS,
    read_timeout: float = READ_TIMEOUT_S,
    deadline: float = REQUEST_DEADLINE_S,
) -> None:
    server = BoundedThreadingHTTPServer((host, port), _handler(witness, read_timeout, deadline), max_connections)
    print(f"witness {witness.key.name} ({witness.key.public.vkey}) on http://{host}:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.action == "keygen":
        return _keygen(parser, args)
    return _serve(parser, args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchreg witness", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    keygen = sub.add_parser("keygen", help="create a witness key file (mode 0600) and print its verifier key")
    keygen.add_argument("--name", required=True, help="the witness's name, e.g. witness.example.org/governance")
    keygen.add_argument("--out", required=True, type=Path, help="the key file to create (never overwritten)")
    run = sub.add_parser("serve", help="serve the tlog-witness protocol")
    run.add_argument(
        "--key",
        type=Path,
        default=os.environ.get("BENCHREG_WITNESS_KEY"),
        help="the witness key file (mode 0600; env BENCHREG_WITNESS_KEY)",
    )
    run.add_argument(
        "--log-key",
        action="append",
        default=[],
        metavar="VKEY",
        required=True,
        help="a log's verifier key (its name is the log's origin); repeatable",
    )
    run.add_argument("--state", type=Path, required=True, help="the witness's state file (JSON)")
    run.add_argument("--listen", default="127.0.0.1:8130", help="HOST:PORT (port 0: any free port)")
    run.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help=f"connections served at once; more are answered 503 (default {MAX_CONNECTIONS})",
    )
    run.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT_S,
        help=f"seconds one read of a request may wait (default {READ_TIMEOUT_S:g})",
    )
    run.add_argument(
        "--request-deadline",
        type=float,
        default=REQUEST_DEADLINE_S,
        help=f"seconds a whole request may take to arrive (default {REQUEST_DEADLINE_S:g})",
    )
    return parser


def _keygen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    text = cosigner_key(args.name, Ed25519PrivateKey.generate())
    try:
        write_private_key_file(args.out, text)
    except FileExistsError:
        parser.error(f"{args.out} exists; a witness key is never overwritten")
    print(parse_cosigner_key(text).public.vkey)
    return 0


def _load_witness(args: argparse.Namespace) -> Witness | None:
    """The witness from its key file and the logs' keys; None (said on stderr) when they cannot be read."""
    try:
        key = parse_cosigner_key(read_private_key_file(Path(args.key)))
        return Witness(key, args.log_key, args.state)
    except (KeyFileError, NoteError) as exc:
        print(f"benchreg witness: {exc}", file=sys.stderr)
        return None


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.key is None:
        parser.error("no key: pass --key FILE or set BENCHREG_WITNESS_KEY")
    witness = _load_witness(args)
    if witness is None:
        return 2
    # `not x > 0` refuses NaN too, which every comparison answers False
    if args.max_connections < 1 or not args.read_timeout > 0 or not args.request_deadline > 0:
        parser.error("--max-connections, --read-timeout and --request-deadline must be positive")
    if math.isinf(args.read_timeout) or math.isinf(args.request_deadline):
        parser.error("--read-timeout and --request-deadline must be finite: a request that never ends holds a slot")
    host, _, port = args.listen.rpartition(":")
    serve(
        witness,
        host or "127.0.0.1",
        int(port),
        max_connections=args.max_connections,
        read_timeout=args.read_timeout,
        deadline=args.request_deadline,
    )
    return 0


__all__ = ["BoundedThreadingHTTPServer", "KeyFileError", "Witness", "main", "read_private_key_file", "serve"]
