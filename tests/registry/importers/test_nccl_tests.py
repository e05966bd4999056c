"""The nccl-tests reader on logs authored in nccl-tests' exact print formats of 2021, 2022-2025 and 2025-10 on."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.importers import nccl_tests
from registry.importers.nccl_tests import NcclTestsError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl_tests"


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_it_reads_a_two_node_all_reduce_of_the_2022_to_2025_layout() -> None:
    log = nccl_tests.read_path(FIXTURES / "all_reduce_16ranks_2024.txt", collective="all_reduce")
    assert log.collective == "all_reduce" and log.nranks == 16
    assert log.header.min_bytes == 8 and log.header.max_bytes == 8 << 30 and log.header.step == 2
    assert (log.header.warmup_iters, log.header.iters, log.header.agg_iters, log.header.graph) == (5, 20, 1, 0)
    assert {d.host for d in log.devices} == {"gpu-a-017", "gpu-a-018"}
    assert log.devices[9] == nccl_tests.Device(9, 0, 51209, "gpu-a-018", 1, "0x2a", "NVIDIA H100 80GB HBM3")
    assert len(log.rows) == 31 and log.rows[0].size == 8 and log.rows[-1].size == 8 << 30
    last = log.rows[-1]
    assert (last.count, last.type, last.redop, last.root) == (2 << 30, "float", "sum", -1)
    assert last.in_place.wrong == 0 and not log.failed_rows and log.out_of_bounds == 0
    assert log.avg_busbw is not None and log.nccl_version is None


def test_it_reads_the_2021_layout_with_its_error_column_and_no_root() -> None:
    log = nccl_tests.read_text(_text("all_reduce_4ranks_2021.txt"), collective="all_reduce")
    assert log.nranks == 4 and log.devices[0].group is None and log.devices[0].pid == 7001
    assert log.header.agg_iters is None and log.header.graph is None
    assert log.rows[0].root is None and log.rows[0].out_of_place.max_error == 0.0
    assert log.rows[0].out_of_place.wrong is None


def test_it_reads_the_newest_layout_its_versions_and_its_collective() -> None:
    log = nccl_tests.read_text(_text("all_gather_8ranks_2025.txt"))
    assert log.collective == "all_gather" and log.nranks == 8
    assert log.nccl_tests_version == "2.17.6" and log.nccl_version == "2.28.7"
    assert log.devices[1].bus_id == "0000:29:00" and log.header.rest == "unalign: 0"
    big = log.rows[-1]
    assert big.size == 16 << 30 and big.count == (16 << 30) // 2 // 8 and big.out_of_place.time_us == 40913.5
    assert "GPU memory usage     : 8.61 GiB" in log.notes


def test_it_flags_rows_with_wrong_elements_as_failed_validation() -> None:
    log = nccl_tests.read_text(_text("reduce_scatter_8ranks_failed_2023.txt"), collective="reduce_scatter")
    assert [row.size for row in log.failed_rows] == [1 << 20]
    assert log.failed_rows[0].in_place.wrong == 3 and log.out_of_bounds == 3


def test_it_takes_the_nccl_version_from_ncclS_own_debug_lines() -> None:
    text = "gpu-a-017:51200:51200 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n" + _text("all_reduce_16ranks_2024.txt")
    text = text.replace("#\n# Using", "gpu-a-017:51200:51310 [0] NCCL INFO Channel 00/32 : 0 1 2 3\n#\n# Using")
    assert nccl_tests.read_text(text, collective="all_reduce").nccl_version == "2.18.5+cuda12.2"


def _replace_in_row(text: str, size: int, old: str, new: str) -> tuple[str, int]:
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.split()[:1] == [str(size)]:
            assert old in line
            lines[index] = line.replace(old, new, 1)
            return "".join(lines), index + 1
    raise AssertionError(size)


def test_it_refuses_a_busbw_that_does_not_follow_from_size_and_time_naming_row_and_column() -> None:
    # 1 GiB all-reduce, 16 ranks: the printed busbw moved by 0.02 GB/s, four times its rounding
    text = _text("all_reduce_16ranks_2024.txt")
    row = next(line for line in text.splitlines() if line.split()[:1] == ["1073741824"])
    busbw = row.split()[7]
    changed, number = _replace_in_row(text, 1073741824, f"  {busbw}  ", f"  {float(busbw) + 0.02:6.2f}  ")
    with pytest.raises(NcclTestsError, match=rf"line {number}: out-of-place busbw .* does not follow from size"):
        nccl_tests.read_text(changed, collective="all_reduce")


def test_it_refuses_a_log_read_as_another_collective() -> None:
    # a reduce-scatter's count is per rank: read as an all-reduce its sizes are 8 times its counts x 4 B
    with pytest.raises(NcclTestsError, match="line 16: size 1024 B is not count 32 x 4 B"):
        nccl_tests.read_text(_text("reduce_scatter_8ranks_failed_2023.txt"), collective="all_reduce")
    # a broadcast has the same size rule as an all-reduce, but a bus factor of 1, not 2(n-1)/n
    with pytest.raises(NcclTestsError, match=r"busbw .* does not follow"):
        nccl_tests.read_text(_text("all_reduce_4ranks_2021.txt"), collective="broadcast")


def test_it_refuses_a_log_whose_rank_count_does_not_match_its_bandwidths() -> None:
    text = _text("all_gather_8ranks_2025.txt")
    dropped = "".join(line for line in text.splitlines(keepends=True) if "Rank  7 Group" not in line)
    with pytest.raises(NcclTestsError, match=r"is not count .* x 7 ranks"):
        nccl_tests.read_text(dropped)


def test_it_refuses_a_malformed_line_with_its_number() -> None:
    text = _text("all_reduce_4ranks_2021.txt").splitlines(keepends=True)
    text.insert(20, "dgx-a100: Test NCCL failure common.cu:393 'unhandled cuda error'\n")
    with pytest.raises(NcclTestsError, match="line 21: size 'dgx-a100:' is not a number"):
        nccl_tests.read_text("".join(text), collective="all_reduce")
    with pytest.raises(NcclTestsError, match="line 1: not a line of nccl-tests' output"):
        nccl_tests.read_text("hello\n" + "".join(text), collective="all_reduce")


def test_it_refuses_a_row_with_a_word_where_a_number_belongs() -> None:
    text, number = _replace_in_row(_text("all_reduce_4ranks_2021.txt"), 1024, "float", "floaty")
    with pytest.raises(NcclTestsError, match=f"line {number}: type 'floaty' is not one of"):
        nccl_tests.read_text(text, collective="all_reduce")


def test_it_refuses_an_average_that_is_not_the_mean_of_the_rows() -> None:
    text = _text("all_gather_8ranks_2025.txt").replace("Avg bus bandwidth    : 161.806", "Avg bus bandwidth    : 170")
    with pytest.raises(NcclTestsError, match="Avg bus bandwidth 170 is not the mean"):
        nccl_tests.read_text(text)


def test_it_refuses_a_log_without_its_collective_or_naming_another() -> None:
    with pytest.raises(NcclTestsError, match="does not name its collective"):
        nccl_tests.read_text(_text("all_reduce_4ranks_2021.txt"))
    with pytest.raises(NcclTestsError, match="the log is of all_gather, not all_reduce"):
        nccl_tests.read_text(_text("all_gather_8ranks_2025.txt"), collective="all_reduce")


def test_it_refuses_oversized_files_and_lines(tmp_path: Path) -> None:
    with pytest.raises(NcclTestsError, match="line 2: 5000 characters"):
        nccl_tests.read_text("#\n#" + "x" * 4999 + "\n", collective="all_reduce")
    big = tmp_path / "big.txt"
    big.write_bytes(b"#\n" * (nccl_tests.MAX_BYTES // 2 + 1))
    with pytest.raises(NcclTestsError, match=r"big.txt is .* bytes"):
        nccl_tests.read_path(big, collective="all_reduce")


def test_it_refuses_a_log_without_devices_or_rows() -> None:
    text = "".join(line for line in _text("all_reduce_4ranks_2021.txt").splitlines(keepends=True) if "Rank" not in line)
    with pytest.raises(NcclTestsError, match="no device lines"):
        nccl_tests.read_text(text, collective="all_reduce")
    header_only = _text("all_reduce_4ranks_2021.txt").split("#       size")[0]
    with pytest.raises(NcclTestsError, match="no result table"):
        nccl_tests.read_text(header_only, collective="all_reduce")


def _one_row_log(row: str) -> str:
    # the 2022-2025 layout, two ranks, one all-reduce row written by hand
    return "\n".join(
        [
            "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0",
            "#  Rank  0 Group  0 Pid   1201 on     node-a device  0 [0x1b] NVIDIA A100-SXM4-80GB",
            "#  Rank  1 Group  0 Pid   1202 on     node-a device  1 [0x1c] NVIDIA A100-SXM4-80GB",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
            "   busbw #wrong",
            row,
            "",
        ]
    )


def test_it_reads_a_row_whose_out_of_place_side_was_not_run() -> None:
    # 1 MiB in 20.00 us = 52.43 GB/s; two ranks: busbw x 2(2-1)/2 = algbw. The out-of-place side is 32 spaces.
    row = "     1048576        262144     float     sum      -1" + " " * 32 + "    20.00   52.43   52.43      0"
    log = nccl_tests.read_text(_one_row_log(row), collective="all_reduce")
    assert log.rows[0].out_of_place is None and log.rows[0].in_place is not None
    assert log.rows[0].in_place.algbw == 52.43


def test_it_reads_a_row_whose_in_place_side_was_not_run() -> None:
    row = "     1048576        262144     float     sum      -1    20.00   52.43   52.43      0"
    log = nccl_tests.read_text(_one_row_log(row), collective="all_reduce")
    assert log.rows[0].in_place is None and log.rows[0].out_of_place is not None


def test_it_refuses_a_row_with_too_few_columns() -> None:
    row = "     1048576        262144     float     sum      -1    20.00   52.43"
    with pytest.raises(NcclTestsError, match="line 5: 7 columns where the header on line 4 names 13"):
        nccl_tests.read_text(_one_row_log(row), collective="all_reduce")


def test_a_time_rounded_to_its_printed_place_is_accepted_at_either_end() -> None:
    # 1 MiB over 2 ranks: 20.00 us stands for 19.995..20.005 us, so algbw 52.4157..52.4419: printed 52.42..52.44
    def log_with(algbw: str) -> str:
        side = f"    20.00  {algbw:>6s}  {algbw:>6s}      0"
        return _one_row_log("     1048576        262144     float     sum      -1" + side + side)

    for algbw in ("52.42", "52.44"):
        assert nccl_tests.read_text(log_with(algbw), collective="all_reduce").rows[0].in_place is not None
    for algbw in ("52.41", "52.45"):
        with pytest.raises(NcclTestsError, match=f"line 5: out-of-place algbw {algbw} GB/s does not follow"):
            nccl_tests.read_text(log_with(algbw), collective="all_reduce")
