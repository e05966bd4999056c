"""The NumPy backend: needs nothing beyond NumPy (and threadpoolctl, when installed, to fix BLAS threads).

It runs every workload for inference and the MLP classifier for training, in fp32 only: NumPy has no
bf16, and its fp16 matmul is emulated, so timing it would measure NumPy, not the hardware.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import telemetry, workloads
from ..workloads import Shape, Workload
from .base import Scalar, UnsupportedRun
from .numpy_models import MLP, AdamW, Transformer

try:  # threadpoolctl sets BLAS threads at run time; without it they stay as the environment set them
    import threadpoolctl
except ImportError:  # pragma: no cover - depends on the installation
    threadpoolctl = None


@dataclass
class DecoderState:
    """KV caches, the tokens generated so far (B, n) and the next absolute position."""

    caches: list[dict[str, Any]]
    generated: list[np.ndarray]
    position: int


class MLPTrainer:
    """Trains the MLP classifier on fixed synthetic batches with softmax cross-entropy and AdamW."""

    BATCHES = 8  # a small fixed set, cycled, so the loss can fall within a short run

    def __init__(self, workload: Workload, shape: Shape, seed: int, lr: float) -> None:
        self.model = MLP.create(workload, seed)
        self.parameters = sum(w.size + b.size for w, b in self.model.layers)
        self.x, self.y = workloads.features(workload, shape, seed, self.BATCHES)
        self.batch_size = shape.batch_size
        self.optimizer = AdamW([p for layer in self.model.layers for p in layer], lr)
        self._keep: list[np.ndarray] = []
        self._grads: list[tuple[np.ndarray, np.ndarray]] = []

    def data(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        i = (step % self.BATCHES) * self.batch_size
        # A copy, as a real loader would hand over a fresh buffer.
        return self.x[i : i + self.batch_size].copy(), self.y[i : i + self.batch_size].copy()

    def forward(self, batch: tuple[np.ndarray, np.ndarray]) -> tuple[float, np.ndarray]:
        x, y = batch
        self._keep = []
        logits = self.model.forward(x, self._keep)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        probs = np.exp(log_probs)
        probs[np.arange(y.size), y] -= 1.0  # d(mean CE)/d(logits) = (softmax - onehot) / N
        return float(-log_probs[np.arange(y.size), y].mean()), (probs / y.size).astype(np.float32)

    def backward(self, loss: tuple[float, np.ndarray]) -> None:
        self._grads = self.model.backward(self._keep, loss[1])

    def optimizer_step(self) -> None:
        self.optimizer.step([g for pair in self._grads for g in pair])

    def loss_value(self, loss: tuple[float, np.ndarray]) -> float:
        return loss[0]


class NumpyBackend:
    """Backend on NumPy's BLAS, CPU only."""

    name = "numpy"

    def __init__(self, device: str = "cpu") -> None:
        if device != "cpu":
            raise UnsupportedRun("the numpy backend runs on the CPU only; use --backend torch for cuda")
        self.device = device
        self._limits: Any = None
        self._rss_reset = False

    def check(self, phase: str, workload: Workload, precision: str) -> None:
        if precision != "fp32":
            raise UnsupportedRun(f"the numpy backend runs fp32 only, not {precision}: use --backend torch")
        if phase == "training" and workload.is_transformer:
            raise UnsupportedRun(
                f"the numpy backend trains mlp-classifier only, not {workload.name}: use --backend torch"
            )

    def configure(self, threads: int, precision: str) -> None:
        if threadpoolctl is not None:
            self._limits = threadpoolctl.threadpool_limits(limits=threads, user_api="blas")

    def synchronize(self) -> None:
        return None

    def build(self, workload: Workload, precision: str, seed: int) -> MLP | Transformer:
        return Transformer.create(workload, seed) if workload.is_transformer else MLP.create(workload, seed)

    def device_uuid(self) -> str | None:
        return None

    def to_device(self, array: np.ndarray) -> np.ndarray:
        return array

    def forward(self, model: Any, inputs: Any) -> np.ndarray:
        return model.forward(inputs)  # type: ignore[no-any-return]

    def prefill(self, model: Any, prompts: Any, output_tokens: int) -> DecoderState:
        caches = model.new_caches(prompts.shape[0], prompts.shape[1] + output_tokens)
        logits = model.forward(prompts, caches, 0)
        return DecoderState(caches, [np.argmax(logits[:, -1], axis=-1)], prompts.shape[1])

    def decode(self, model: Any, state: DecoderState) -> None:
        logits = model.forward(state.generated[-1][:, None], state.caches, state.position)
        state.generated.append(np.argmax(logits[:, -1], axis=-1))
        state.position += 1

    def predictions(self, output: Any) -> np.ndarray:
        if isinstance(output, DecoderState):
            return np.stack(output.generated, axis=1)
        return np.asarray(np.argmax(output, axis=-1))

    def trainer(self, workload: Workload, shape: Shape, precision: str, seed: int, lr: float) -> MLPTrainer:
        self.check("training", workload, precision)
        return MLPTrainer(workload, shape, seed, lr)

    def settings(self) -> dict[str, Scalar]:
        out: dict[str, Scalar] = {"runner.backend": "numpy", "numpy.dtype": "float32"}
        if threadpoolctl is None:
            out["numpy.blas_threads"] = None
            out["numpy.blas_threads_note"] = "threadpoolctl not installed: BLAS threads as the environment set"
            return out
        for pool in threadpoolctl.threadpool_info():
            if pool.get("user_api") == "blas":
                out["numpy.blas"] = f"{pool.get('internal_api')} {pool.get('version')}"
                out["numpy.blas_threads"] = int(pool.get("num_threads", 0))
                out["numpy.blas_architecture"] = str(pool.get("architecture"))
        return out

    def precision_section(self, phase: str, precision: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "weights": "fp32",
            "activations": "fp32",
            "accumulation": "fp32",
            "kv_cache": None,
            "quantization": None,
        }
        if phase == "training":
            out.update(master_weights="fp32", loss_scaling=None)
        return out

    def kv_cache_format(self, precision: str) -> str:
        return "fp32"

    def reset_peak_memory(self) -> None:
        self._rss_reset = telemetry.reset_peak_rss()

    def peak_memory(self) -> tuple[int | None, str | None, str | None]:
        value, note = telemetry.peak_rss(self._rss_reset)
        return value, "host-rss", note

    def peak_tflops(self, precision: str) -> tuple[float | None, str]:
        a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
        return telemetry.measured_peak_tflops(lambda: a @ a, 2.0 * 1024**3, "1024² fp32 numpy matmul")
