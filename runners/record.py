"""Assembling a protocol document: environment, conditions, telemetry around the window, validation, file.

`Recorder` is created when a run starts (that instant is `provenance.started_at`), brackets the
measurement window with `window_start`/`window_stop` (peak memory, energy and temperatures are read
over the window only) and finally `document(...)` builds the document and passes it through
`protocol.check`, so nothing leaves a runner unvalidated.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import protocol

from . import __version__, environment, nvml, telemetry
from .backends import Backend
from .measure import Policy, Warmup

RUNNER_NAMES = {"inference": "benchreg.runners.inference", "training": "benchreg.runners.training"}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Readings:
    """Telemetry over the measurement window; None values carry their reason in `notes`."""

    joules: float | None = None
    seconds: float | None = None
    energy_source: str | None = None
    start_c: float | None = None
    end_c: float | None = None
    gpu: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


class Recorder:
    """Collects everything about one run that is not the measurement itself."""

    def __init__(
        self, backend: Backend, phase: str, submitter: str, *, runner: str | None = None, version: str | None = None
    ) -> None:
        """`runner` and `version` name a runner other than the phase's own and the protocol minor it declares."""
        self.started_at = now()
        self.backend, self.phase, self.submitter = backend, phase, submitter
        self.runner = runner or RUNNER_NAMES[phase]
        self.version = version or protocol.PROTOCOL_VERSION
        self._uuid = backend.device_uuid()
        self.env = environment.capture(backend.device, self._uuid)
        self.readings = Readings()
        self._rapl: telemetry.RaplMeter | None = None
        self._gpu: nvml.GpuSampler | None = None

    def window_start(self) -> None:
        """Reset peak memory and start energy and temperature readings."""
        self.backend.reset_peak_memory()
        notes = self.readings.notes
        if self.backend.device == "cuda":
            self._gpu, reason = nvml.GpuSampler.start(self._uuid, os.environ.get("CUDA_VISIBLE_DEVICES"))
        else:
            self._rapl, reason = telemetry.RaplMeter.start()
            self.readings.start_c, temp_reason = telemetry.cpu_temperature()
            if temp_reason:
                notes["thermal"] = temp_reason
        if reason:
            notes["energy"] = reason

    def window_stop(self) -> None:
        r = self.readings
        if self._gpu is not None:
            r.gpu = self._gpu.stop()
            r.joules, r.energy_source = r.gpu["joules"], "nvml"
            r.start_c, r.end_c = r.gpu["start_c"], r.gpu["end_c"]
            # The counter accumulated over the window's wall-clock time (warm-ups between repetitions and
            # all), so that, not the sum of timed repetitions, is what average power divides by.
            r.seconds = r.gpu["seconds"]
        elif self._rapl is not None:
            r.joules, r.seconds = self._rapl.stop()
            r.energy_source = "rapl"
        if self.backend.device != "cuda":
            r.end_c, _ = telemetry.cpu_temperature()

    def memory(self) -> dict[str, Any] | None:
        peak, kind, note = self.backend.peak_memory()
        if note:
            self.readings.notes["memory"] = note
        return {"peak_bytes": peak, "kind": kind} if peak is not None else None

    def energy(self, window_seconds: float) -> dict[str, Any] | None:
        r = self.readings
        if r.joules is None or r.energy_source is None:
            return None
        seconds = r.seconds or window_seconds
        scope = f"GPU board, {r.gpu.get('device')}" if r.energy_source == "nvml" else "CPU packages (all processes)"
        return {
            "joules": round(r.joules, 3),
            "average_power_w": round(r.joules / seconds, 3),
            "source": r.energy_source,
            "scope": scope,
        }

    def conditions(
        self,
        policy: Policy,
        warmup: Warmup,
        seconds: float,
        iterations: int,
        verdict: dict[str, Any],
        isolation: str | None,
        validity: dict[str, bool] | None = None,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "warmup": {"iterations": warmup.iterations, "seconds": warmup.seconds},
            "window": {"seconds": round(seconds, 4), "iterations": iterations, "repetitions": policy.repetitions},
            "steady_state": verdict,
            **self._device_conditions(),
            "ambient_c": None,
            "isolation": isolation,
        }
        if validity is not None:
            out["validity"] = {"valid": all(validity.values()), "checks": validity}
        return out

    def _device_conditions(self) -> dict[str, Any]:
        """The power, clocks and thermal sections, from the readings."""
        r, gpu = self.readings, self.readings.gpu
        throttle = gpu.get("throttle_reasons")
        thermal: dict[str, Any] = {
            "start_c": r.start_c,
            "end_c": r.end_c,
            "throttled": bool(throttle) if throttle is not None else None,
        }
        if throttle:
            thermal["throttle_reasons"] = throttle
        return {
            "power": {"limit_w": gpu.get("power_limit_w"), "mode": None},
            "clocks": {"locked": None, "graphics_mhz": gpu.get("graphics_mhz"), "memory_mhz": gpu.get("memory_mhz")},
            "thermal": thermal,
        }

    def document(
        self,
        *,
        workload: dict[str, Any],
        scenario: dict[str, Any],
        precision: dict[str, Any],
        conditions: dict[str, Any],
        metrics: dict[str, Any],
        samples: dict[str, Any],
        framework: dict[str, str | None],
        software_notes: dict[str, str],
        settings: dict[str, Any] | None = None,
        nodes: int | None = None,
    ) -> dict[str, Any]:
        """The complete document, validated by `protocol.check` (raises protocol.Invalid otherwise); `nodes`: the
        nodes of a multi-node run (the system captured is this node's, one of them)."""
        system = json.loads(json.dumps(self.env["system"]))  # a copy: the capture may serve other runs
        system["notes"].update(self.readings.notes)
        if nodes is not None:
            system["nodes"] = nodes
        doc = {
            "protocol": f"{protocol.PROTOCOL_NAME}/{self.version}",
            "phase": self.phase,
            "workload": workload,
            "scenario": scenario,
            "precision": precision,
            "system": system,
            "software": self._software(framework, software_notes, settings),
            "conditions": conditions,
            "metrics": metrics,
            "samples": samples,
            "provenance": self._provenance(),
        }
        return protocol.check(doc).document

    def _software(
        self, framework: dict[str, str | None], notes: dict[str, str], settings: dict[str, Any] | None
    ) -> dict[str, Any]:
        software: dict[str, Any] = json.loads(json.dumps(self.env["software"]))  # a copy, as the system's
        software["frameworks"] = framework
        software["settings"].update(self.backend.settings())
        software["settings"].update(settings or {})
        software["notes"].update(notes)
        return software

    def _provenance(self) -> dict[str, Any]:
        return {
            "runner": {"name": self.runner, "version": __version__},
            "submitter": self.submitter,
            "source": "runner",
            "started_at": self.started_at,
            "finished_at": now(),
        }


def file_name(doc: dict[str, Any]) -> str:
    """A descriptive, unique file name: phase, workload, scenario, precision, batch, digest prefix."""
    digest = protocol.check(doc).digest.removeprefix("sha256:")[:12]
    return (
        f"{doc['phase']}-{doc['workload']['name']}-{doc['scenario']['kind']}-"
        f"{doc['precision']['activations']}-{doc['precision']['weights']}-"
        f"b{doc['workload']['shape']['batch_size']}-{digest}.json"
    )


def write(doc: dict[str, Any], out_dir: Path) -> Path:
    """Validate again and write the document into `out_dir`, atomically (temporary file, then rename)."""
    protocol.check(doc)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / file_name(doc)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path
