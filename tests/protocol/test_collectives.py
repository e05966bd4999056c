"""protocol/collectives.py against cases computed by hand from nccl-tests' *GetBw functions."""

from __future__ import annotations

import pytest

from protocol import collectives as c


def test_all_reduce_bus_bandwidth_is_algbw_times_two_n_minus_one_over_n() -> None:
    # 2^28 floats = 1,073,741,824 B in 10 ms = 107.3741824 GB/s; 8 ranks: x 14/8 = 187.9048192 GB/s
    bw = c.bandwidth("all_reduce", count=2**28, typesize=4, seconds=0.010, nranks=8)
    assert bw.algbw == pytest.approx(107.3741824, rel=1e-12)
    assert bw.busbw == pytest.approx(187.9048192, rel=1e-12)


@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter", "alltoall"])
def test_gathers_count_every_ranks_block_and_take_n_minus_one_over_n(name: str) -> None:
    # 1024 floats per rank x 4 ranks = 16,384 B in 1 ms = 0.016384 GB/s; bus x 3/4 = 0.012288 GB/s
    bw = c.bandwidth(name, count=1024, typesize=4, seconds=1e-3, nranks=4)
    assert bw.algbw == pytest.approx(0.016384, rel=1e-12)
    assert bw.busbw == pytest.approx(0.012288, rel=1e-12)


@pytest.mark.parametrize("name", ["broadcast", "reduce", "sendrecv"])
def test_rooted_and_point_to_point_collectives_have_a_bus_factor_of_one(name: str) -> None:
    bw = c.bandwidth(name, count=1_000_000, typesize=2, seconds=0.5e-3, nranks=8)
    assert bw.algbw == pytest.approx(4.0, rel=1e-12)  # 2 MB in 0.5 ms
    assert bw.busbw == bw.algbw


def test_one_rank_moves_nothing_over_the_bus_for_an_all_reduce() -> None:
    assert c.bus_factor("all_reduce", 1) == 0.0
    assert c.bus_factor("all_reduce", 2) == 1.0
    assert c.bus_factor("all_gather", 2) == 0.5


def test_the_printed_size_gives_the_same_bandwidth_as_count_and_typesize() -> None:
    for name in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce"):
        nranks = 4
        size = c.algorithm_bytes(name, count=4096, typesize=4, nranks=nranks)
        assert c.bandwidth_from_size(name, size_bytes=size, seconds=2e-4, nranks=nranks) == c.bandwidth(
            name, count=4096, typesize=4, seconds=2e-4, nranks=nranks
        )


def test_hypercube_counts_n_minus_one_blocks_of_its_printed_n() -> None:
    # printed size 4 x 1000 B over 4 ranks: 3000 B moved; in 1 us = 3 GB/s
    bw = c.bandwidth_from_size("hypercube", size_bytes=4000, seconds=1e-6, nranks=4)
    assert bw.algbw == pytest.approx(3.0)
    assert bw.busbw == pytest.approx(3.0)


def test_pytorch_spellings_name_the_same_collectives() -> None:
    assert c.collective("all_to_all") is c.COLLECTIVES["alltoall"]


def test_it_refuses_an_unknown_collective_a_zero_time_and_no_ranks() -> None:
    with pytest.raises(ValueError, match="unknown collective 'allsum'"):
        c.bus_factor("allsum", 2)
    with pytest.raises(ValueError, match="time must be positive"):
        c.bandwidth("all_reduce", count=1, typesize=4, seconds=0.0, nranks=2)
    with pytest.raises(ValueError, match="at least one rank"):
        c.bandwidth("all_reduce", count=1, typesize=4, seconds=1.0, nranks=0)


def test_the_printed_size_of_a_hypercube_counts_every_ranks_block_even_for_two_ranks() -> None:
    # HyperCubeGetCollByteCount: receive count = base x nranks; HyperCubeGetBw moves nranks-1 blocks
    assert c.COLLECTIVES["hypercube"].printed_bytes(100, 4, 2) == 800
    assert c.algorithm_bytes("hypercube", count=100, typesize=4, nranks=2) == 400
    assert c.COLLECTIVES["all_gather"].printed_bytes(100, 4, 2) == 800
    assert c.COLLECTIVES["all_reduce"].printed_bytes(100, 4, 2) == 400
