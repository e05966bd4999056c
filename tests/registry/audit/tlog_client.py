"""A C2SP tlog-tiles client written from the specifications alone (https://c2sp.org/tlog-tiles,
https://c2sp.org/tlog-checkpoint, https://c2sp.org/signed-note, RFC 6962), independent of the server's code: it
imports nothing from protocol/ or registry/, so a mistake shared by the server's Merkle code and its tests cannot
hide here.

`get(path) -> (status, headers, body)` fetches a path under the log's prefix.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

Get = Callable[[str], tuple[int, dict[str, str], bytes]]
WIDTH = 256


class TlogError(Exception):
    pass


@dataclass(frozen=True)
class Head:
    origin: str
    size: int
    root: bytes


def open_checkpoint(note: bytes, vkey: str) -> Head:
    """Verify the log's Ed25519 signature on a signed note (signed-note) and parse the checkpoint body."""
    name, key_id_hex, key_b64 = vkey.split("+", 2)  # base64 may hold "+"
    raw = base64.b64decode(key_b64)
    if raw[0] != 0x01:
        raise TlogError("not an Ed25519 verifier key")
    public = Ed25519PublicKey.from_public_bytes(raw[1:])
    key_id = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if key_id.hex() != key_id_hex:
        raise TlogError("key ID mismatch")
    text = note.decode()
    body, _, signatures = text.rpartition("\n\n")
    body += "\n"
    for line in signatures.rstrip("\n").split("\n"):
        sig_name, blob_b64 = line.removeprefix("\u2014 ").split(" ")
        blob = base64.b64decode(blob_b64)
        if sig_name == name and blob[:4] == key_id:
            public.verify(blob[4:], body.encode())  # raises InvalidSignature
            origin, size, root = body.split("\n")[:3]
            return Head(origin, int(size), base64.b64decode(root))
    raise TlogError("no signature by the log's key")


def tile_index(n: int) -> str:
    """Index n as 3-digit path elements, all but the last prefixed with x: 1234067 -> x001/x234/067."""
    digits = f"{n:d}"
    digits = "0" * (-len(digits) % 3) + digits
    parts = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    return "/".join([*("x" + p for p in parts[:-1]), parts[-1]])


def tile_path(level: int, n: int, width: int) -> str:
    return f"tile/{level}/{tile_index(n)}" + ("" if width == WIDTH else f".p/{width}")


def entries_path(n: int, width: int) -> str:
    return f"tile/entries/{tile_index(n)}" + ("" if width == WIDTH else f".p/{width}")


def _leaf(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def mth(hashes: list[bytes]) -> bytes:
    """RFC 6962 Merkle Tree Hash over leaf hashes."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return _node(mth(hashes[:k]), mth(hashes[k:]))


def _fetch(get: Get, path: str) -> tuple[dict[str, str], bytes]:
    status, headers, body = get(path)
    if status != 200:
        raise TlogError(f"{path}: HTTP {status}")
    return headers, body


def _split(body: bytes, path: str) -> list[bytes]:
    if len(body) % 32:
        raise TlogError(f"{path}: {len(body)} bytes is not a whole number of hashes")
    return [body[i : i + 32] for i in range(0, len(body), 32)]


def verify_log(get: Get, vkey: str) -> tuple[Head, list[bytes], dict[str, str]]:
    """Fetch the checkpoint, every level-0 tile and entry bundle and the level-1 tiles; check that they agree and
    that the tree they describe has the signed root. Returns (head, entries, Cache-Control of each path)."""
    _, note = _fetch(get, "checkpoint")
    head = open_checkpoint(note, vkey)
    cache: dict[str, str] = {}
    leaves: list[bytes] = []
    entries: list[bytes] = []
    for n in range((head.size + WIDTH - 1) // WIDTH):
        width = min(WIDTH, head.size - n * WIDTH)
        path = tile_path(0, n, width)
        headers, body = _fetch(get, path)
        cache[path] = headers.get("Cache-Control", "")
        tile = _split(body, path)
        if len(tile) != width:
            raise TlogError(f"{path}: {len(tile)} hashes, expected {width}")
        bundle_path = entries_path(n, width)
        headers, bundle = _fetch(get, bundle_path)
        cache[bundle_path] = headers.get("Cache-Control", "")
        offset, texts = 0, []
        while offset < len(bundle):
            (length,) = struct.unpack(">H", bundle[offset : offset + 2])
            texts.append(bundle[offset + 2 : offset + 2 + length])
            offset += 2 + length
        if [_leaf(t) for t in texts] != tile:
            raise TlogError(f"{bundle_path}: the entries do not hash to the leaves of {path}")
        leaves += tile
        entries += texts
    # Level 1: each hash is the root of 256 consecutive leaves.
    full = head.size // WIDTH
    for n in range((full + WIDTH - 1) // WIDTH):
        width = min(WIDTH, full - n * WIDTH)
        path = tile_path(1, n, width)
        headers, body = _fetch(get, path)
        cache[path] = headers.get("Cache-Control", "")
        for i, h in enumerate(_split(body, path)):
            start = (n * WIDTH + i) * WIDTH
            if h != mth(leaves[start : start + WIDTH]):
                raise TlogError(f"{path}: hash {i} is not the root of leaves {start}..{start + WIDTH - 1}")
    if mth(leaves) != head.root:
        raise TlogError("the tiles do not add up to the signed root")
    return head, entries, cache
