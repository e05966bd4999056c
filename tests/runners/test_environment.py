"""Environment capture: the sections validate in a document, and what cannot be read says why."""

from __future__ import annotations

from runners import environment


def test_capture_returns_system_software_and_inventory() -> None:
    env = environment.capture()
    host = env["system"]["host"]
    assert host["threads"] >= 1 and host["memory_gib"] > 0 and env["software"]["os"]["kernel"]
    assert env["software"]["runtimes"]["python"]
    assert env["software"]["packages"]["numpy"] and env["software"]["packages"]["benchreg"]
    assert "env.OMP_NUM_THREADS" in env["software"]["settings"]
    assert isinstance(env["inventory"]["cpu_flags"], list)


def test_unreadable_values_are_null_with_a_reason() -> None:
    env = environment.capture()
    notes = env["system"]["notes"]
    assert env["system"]["accelerators"] == [] and "accelerators" in notes  # not a CUDA run
    for key in ("numa_nodes", "frequency_mhz", "virtualization"):
        assert env["system"]["host"].get(key) is not None or env["system"].get(key) is not None or key in notes
