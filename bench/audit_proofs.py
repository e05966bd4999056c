"""Audit-log proof costs at scale: tree build, roots, inclusion and consistency proofs, verification, checkpoints.

Run by hand (`python -m bench.audit_proofs`, 1M entries; `--quick` 20,000) or as CI's check that it runs
(`--smoke`, 2,000). Prints figures only, with plain SHA-256 over the same entries as the in-run baseline, so
ratios are comparable across machines.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import platform
import random
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from protocol.signed_note import Checkpoint, open_note, sign_note, verifier_key
from protocol.transparency import (
    HASH_SIZE,
    MerkleTree,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_of_leaves,
    verify_consistency,
    verify_inclusion,
)

T = TypeVar("T")


def synthetic_entries(count: int, seed: int = 0) -> list[bytes]:
    """About 200-byte audit events, shaped like the registry's (JSON with a digest, actor and timestamp)."""
    rng = random.Random(seed)
    entries = []
    for i in range(count):
        digest = rng.randbytes(32).hex()
        entries.append(
            (
                f'{{"seq":{i},"kind":"submission.created","subject":"sha256:{digest}",'
                f'"actor":"lab-{rng.randrange(1000):03d}","at":"2026-11-{1 + i % 28:02d}T12:00:00Z",'
                f'"run":"{rng.randbytes(8).hex()}","v":1}}'
            ).encode()
        )
    return entries


