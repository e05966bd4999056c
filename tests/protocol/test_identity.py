"""The measurement identity: one measurement, whatever folder its source files were read from (protocol.identity)."""

from __future__ import annotations

import copy
from typing import Any

import protocol
from protocol.identity import measurement_identity, same_but_for_file_locations, without_file_locations
from tests.conftest import load_example

SERVER = "inference-server-h100-bf16"
FILES = {
    "detail": "sha256:" + "11" * 32,
    "summary": "sha256:" + "22" * 32,
    "system": "sha256:" + "33" * 32,
}


def imported(root: str = "results", **origin: Any) -> dict[str, Any]:
    """The server example as an MLPerf import would write it, its source files under `root`."""
    doc = copy.deepcopy(load_example(SERVER))
    doc["protocol"] = f"{protocol.PROTOCOL_NAME}/{protocol.PROTOCOL_VERSION_LATEST}"
    doc["provenance"]["source"] = "import"
    doc["provenance"]["origin"] = {
        "kind": "mlperf-inference",
        "round": "v5.1",
        "benchmark": "llama2-70b-99",
        "scenario": "Server",
        "files": {f"{root}/sys/llama2-70b-99/Server/{name}": value for name, value in FILES.items()},
        **origin,
    }
    return doc


def inferred(doc: dict[str, Any], location: str = "closed/Acme/results/sys/llama2-70b-99/Server") -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["provenance"]["origin"]["derivation"] = {
        "kind": "mlperf-inferred",
        "rule": "Offline inferred from Server",
        "from_scenario": "Server",
        "from_location": location,
        "from_digest": protocol.digest(doc),
    }
    return out


def test_a_run_without_source_files_is_its_own_measurement() -> None:
    doc = load_example(SERVER)
    assert measurement_identity(doc) == protocol.digest(doc)
    assert measurement_identity(doc, own_digest="sha256:" + "ab" * 32) == "sha256:" + "ab" * 32


def test_the_same_files_read_from_another_folder_are_the_same_measurement() -> None:
    sample, round_tree = imported("results"), imported("measurements")
    assert protocol.digest(sample) != protocol.digest(round_tree)
    assert measurement_identity(sample) == measurement_identity(round_tree)
    assert measurement_identity(sample).startswith("sha256:") and len(measurement_identity(sample)) == 71


def test_the_identity_ignores_the_order_the_files_are_listed_in_but_not_a_repeated_file() -> None:
    doc = imported()
    reordered = copy.deepcopy(doc)
    reordered["provenance"]["origin"]["files"] = dict(reversed(list(doc["provenance"]["origin"]["files"].items())))
    assert measurement_identity(reordered) == measurement_identity(doc)
    repeated = copy.deepcopy(doc)
    repeated["provenance"]["origin"]["files"]["copy/of/detail"] = FILES["detail"]
    assert measurement_identity(repeated) != measurement_identity(doc)


def test_another_file_content_is_another_measurement() -> None:
    other = imported()
    other["provenance"]["origin"]["files"]["results/sys/llama2-70b-99/Server/detail"] = "sha256:" + "44" * 32
    assert measurement_identity(other) != measurement_identity(imported())


def test_the_scenario_benchmark_and_round_are_part_of_the_identity() -> None:
    base = measurement_identity(imported())
    assert measurement_identity(imported(scenario="Offline")) != base
    # AMD published the same llama2-70b logs for the -99 and the -99.9 benchmark: two results.
    assert measurement_identity(imported(benchmark="llama2-70b-99.9")) != base
    assert measurement_identity(imported(mapped_benchmark="llama2-70b-99.9")) != base
    assert measurement_identity(imported(round="v5.0")) != base


def test_an_inferred_result_over_byte_identical_logs_is_not_the_measured_run() -> None:
    measured = imported()
    assert measurement_identity(inferred(measured)) != measurement_identity(measured)


def test_the_same_inferred_result_read_from_two_folders_is_one_measurement() -> None:
    a = inferred(imported("results"), "closed/Acme/results/sys/llama2-70b-99/Server")
    b = inferred(imported("measurements"), "Acme/results/sys/llama2-70b-99/Server")
    assert measurement_identity(a) == measurement_identity(b)
    assert same_but_for_file_locations(a, b)


def test_documents_read_from_the_same_files_in_other_folders_differ_only_in_file_locations() -> None:
    assert same_but_for_file_locations(imported("results"), imported("measurements"))
    corrected = imported("measurements")
    corrected["metrics"]["throughput"]["value"] = 1.5
    assert not same_but_for_file_locations(imported("results"), corrected)


def test_setting_file_locations_aside_leaves_the_document_unchanged() -> None:
    doc = imported()
    before = copy.deepcopy(doc)
    reduced = without_file_locations(doc)
    assert doc == before
    assert reduced["provenance"]["origin"]["files"] == sorted(FILES.values())
    assert without_file_locations(load_example(SERVER)) == load_example(SERVER)


def test_a_malformed_origin_is_read_as_no_source_files() -> None:
    doc = load_example(SERVER)
    odd = {**doc, "provenance": {**doc["provenance"], "origin": {"files": ["not", "a", "map"]}}}
    assert measurement_identity(odd) == protocol.digest(odd)
    assert measurement_identity({"provenance": "text"}) == protocol.digest({"provenance": "text"})
