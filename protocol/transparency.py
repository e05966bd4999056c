"""RFC 6962 / RFC 9162 Merkle tree hashing, proofs and proof verification for the audit log.

The log is a sequence of entries (bytes). Its tree head is the Merkle Tree Hash (MTH) of RFC 9162 §2.1.1:

    leaf_hash(d)      = SHA-256(0x00 || d)
    node_hash(l, r)   = SHA-256(0x01 || l || r)
    MTH([])           = SHA-256("")
    MTH([d])          = leaf_hash(d)
    MTH(D[0:n])       = node_hash(MTH(D[0:k]), MTH(D[k:n]))   k = the largest power of two < n

Everything here works on *leaf hashes* (32 bytes each), never on entries, so that a verifier holding only hashes
(a third party with a proof and a signed checkpoint) can check inclusion and consistency.

Two ways in:
  * `MerkleTree` holds the hashes of every complete (power-of-two) subtree, so after an O(n) build the root of
    any earlier size and any proof cost O(log n) hashes; `append` keeps it current as the log grows.
  * `root_of_leaves` streams leaf hashes in O(log n) memory, for re-deriving a whole log's root.

Provers raise ValueError for sizes or indices that do not exist. Verifiers never raise on bad data: they return
True only when the proof proves the claim, and False for anything else (wrong lengths, impossible sizes, ...),
because their inputs come from whoever hands over the proof.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "MerkleTree",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root",
    "root_of_leaves",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()
_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"
# SHA-256 states that have absorbed a prefix, copied per hash: with OpenSSL 3 a copy costs less than a new object.
_NODE_STATE = hashlib.sha256(_NODE_PREFIX)


def leaf_hash(entry: bytes) -> bytes:
    """Hash of one log entry: SHA-256(0x00 || entry). The 0x00 prefix keeps leaves and nodes from colliding."""
    return hashlib.sha256(_LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Hash of an interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly less than n (n >= 2): where RFC 9162 splits a tree of n leaves."""
    return 1 << ((n - 1).bit_length() - 1)


def _check_hash(value: bytes, what: str) -> None:
    if len(value) != HASH_SIZE:
        raise ValueError(f"{what} must be {HASH_SIZE} bytes, got {len(value)}")


# ---------------------------------------------------------------------------------------------------------------
# Streaming root


def root_of_leaves(leaf_hashes: Iterable[bytes]) -> bytes:
    """MTH of the leaf hashes in order, reading them once and keeping O(log n) hashes in memory.

    Raises ValueError if a leaf hash is not 32 bytes. An empty iterable gives EMPTY_ROOT.
    """
    # stack[i] is the root of a complete subtree; their sizes are the set bits of `count`, largest first.
    stack: list[bytes] = []
    for count, leaf in enumerate(leaf_hashes, start=1):
        _check_hash(leaf, "leaf hash")
        node = leaf
        # Each trailing zero bit of the new count closes one complete subtree pair.
        merges = (count & -count).bit_length() - 1
        for _ in range(merges):
            node = node_hash(stack.pop(), node)
        stack.append(node)
    if not stack:
        return EMPTY_ROOT
    return _fold_right(stack)


def _fold_right(peaks: Sequence[bytes]) -> bytes:
    """Combine complete-subtree roots (largest first) along the right border, as the MTH recursion does."""
    result = peaks[-1]
    for peak in reversed(peaks[:-1]):
        result = node_hash(peak, result)
    return result


# ---------------------------------------------------------------------------------------------------------------
# The prover


