"""The contract between the shared runner code and a compute backend (NumPy, PyTorch).

A backend builds the bundled workloads at a precision, moves fixed inputs to its device, runs them and
says how: which switches were set (`settings`) and what the precision really is (`precision_section`).
The runners never touch numpy or torch model code directly, so a new backend is one module.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..workloads import Shape, Workload

Scalar = str | int | float | bool | None


class UnsupportedRun(ValueError):
    """This backend cannot run this combination (the message says why and what can)."""


class Trainer(Protocol):
    """One training setup; the runner times each phase of a step separately, synchronising in between."""

    parameters: int

    def data(self, step: int) -> Any:
        """Fetch the batch of `step` onto the device (the data phase)."""

    def forward(self, batch: Any) -> Any:
        """Forward pass and loss; returns the loss (device scalar)."""

    def backward(self, loss: Any) -> None:
        """Backward pass."""

    def optimizer_step(self) -> None:
        """Optimizer update and gradient reset."""

    def loss_value(self, loss: Any) -> float:
        """The loss as a Python float (synchronises; called outside the timed phases)."""


class Backend(Protocol):
    """A compute backend. `device` is "cpu" or "cuda"."""

    name: str
    device: str

    def check(self, phase: str, workload: Workload, precision: str) -> None:
        """Raise UnsupportedRun if this backend cannot run the combination."""

    def configure(self, threads: int, precision: str) -> None:
        """Set the intra-op thread count and the run's precision (for `settings`) before a run."""

    def synchronize(self) -> None:
        """Wait for all queued device work (a no-op on CPU)."""

    def device_uuid(self) -> str | None:
        """The UUID of the accelerator the runs execute on (None on CPU): how its telemetry is found."""

    def build(self, workload: Workload, precision: str, seed: int) -> Any:
        """The inference model for `workload` at `precision`, weights from `seed`, ready to run."""

    def to_device(self, array: np.ndarray) -> Any:
        """A host array as an input of this backend's models."""

    def forward(self, model: Any, inputs: Any) -> Any:
        """Classifier/encoder inference: logits for a batch."""

    def prefill(self, model: Any, prompts: Any, output_tokens: int) -> Any:
        """Decoder: process the prompts, fill the KV cache, pick the first token; returns the state."""

    def decode(self, model: Any, state: Any) -> None:
        """Decoder: one more token for every sequence, using and extending the KV cache."""

    def predictions(self, output: Any) -> np.ndarray:
        """Host array of argmax classes/tokens of forward output, or of a decoder state's tokens so far."""

    def trainer(self, workload: Workload, shape: Shape, precision: str, seed: int, lr: float) -> Trainer:
        """A training setup (model, optimizer AdamW, fixed synthetic batches)."""

    def settings(self) -> dict[str, Scalar]:
        """The switches that change what is measured (threads, TF32, matmul precision, engines)."""

    def precision_section(self, phase: str, precision: str) -> dict[str, Any]:
        """The protocol's `precision` section for this precision as this backend implements it."""

    def kv_cache_format(self, precision: str) -> str:
        """The format a decoder's KV cache is stored in at this precision."""

    def reset_peak_memory(self) -> None:
        """Start a fresh peak-memory measurement."""

    def peak_memory(self) -> tuple[int | None, str | None, str | None]:
        """(peak bytes, kind "device" | "host-rss", reason if not measurable)."""

    def peak_tflops(self, precision: str) -> tuple[float | None, str]:
        """A stated peak for MFU and its source, or (None, why none)."""