def timed(fn: Callable[[], T], repeats: int = 1) -> tuple[float, T]:
    """Best wall time of `repeats` runs (the first run also pays for warming the allocator), and the result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result  # type: ignore[return-value]


def per_call(fn: Callable[[int], object], calls: int) -> float:
    """Mean seconds per call of fn(i) over `calls` calls."""
    gc.collect()
    start = time.perf_counter()
    for i in range(calls):
        fn(i)
    return (time.perf_counter() - start) / calls


def row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<52} {value:>14}  {note}")


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def s(seconds: float) -> str:
    return f"{seconds:,.3f} s"


def bench_hashing(entries: list[bytes]) -> tuple[float, list[bytes]]:
    print("\nHashing the log (all entries; best of 3 runs)")
    baseline, _ = timed(lambda: [hashlib.sha256(e).digest() for e in entries], repeats=3)
    row("baseline: hashlib.sha256 of every entry", s(baseline), "1.00x")
    leaves_t, leaves = timed(lambda: [leaf_hash(e) for e in entries], repeats=3)
    row("leaf_hash of every entry", s(leaves_t), f"{leaves_t / baseline:.2f}x")
    stream_t, _ = timed(lambda: root_of_leaves(leaf_hash(e) for e in entries), repeats=3)
    row("root_of_leaves, streaming, leaf hashing included", s(stream_t), f"{stream_t / baseline:.2f}x")
    return baseline, leaves


def bench_tree(leaves: list[bytes], baseline: float) -> MerkleTree:
    n = len(leaves)
    print("\nThe prover (MerkleTree over the leaf hashes; build: best of 3 runs)")
    build_t, tree = timed(lambda: MerkleTree(leaves), repeats=3)
    row("build from leaf hashes (n - 1 node hashes)", s(build_t), f"{build_t / baseline:.2f}x baseline")
    # Reads the private levels: the memory the cache costs is what this benchmark is about.
    cached = sum(len(level) for level in tree._levels)
    row("cached subtree hashes", f"{cached / 2**20:,.1f} MiB", f"{cached / n:.0f} bytes per leaf")
    rng = random.Random(1)
    sizes = [rng.randrange(1, n + 1) for _ in range(1000)]
    row("root(size) of an earlier size", us(per_call(lambda i: tree.root(sizes[i]), len(sizes))))
    appended = min(10_000, n // 2)  # the last leaves, appended one by one to a tree of the others
    grow = MerkleTree(leaves[: n - appended])
    append_t = per_call(lambda i: grow.append(leaves[n - appended + i]), appended)
    row(f"append one leaf (mean of {appended:,})", us(append_t))
    one_shot_t, _ = timed(lambda: inclusion_proof(leaves, n // 3, n))
    row("one-shot inclusion_proof(list, ...) without a tree", s(one_shot_t), "(builds a tree each call)")
    return tree


def bench_inclusion(tree: MerkleTree, leaves: list[bytes]) -> None:
    n = tree.size
    print(f"\nInclusion proofs at size {n:,}")
    left, right = leaves[0], leaves[1]
    row("baseline: one node_hash (SHA-256 of 65 bytes)", us(per_call(lambda _: node_hash(left, right), 100_000)))
    rng = random.Random(2)
    indices = [rng.randrange(n) for _ in range(2000)]
    proofs = [tree.inclusion_proof(i, n) for i in indices]
    row("generate (mean of 2,000 random leaves)", us(per_call(lambda i: tree.inclusion_proof(indices[i], n), 2000)))
    lengths = sorted(len(p) for p in proofs)
    row("proof size", f"{lengths[-1]} hashes", f"{lengths[-1] * HASH_SIZE} bytes max; min {lengths[0]} hashes")
    root = tree.root()
    verify_t = per_call(lambda i: verify_inclusion(leaves[indices[i]], indices[i], n, proofs[i], root), 2000)
    row("verify (mean of 2,000)", us(verify_t))


def bench_consistency(tree: MerkleTree) -> None:
    n = tree.size
    print(f"\nConsistency proofs to size {n:,}")
    rng = random.Random(3)
    olds = [rng.randrange(1, n) for _ in range(2000)]
    proofs = [tree.consistency_proof(m, n) for m in olds]
    row("generate (mean of 2,000 random old sizes)", us(per_call(lambda i: tree.consistency_proof(olds[i], n), 2000)))
    lengths = sorted(len(p) for p in proofs)
    row("proof size", f"{lengths[-1]} hashes", f"{lengths[-1] * HASH_SIZE} bytes max; min {lengths[0]} hashes")
    old_roots = [tree.root(m) for m in olds]
    root = tree.root()
    verify_t = per_call(lambda i: verify_consistency(olds[i], n, old_roots[i], root, proofs[i]), 2000)
    row("verify (mean of 2,000)", us(verify_t))


def bench_checkpoints(tree: MerkleTree) -> None:
    print("\nSigned checkpoints (Ed25519, C2SP signed note)")
    key = Ed25519PrivateKey.generate()
    vkey = verifier_key("benchreg.example/audit", key.public_key())
    body = Checkpoint("benchreg.example/audit", tree.size, tree.root()).body()
    note = sign_note(body, "benchreg.example/audit", key)
    row("sign_note (mean of 1,000)", us(per_call(lambda _: sign_note(body, "benchreg.example/audit", key), 1000)))
    row("open_note with one verifier key (mean of 1,000)", us(per_call(lambda _: open_note(note, [vkey]), 1000)))
    row("signed checkpoint size", f"{len(note)} bytes")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="20,000 entries")
    parser.add_argument("--smoke", action="store_true", help="2,000 entries: CI's check that the bench runs")
    parser.add_argument("-n", type=int, default=None, help="number of entries (default 1,000,000)")
    args = parser.parse_args(argv)
    n = args.n or (2_000 if args.smoke else 20_000 if args.quick else 1_000_000)
    if n < 2:
        parser.error("-n: at least 2 entries (a tree to prove in)")
    print(f"benchreg audit-log proofs: {n:,} entries; Python {platform.python_version()} on {platform.machine()}")
    gen_t, entries = timed(lambda: synthetic_entries(n))
    mean_len = sum(map(len, entries)) / n
    print(f"  (generated {n:,} synthetic entries of {mean_len:.0f} bytes on average in {gen_t:.1f} s, not counted)")
    baseline, leaves = bench_hashing(entries)
    del entries
    tree = bench_tree(leaves, baseline)
    bench_inclusion(tree, leaves)
    bench_consistency(tree)
    bench_checkpoints(tree)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