class MerkleTree:
    """An append-only Merkle tree over leaf hashes that caches every complete subtree.

    Level k holds the roots of the complete subtrees of 2**k leaves, left to right, packed 32 bytes each in one
    bytearray (about 64 bytes of memory per leaf in all, instead of Python objects per node). Building from n
    leaves costs n - 1 hashes; `root(size)`, `inclusion_proof` and `consistency_proof` for any size up to the
    current one cost O(log n) hashes, because every subtree they need is complete or on the right border.
    """

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        """Build from leaf hashes (32 bytes each, in log order). Raises ValueError on a hash of another length."""
        self._levels: list[bytearray] = [bytearray()]
        self.extend(leaf_hashes if isinstance(leaf_hashes, Sequence) else list(leaf_hashes))

    @property
    def size(self) -> int:
        """Number of leaves."""
        return len(self._levels[0]) // HASH_SIZE

    def __len__(self) -> int:
        return self.size

    def append(self, leaf: bytes) -> int:
        """Append one leaf hash and return its index. Costs at most log2(n) node hashes."""
        _check_hash(leaf, "leaf hash")
        index = self.size
        self._levels[0] += leaf
        level, node, position = 0, leaf, index
        # A right child completes its parent: hash up while this node is the right one of a pair.
        while position & 1:
            left = self._node(level, position - 1)
            node = node_hash(left, node)
            level, position = level + 1, position >> 1
            if level == len(self._levels):
                self._levels.append(bytearray())
            self._levels[level] += node
        return index

    def extend(self, leaf_hashes: Sequence[bytes]) -> None:
        """Append leaf hashes in log order: the tree `append` would make of them one by one, hashed a level at a
        time (n leaves cost about n node hashes). Raises ValueError, appending nothing, on a hash of another
        length."""
        if set(map(len, leaf_hashes)) - {HASH_SIZE}:
            raise ValueError(f"every leaf hash must be {HASH_SIZE} bytes")
        self._levels[0] += b"".join(leaf_hashes)
        self._hash_up(0)

    def join(self, other: MerkleTree) -> None:
        """Append the leaves of `other`, a tree of the leaves that follow this tree's: the tree `extend` would make
        of them, reusing `other`'s nodes. Where this tree's size is a multiple of 2**k, `other`'s complete
        subtrees of 2**k leaves are complete subtrees of the joined tree too, so only the levels above the highest
        such k are hashed: a log checked in ranges, each range its own tree, becomes one tree for a few hashes
        when the ranges start at multiples of a large power of two (registry/audit/verify/entries.py)."""
        levels, theirs, size = self._levels, other._levels, self.size
        top = 0  # the highest level at which `other`'s nodes line up with this tree's
        while top + 1 < len(theirs) and size % (1 << (top + 1)) == 0:
            top += 1
        for level in range(top + 1):
            if level == len(levels):
                levels.append(bytearray())
            levels[level] += theirs[level]
        self._hash_up(top)

    def _hash_up(self, level: int) -> None:
        """Hash the pairs completed at `level` and above. Below `level` every complete pair has its parent."""
        levels = self._levels
        # Level k + 1 holds the parents of level k's complete pairs: hash the pairs the new nodes completed.
        while len(levels[level]) >= 2 * HASH_SIZE:
            if level + 1 == len(levels):
                levels.append(bytearray())
            paired = 2 * len(levels[level + 1])
            levels[level + 1] += _parent_level(levels[level][paired:])
            level += 1

    def leaf(self, index: int) -> bytes:
        """The leaf hash at `index`. Raises ValueError if there is no such leaf."""
        if not 0 <= index < self.size:
            raise ValueError(f"leaf index {index} out of range for a tree of {self.size} leaves")
        return self._node(0, index)

    def node(self, level: int, index: int) -> bytes:
        """The root of the complete subtree of 2**level leaves starting at leaf index * 2**level (what a C2SP
        tlog-tiles hash tile lists). Raises ValueError unless that subtree is complete in this tree."""
        if level < 0 or index < 0 or (index + 1) << level > self.size:
            raise ValueError(f"no complete subtree at level {level}, index {index} in a tree of {self.size} leaves")
        return self._node(level, index)

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first `size` leaves (default: all). Raises ValueError if size < 0 or size > self.size."""
        size = self._check_size(size)
        if size == 0:
            return EMPTY_ROOT
        return self._range_hash(0, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """Audit path (RFC 9162 §2.1.3.1) for leaf `index` in the tree of the first `size` leaves, bottom-up.

        Raises ValueError unless 0 <= index < size <= self.size.
        """
        size = self._check_size(size)
        if not 0 <= index < size:
            raise ValueError(f"leaf index {index} out of range for a tree of {size} leaves")
        path: list[bytes] = []
        start, end = 0, size
        # Walk down from the root; each step records the sibling subtree, so the path comes out top-down.
        while end - start > 1:
            k = _split(end - start)
            if index < start + k:
                path.append(self._range_hash(start + k, end))
                end = start + k
            else:
                path.append(self._range_hash(start, start + k))
                start += k
        path.reverse()
        return path

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """Consistency proof (RFC 9162 §2.1.4.1) that the tree of `old_size` leaves is a prefix of `new_size`.

        Empty when old_size is 0 or equals new_size (nothing to prove). Raises ValueError unless
        0 <= old_size <= new_size <= self.size.
        """
        new_size = self._check_size(new_size)
        if not 0 <= old_size <= new_size:
            raise ValueError(f"old size {old_size} must be between 0 and the new size {new_size}")
        if old_size in (0, new_size):
            return []
        path = self._subproof(old_size, new_size)
        path.reverse()
        return path

    # -- internals ---------------------------------------------------------------------------------------------

    def _subproof(self, old_size: int, new_size: int) -> list[bytes]:
        """The consistency path top-down, as SUBPROOF(m, D[0:new_size], true) finds it (the caller reverses it)."""
        path: list[bytes] = []
        start, end, old_is_whole_subtree = 0, new_size, True
        # SUBPROOF(m, D[start:end], b), unrolled: each step records one sibling, top-down.
        while old_size != end:
            k = _split(end - start)
            if old_size <= start + k:
                path.append(self._range_hash(start + k, end))
                end = start + k
            else:
                path.append(self._range_hash(start, start + k))
                start += k
                old_is_whole_subtree = False
        if not old_is_whole_subtree:
            # The old tree's last subtree is not a node the verifier already knows (its old root): send it.
            path.append(self._range_hash(start, end))
        return path

    def _check_size(self, size: int | None) -> int:
        if size is None:
            return self.size
        if not 0 <= size <= self.size:
            raise ValueError(f"tree size {size} out of range: the tree has {self.size} leaves")
        return size

    def _node(self, level: int, index: int) -> bytes:
        offset = index * HASH_SIZE
        return bytes(self._levels[level][offset : offset + HASH_SIZE])

    def _range_hash(self, start: int, end: int) -> bytes:
        """MTH of leaves [start, end); start is a multiple of the power of two above end - start, as in RFC splits.

        Such a range is a run of complete subtrees (one per set bit of its length, largest first), each of which
        is cached, so this costs at most log2(n) hashes.
        """
        peaks: list[bytes] = []
        position, remaining = start, end - start
        while remaining:
            level = remaining.bit_length() - 1
            peaks.append(self._node(level, position >> level))
            position += 1 << level
            remaining -= 1 << level
        return _fold_right(peaks)


def _parent_level(level: bytes | bytearray) -> bytearray:
    """Hashes of the complete pairs of a level (a trailing odd node has no parent yet)."""
    view = memoryview(level)
    pair = 2 * HASH_SIZE
    usable = len(level) - len(level) % pair
    parents: list[bytes] = []
    append, copy = parents.append, _NODE_STATE.copy
    for i in range(0, usable, pair):  # building a tree of n leaves hashes n - 1 nodes here
        node = copy()
        node.update(view[i : i + pair])
        append(node.digest())
    return bytearray(b"".join(parents))


# ---------------------------------------------------------------------------------------------------------------
# One-shot helpers over a list of leaf hashes


def _tree_of(leaf_hashes: Sequence[bytes], size: int) -> MerkleTree:
    if not 0 <= size <= len(leaf_hashes):
        raise ValueError(f"tree size {size} out of range: {len(leaf_hashes)} leaf hashes given")
    return MerkleTree(leaf_hashes[:size])


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH of all the leaf hashes (EMPTY_ROOT for none). O(n) hashes, O(log n) extra memory."""
    return root_of_leaves(leaf_hashes)


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int, size: int) -> list[bytes]:
    """Audit path for leaf `index` in the tree of the first `size` leaf hashes. Builds a tree: O(size) hashes.

    For many proofs over one log, build a `MerkleTree` once. Raises ValueError unless
    0 <= index < size <= len(leaf_hashes).
    """
    return _tree_of(leaf_hashes, size).inclusion_proof(index)


