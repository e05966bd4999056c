"""RFC 6962 / 9162 Merkle tree: reference vectors, exhaustive and property round trips, and tampering."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.transparency import (
    EMPTY_ROOT,
    MerkleTree,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    root_of_leaves,
    verify_consistency,
    verify_inclusion,
)

VECTORS: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "rfc6962_merkle_vectors.json").read_text())
LEAVES = [leaf_hash(bytes.fromhex(entry)) for entry in VECTORS["leaves"]]
NODES = [[bytes.fromhex(h) for h in level] for level in VECTORS["node_hashes"]]
ROOTS = [bytes.fromhex(h) for h in VECTORS["roots"]]
EXHAUSTIVE_MAX = 130


def resolve(ref: str | dict[str, list[str]]) -> bytes:
    """A proof element of the vectors file: 'L.I' is a node of the reference tree, node_hash combines two."""
    if isinstance(ref, dict):
        left, right = ref["node_hash"]
        return node_hash(resolve(left), resolve(right))
    level, index = ref.split(".")
    return NODES[int(level)][int(index)]


def flip_bit(value: bytes, bit: int = 0) -> bytes:
    changed = bytearray(value)
    changed[bit // 8 % len(changed)] ^= 1 << (bit % 8)
    return bytes(changed)


def random_leaves(count: int, seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    return [leaf_hash(rng.randbytes(rng.randrange(0, 64))) for _ in range(count)]


# -- a literal transcription of the RFC 9162 §2.1 recursions, to check the fast prover against -------------------


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


Reference = tuple[Callable[[int, int], bytes], Callable[..., list[bytes]], Callable[..., list[bytes]]]


def make_reference(leaves: list[bytes]) -> Reference:
    @cache
    def mth(start: int, end: int) -> bytes:
        if end - start == 0:
            return hashlib.sha256(b"").digest()
        if end - start == 1:
            return leaves[start]
        k = _k(end - start)
        return node_hash(mth(start, start + k), mth(start + k, end))

    def path(m: int, start: int, end: int) -> list[bytes]:
        n = end - start
        if n == 1:
            return []
        k = _k(n)
        if m < k:
            return [*path(m, start, start + k), mth(start + k, end)]
        return [*path(m - k, start + k, end), mth(start, start + k)]

    def subproof(m: int, start: int, end: int, b: bool) -> list[bytes]:
        n = end - start
        if m == n:
            return [] if b else [mth(start, end)]
        k = _k(n)
        if m <= k:
            return [*subproof(m, start, start + k, b), mth(start + k, end)]
        return [*subproof(m - k, start + k, end, False), mth(start, start + k)]

    return mth, path, subproof


# -- reference vectors ------------------------------------------------------------------------------------------


def test_leaf_hashes_match_the_reference_leaf_level() -> None:
    assert NODES[0] == LEAVES


def test_node_hashes_match_every_reference_level() -> None:
    for level in range(1, len(NODES)):
        below = NODES[level - 1]
        assert [node_hash(below[2 * i], below[2 * i + 1]) for i in range(len(NODES[level]))] == NODES[level]


@pytest.mark.parametrize("size", range(len(ROOTS)))
def test_roots_match_the_reference_for_every_size(size: int) -> None:
    expected = ROOTS[size]
    assert root(LEAVES[:size]) == expected
    assert root_of_leaves(iter(LEAVES[:size])) == expected
    assert MerkleTree(LEAVES[:size]).root() == expected
    assert MerkleTree(LEAVES).root(size) == expected


def test_the_empty_tree_root_is_the_hash_of_nothing() -> None:
    assert EMPTY_ROOT == hashlib.sha256(b"").digest() == ROOTS[0] == MerkleTree().root()


def test_inclusion_proofs_match_the_reference_hex_vectors() -> None:
    tree = MerkleTree(LEAVES)
    for vector in VECTORS["inclusion_proofs"]:
        index, size, expected = vector["index"], vector["size"], [bytes.fromhex(h) for h in vector["proof"]]
        assert tree.inclusion_proof(index, size) == expected
        assert inclusion_proof(LEAVES, index, size) == expected
        assert verify_inclusion(LEAVES[index], index, size, expected, ROOTS[size])


def test_inclusion_proofs_match_the_reference_node_layout() -> None:
    tree = MerkleTree(LEAVES)
    for vector in VECTORS["inclusion_nodes"]:
        expected = [resolve(ref) for ref in vector["proof"]]
        assert tree.inclusion_proof(vector["index"], vector["size"]) == expected, vector


def test_consistency_proofs_match_the_reference_hex_vectors() -> None:
    tree = MerkleTree(LEAVES)
    for vector in VECTORS["consistency_proofs"]:
        old, new, expected = vector["old_size"], vector["new_size"], [bytes.fromhex(h) for h in vector["proof"]]
        assert tree.consistency_proof(old, new) == expected
        assert consistency_proof(LEAVES, old, new) == expected
        assert verify_consistency(old, new, ROOTS[old], ROOTS[new], expected)


def test_consistency_proofs_match_the_reference_node_layout() -> None:
    tree = MerkleTree(LEAVES)
    for vector in VECTORS["consistency_nodes"]:
        expected = [resolve(ref) for ref in vector["proof"]]
        assert tree.consistency_proof(vector["old_size"], vector["new_size"]) == expected, vector


def test_it_refuses_to_prove_inclusion_of_leaves_that_do_not_exist() -> None:
    tree = MerkleTree(LEAVES[:7])
    for vector in VECTORS["inclusion_errors"]:
        with pytest.raises(ValueError, match="out of range"):
            tree.inclusion_proof(vector["index"], min(vector["size"], 7))
    with pytest.raises(ValueError, match="out of range"):
        tree.inclusion_proof(0, 8)  # a size beyond the tree
    with pytest.raises(ValueError, match="out of range"):
        inclusion_proof(LEAVES, -1, 8)


def test_it_refuses_consistency_proofs_between_impossible_sizes() -> None:
    tree = MerkleTree(LEAVES)
    for vector in VECTORS["consistency_errors"]:
        with pytest.raises(ValueError):
            tree.consistency_proof(vector["old_size"], vector["new_size"])
    with pytest.raises(ValueError, match="out of range"):
        consistency_proof(LEAVES, 1, 9)
    with pytest.raises(ValueError, match="out of range"):
        tree.root(9)


def test_it_refuses_leaf_hashes_that_are_not_32_bytes() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        MerkleTree([*LEAVES, b"short"])
    with pytest.raises(ValueError, match="32 bytes"):
        root_of_leaves([LEAVES[0], b"x" * 33])
    with pytest.raises(ValueError, match="32 bytes"):
        MerkleTree(LEAVES).append(b"")


# -- the Go reference suite's tampering probes (transparency-dev/merkle proof/verify_test.go) --------------------

SOME_HASH = bytes.fromhex("abacaba000000000000000000000000000000000000000000060061e00123456")


InclusionProbe = tuple[int, int, list[bytes], bytes, bytes]
ConsistencyProbe = tuple[int, int, bytes, bytes, list[bytes]]


def inclusion_probes(index: int, size: int, proof: list[bytes], root_: bytes, leaf: bytes) -> Iterator[InclusionProbe]:
    yield index - 1, size, proof, root_, leaf
    yield index + 1, size, proof, root_, leaf
    yield index ^ 2, size, proof, root_, leaf
    yield index, size * 2, proof, root_, leaf
    yield index, size // 2, proof, root_, leaf
    yield index, size, proof, root_, b"WrongLeaf"
    yield index, size, proof, EMPTY_ROOT, leaf
    yield index, size, proof, SOME_HASH, leaf
    yield index, size, [*proof, b""], root_, leaf
    yield index, size, [*proof, root_], root_, leaf
    yield index, size, [b"", *proof], root_, leaf
    yield index, size, [root_, *proof], root_, leaf
    for i in range(len(proof)):
        yield index, size, [*proof[:i], flip_bit(proof[i], 3), *proof[i + 1 :]], root_, leaf
    if proof:
        yield index, size, proof[:-1], root_, leaf
    if len(proof) > 1:
        yield index, size, [proof[0], SOME_HASH, *proof[1:]], root_, leaf


def consistency_probes(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> Iterator[ConsistencyProbe]:
    yield old - 1, new, old_root, new_root, proof
    yield old + 1, new, old_root, new_root, proof
    yield old ^ 2, new, old_root, new_root, proof
    yield old, new * 2, old_root, new_root, proof
    yield old, new // 2, old_root, new_root, proof
    yield old, new, b"WrongRoot", new_root, proof
    yield old, new, old_root, b"WrongRoot", proof
    yield old, new, new_root, old_root, proof
    yield old, new, old_root, new_root, []
    for extra in (b"", old_root, new_root):
        yield old, new, old_root, new_root, [*proof, extra]
    for extra in (b"", old_root, new_root, proof[0]):
        yield old, new, old_root, new_root, [extra, *proof]
    yield old, new, old_root, new_root, proof[:-1]
    for i in range(len(proof)):
        yield old, new, old_root, new_root, [*proof[:i], flip_bit(proof[i], 4), *proof[i + 1 :]]


def test_reference_inclusion_proofs_fail_every_tampering_probe() -> None:
    for vector in VECTORS["inclusion_proofs"]:
        index, size, proof = vector["index"], vector["size"], [bytes.fromhex(h) for h in vector["proof"]]
        for probe in inclusion_probes(index, size, proof, ROOTS[size], LEAVES[index]):
            i, s, p, r, leaf = probe
            assert not verify_inclusion(leaf, i, s, p, r), (vector, i, s)


def test_reference_consistency_proofs_fail_every_tampering_probe() -> None:
    for vector in VECTORS["consistency_proofs"]:
        old, new, proof = vector["old_size"], vector["new_size"], [bytes.fromhex(h) for h in vector["proof"]]
        if not proof:
            continue
        for probe in consistency_probes(old, new, ROOTS[old], ROOTS[new], proof):
            o, n, old_root, new_root, p = probe
            assert not verify_consistency(o, n, old_root, new_root, p), (vector, o, n)


def test_trivial_consistency_needs_an_empty_proof_and_matching_roots() -> None:
    assert verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
    assert verify_consistency(0, 5, EMPTY_ROOT, ROOTS[5], [])
    assert verify_consistency(3, 3, ROOTS[3], ROOTS[3], [])
    assert not verify_consistency(0, 5, ROOTS[1], ROOTS[5], [])  # a size-0 tree has exactly one root
    assert not verify_consistency(3, 3, ROOTS[3], ROOTS[4], [])
    assert not verify_consistency(3, 3, ROOTS[3], ROOTS[3], [EMPTY_ROOT])
    assert not verify_consistency(0, 1, EMPTY_ROOT, ROOTS[1], [EMPTY_ROOT])
    assert not verify_consistency(2, 1, ROOTS[2], ROOTS[1], [])
    assert not verify_consistency(1, 2, ROOTS[1], ROOTS[2], [])


def test_verifiers_return_false_instead_of_raising_on_nonsense() -> None:
    assert not verify_inclusion(LEAVES[0], 0, 0, [], EMPTY_ROOT)
    assert not verify_inclusion(LEAVES[0], -1, 1, [], LEAVES[0])
    assert not verify_inclusion(LEAVES[0], 2, 1, [], LEAVES[0])
    assert not verify_inclusion(b"", 0, 1, [], b"")
    assert not verify_consistency(-1, 1, EMPTY_ROOT, ROOTS[1], [])
    assert not verify_consistency(1, 8, ROOTS[1], ROOTS[8], [b"x"])


# -- exhaustive round trips for every small tree ------------------------------------------------------------------

SMALL = random_leaves(EXHAUSTIVE_MAX, seed=6962)
SMALL_TREE = MerkleTree(SMALL)
SMALL_MTH, SMALL_PATH, SMALL_SUBPROOF = make_reference(SMALL)


def test_every_root_up_to_130_leaves_matches_the_rfc_recursion() -> None:
    grown = MerkleTree()
    for size in range(EXHAUSTIVE_MAX + 1):
        expected = SMALL_MTH(0, size)
        assert SMALL_TREE.root(size) == expected
        assert grown.root() == expected
        assert root_of_leaves(SMALL[:size]) == expected
        if size < EXHAUSTIVE_MAX:
            assert grown.append(SMALL[size]) == size


def test_every_inclusion_proof_up_to_130_leaves_matches_the_rfc_and_verifies() -> None:
    for size in range(1, EXHAUSTIVE_MAX + 1):
        tree_root = SMALL_MTH(0, size)
        for index in range(size):
            proof = SMALL_TREE.inclusion_proof(index, size)
            assert proof == SMALL_PATH(index, 0, size)
            assert verify_inclusion(SMALL[index], index, size, proof, tree_root)
            assert not verify_inclusion(SMALL[index], index, size * 2, proof, tree_root)


def test_every_consistency_proof_up_to_130_leaves_matches_the_rfc_and_verifies() -> None:
    for new in range(1, EXHAUSTIVE_MAX + 1):
        new_root = SMALL_MTH(0, new)
        for old in range(1, new + 1):
            proof = SMALL_TREE.consistency_proof(old, new)
            assert proof == SMALL_SUBPROOF(old, 0, new, True)
            assert verify_consistency(old, new, SMALL_MTH(0, old), new_root, proof)
            if old < new:
                assert not verify_consistency(old - 1 or old + 1, new, SMALL_MTH(0, old), new_root, proof)


def test_a_flipped_bit_anywhere_fails_verification_for_every_small_tree() -> None:
    rng = random.Random(1)
    for size in range(1, EXHAUSTIVE_MAX + 1):
        index = rng.randrange(size)
        proof, tree_root, leaf = SMALL_TREE.inclusion_proof(index, size), SMALL_MTH(0, size), SMALL[index]
        bit = rng.randrange(256)
        assert not verify_inclusion(flip_bit(leaf, bit), index, size, proof, tree_root)
        assert not verify_inclusion(leaf, index, size, proof, flip_bit(tree_root, bit))
        for i in range(len(proof)):
            assert not verify_inclusion(
                leaf, index, size, [*proof[:i], flip_bit(proof[i], bit), *proof[i + 1 :]], tree_root
            )
        old = rng.randrange(1, size) if size > 1 else 1
        if old == size:
            continue
        proof, old_root = SMALL_TREE.consistency_proof(old, size), SMALL_MTH(0, old)
        assert not verify_consistency(old, size, flip_bit(old_root, bit), tree_root, proof)
        assert not verify_consistency(old, size, old_root, flip_bit(tree_root, bit), proof)
        for i in range(len(proof)):
            assert not verify_consistency(
                old, size, old_root, tree_root, [*proof[:i], flip_bit(proof[i], bit), *proof[i + 1 :]]
            )


# -- property tests on larger trees -------------------------------------------------------------------------------

BIG = random_leaves(5000, seed=9162)
BIG_TREE = MerkleTree(BIG)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_inclusion_round_trips_in_larger_trees(data: st.DataObject) -> None:
    size = data.draw(st.integers(1, len(BIG)), label="size")
    index = data.draw(st.integers(0, size - 1), label="index")
    proof = BIG_TREE.inclusion_proof(index, size)
    tree_root = BIG_TREE.root(size)
    assert verify_inclusion(BIG[index], index, size, proof, tree_root)
    assert len(proof) <= (size - 1).bit_length()
    other = data.draw(st.integers(0, size - 1), label="other index")
    assert verify_inclusion(BIG[other], index, size, proof, tree_root) == (BIG[other] == BIG[index])


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_consistency_round_trips_in_larger_trees(data: st.DataObject) -> None:
    new = data.draw(st.integers(1, len(BIG)), label="new size")
    old = data.draw(st.integers(1, new), label="old size")
    proof = BIG_TREE.consistency_proof(old, new)
    assert verify_consistency(old, new, BIG_TREE.root(old), BIG_TREE.root(new), proof)
    assert len(proof) <= 2 * new.bit_length()
    if old < new:
        forked = MerkleTree([*BIG[: new - 1], leaf_hash(b"rewritten history")])
        assert not verify_consistency(old, new, BIG_TREE.root(old), forked.root(), proof)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 700), min_size=1, max_size=4))
def test_appending_gives_the_same_tree_as_building_at_once(sizes: list[int]) -> None:
    tree = MerkleTree()
    for size in sorted(sizes):
        for leaf in BIG[tree.size : size]:
            tree.append(leaf)
        assert tree.root() == root_of_leaves(BIG[:size]) == MerkleTree(BIG[:size]).root()
        if size:
            assert tree.inclusion_proof(size - 1) == BIG_TREE.inclusion_proof(size - 1, size)
            assert tree.leaf(size - 1) == BIG[size - 1]


def test_a_tree_built_from_a_generator_equals_one_built_from_a_list() -> None:
    assert MerkleTree(iter(BIG[:777])).root() == MerkleTree(BIG[:777]).root() == BIG_TREE.root(777)


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(0, 700), min_size=1, max_size=5))
def test_extending_in_chunks_gives_the_same_tree_as_building_at_once(cuts: list[int]) -> None:
    """`extend` (audit verify adds each fetched chunk's leaves) makes every level as the constructor does: roots and
    proofs at each cut, and appending one leaf afterwards, agree with the tree built from all the leaves."""
    tree = MerkleTree()
    for size in sorted(cuts):
        tree.extend(BIG[tree.size : size])
        assert tree.root() == root_of_leaves(BIG[:size]) == MerkleTree(BIG[:size]).root()
        if size:
            assert tree.inclusion_proof(size - 1) == BIG_TREE.inclusion_proof(size - 1, size)
            assert tree.consistency_proof(size // 2) == BIG_TREE.consistency_proof(size // 2, size)
    tree.append(BIG[tree.size])
    assert tree.root() == BIG_TREE.root(tree.size)


def test_extending_by_a_wrong_length_hash_appends_nothing() -> None:
    tree = MerkleTree(LEAVES)
    with pytest.raises(ValueError, match="32 bytes"):
        tree.extend([LEAVES[0], b"x" * 31])
    assert tree.size == len(LEAVES) and tree.root() == MerkleTree(LEAVES).root()


def _every_node(tree: MerkleTree) -> list[bytes]:
    """Each complete subtree's root, level by level: what proofs and roots of any size are read from."""
    return [tree.node(level, index) for level in range(tree.size.bit_length()) for index in range(tree.size >> level)]


def test_joining_the_tree_of_the_following_leaves_gives_the_tree_of_all_of_them() -> None:
    """`join` (audit verify checks a large log in ranges, one tree each) makes every node the constructor makes,
    whether or not this tree's size is a multiple of the other's subtrees; and the joined tree still grows."""
    for size in range(0, 66):
        for more in (0, 1, 2, 3, 5, 8, 16, 33, 64):
            tree, following = MerkleTree(SMALL[:size]), MerkleTree(SMALL[size : size + more])
            tree.join(following)
            whole = MerkleTree(SMALL[: size + more])
            assert tree.size == whole.size and _every_node(tree) == _every_node(whole)
            assert tree.root() == SMALL_MTH(0, size + more)
            tree.append(SMALL[size + more])
            assert tree.root() == SMALL_MTH(0, size + more + 1)


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.sampled_from([0, 256, 512, 513, 640, 700, 1024]), min_size=1, max_size=4))
def test_joining_ranges_at_any_cut_gives_the_tree_built_at_once(cuts: list[int]) -> None:
    tree = MerkleTree()
    for size in sorted(cuts):
        tree.join(MerkleTree(BIG[tree.size : size]))
        assert tree.root() == BIG_TREE.root(size) and _every_node(tree) == _every_node(MerkleTree(BIG[:size]))
