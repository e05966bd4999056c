"""The audit log in the C2SP tlog-tiles layout (https://c2sp.org/tlog-tiles): hash tiles and entry bundles.

A hash tile at level L, index N lists the W <= 256 consecutive hashes of tree level 8*L starting at N*256: each
is the root of a complete subtree of 256**L leaves. An entry bundle N lists entries N*256 .. N*256+W-1, each as a
big-endian uint16 length and the entry's bytes. A full tile (W = 256) never changes once the log has it; a partial
one (`.p/W`) is the same prefix of it at any later size.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict

from django.db import connection

from registry.exceptions import NotFound, RegistryError
from registry.models import AuditEntry
from registry.selectors.audit import OutOfRange, database_key, shared_tree_at

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
MAX_LEVEL = 63


class RestrictedEntries(RegistryError):
    """The bundle holds format-1 entries (before migration 0011), whose texts name users: read scope only."""

    status = 403
    code = "restricted-entries"


def _check(level: int, width: int) -> None:
    if not 0 <= level <= MAX_LEVEL:
        raise NotFound(f"no tile level {level}: levels are 0..{MAX_LEVEL}")
    if not 1 <= width <= TILE_WIDTH:
        raise NotFound(f"no tile of width {width}: a partial tile has 1..{TILE_WIDTH - 1} entries")


FULL_TILES_CACHED = 4096  # about 32 MiB of full tiles per process


class _FullTiles:
    """Full tiles never change, so each process keeps the latest ones it served. A hit costs one indexed lookup:
    the stored leaf hash of the tile's last leaf must still be the one seen when it was cached (the same check the
    shared tree makes, which catches a database that was emptied and refilled)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tiles: OrderedDict[tuple[object, int, int], tuple[str, bytes]] = OrderedDict()

    def get(self, key: tuple[object, int, int], last_leaf: int) -> bytes | None:
        with self.lock:
            hit = self.tiles.get(key)
            if hit is not None:
                self.tiles.move_to_end(key)
        if hit is None:
            return None
        with connection.cursor() as cursor:  # raw: this is the whole cost of a hit
            cursor.execute("SELECT leaf_hash FROM registry_auditentry WHERE seq = %s", [last_leaf])
            row = cursor.fetchone()
        return hit[1] if row is not None and row[0] == hit[0] else None

    def put(self, key: tuple[object, int, int], last_leaf_hash: str, tile: bytes) -> None:
        with self.lock:
            self.tiles[key] = (last_leaf_hash, tile)
            self.tiles.move_to_end(key)
            while len(self.tiles) > FULL_TILES_CACHED:
                self.tiles.popitem(last=False)


_full_tiles = _FullTiles()


def hash_tile(*, level: int, index: int, width: int = TILE_WIDTH) -> bytes:
    """The tile's hashes, 32 bytes each. Raises NotFound if the log does not (yet) have all W of them."""
    _check(level, width)
    tree_level = TILE_HEIGHT * level
    first = index * TILE_WIDTH
    leaves = (first + width) << tree_level
    full = width == TILE_WIDTH and not connection.in_atomic_block  # committed rows only, as the shared tree
    key = (database_key(), level, index)
    if full and (cached := _full_tiles.get(key, leaves - 1)) is not None:
        return cached
    try:
        with shared_tree_at(leaves, "tile") as tree:
            tile = b"".join(tree.node(tree_level, i) for i in range(first, first + width))
            last_leaf = tree.leaf(leaves - 1).hex()
    except OutOfRange:
        raise NotFound(f"the log has no tile {level}/{index} of width {width} yet") from None
    if full:
        _full_tiles.put(key, last_leaf, tile)
    return tile


def entry_bundle(*, index: int, width: int = TILE_WIDTH, restricted_allowed: bool = False) -> bytes:
    """Entries index*256 .. +width-1, each length-prefixed (uint16, big-endian). Raises NotFound if the log does not
    have them all, RestrictedEntries if one is a format-1 entry and the caller may not read those."""
    _check(0, width)
    first = index * TILE_WIDTH
    rows = list(
        AuditEntry.objects.filter(seq__gte=first, seq__lt=first + width)
        .order_by("seq")
        .values_list("seq", "entry", "format")
    )
    if len(rows) != width or rows[-1][0] != first + width - 1:
        raise NotFound(f"the log has no entry bundle {index} of width {width} yet")
    if not restricted_allowed and any(fmt == 1 for _, _, fmt in rows):
        raise RestrictedEntries(
            "this bundle holds entries from before entry format 2, whose texts are "
            "restricted to the read scope; its hash tile is public"
        )
    out = bytearray()
    for _, text, _ in rows:
        raw = text.encode()
        out += struct.pack(">H", len(raw)) + raw
    return bytes(out)


def parse_tile_index(path: str) -> int:
    """`x001/x234/067` -> 1234067. Raises NotFound for anything else (leading x on all but the last element)."""
    parts = path.split("/")
    if (
        any(len(p) != 4 or p[0] != "x" or not p[1:].isdigit() for p in parts[:-1])
        or len(parts[-1]) != 3
        or not parts[-1].isdigit()
    ):
        raise NotFound(f"{path!r} is not a tile index (3-digit elements, all but the last prefixed with x)")
    return int("".join(p.lstrip("x") for p in parts))