def consistency_proof(leaf_hashes: Sequence[bytes], old_size: int, new_size: int) -> list[bytes]:
    """Consistency proof from the first `old_size` to the first `new_size` leaf hashes. O(new_size) hashes.

    Raises ValueError unless 0 <= old_size <= new_size <= len(leaf_hashes).
    """
    return _tree_of(leaf_hashes, new_size).consistency_proof(old_size)


# ---------------------------------------------------------------------------------------------------------------
# Verifiers: hashes only, no tree


def _is_hash(value: object) -> bool:
    return isinstance(value, bytes | bytearray) and len(value) == HASH_SIZE


def _all_hashes(proof: Sequence[bytes]) -> bool:
    return all(_is_hash(p) for p in proof)


def verify_inclusion(leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> bool:
    """True iff `proof` shows the leaf with hash `leaf_hash` at `index` in the tree of `size` leaves with `root`.

    The algorithm of RFC 9162 §2.1.3.2. Returns False (never raises) for malformed input, including
    index >= size, negative values and hashes that are not 32 bytes. The hashes alone do not pin `size` (a
    proof for size 3 may also pass as size 4 when the paths have the same shape): take size and root together
    from a verified checkpoint.
    """
    if not (_is_hash(leaf_hash) and _is_hash(root) and _all_hashes(proof)) or not 0 <= index < size:
        return False
    fn, sn = index, size - 1
    r = bytes(leaf_hash)
    for p in proof:
        if sn == 0:
            return False  # the proof is longer than the path to the root
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            # On the right border a node may have no right sibling: skip levels until it is a right child again.
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and hmac.compare_digest(r, root)


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> bool:
    """True iff `proof` shows the tree (old_size, old_root) is a prefix of the tree (new_size, new_root).

    The algorithm of RFC 9162 §2.1.4.2, plus the cases it leaves out: equal sizes need an empty proof and equal
    roots; old_size 0 needs an empty proof and old_root == EMPTY_ROOT (every tree extends the empty one).
    Returns False (never raises) for malformed input, including old_size > new_size and negative sizes.
    """
    if not (_is_hash(old_root) and _is_hash(new_root) and _all_hashes(proof)) or not 0 <= old_size <= new_size:
        return False
    if old_size == 0:
        return not proof and hmac.compare_digest(old_root, EMPTY_ROOT)
    if old_size == new_size:
        return not proof and hmac.compare_digest(old_root, new_root)
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        # The old tree is a complete subtree of the new one; its root is the proof's implied first element.
        path.insert(0, bytes(old_root))
    roots = _proved_roots(old_size, new_size, path)
    return roots is not None and hmac.compare_digest(roots[0], old_root) and hmac.compare_digest(roots[1], new_root)


def _proved_roots(old_size: int, new_size: int, path: Sequence[bytes]) -> tuple[bytes, bytes] | None:
    """The (old, new) roots a consistency path implies (RFC 9162 §2.1.4.2 steps), or None when it is malformed."""
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = bytes(path[0])
    for c in path[1:]:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return (fr, sr) if sn == 0 else None
