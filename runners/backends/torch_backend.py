"""The PyTorch backend (CPU and CUDA): fp32, bf16/fp16 autocast, dynamic int8 (CPU) and fp8 (CUDA, sm ≥ 8.9).

fp32 means fp32: TF32 is switched off and float32 matmul precision set to "highest", explicitly, and both
are recorded, because a silent TF32 default changes fp32 results by up to 3 decimal digits.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import telemetry, workloads
from ..workloads import Shape, Workload
from . import torch_models
from .base import Scalar, UnsupportedRun

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.bfloat16}
FORMAT = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "int8": "int8", "fp8": "fp8-e4m3"}

# Dense (no sparsity) datasheet peaks in TFLOPS, by model-name fragment and precision. Only what NVIDIA
# publishes; a GPU not listed gets no MFU rather than a guessed peak.
DATASHEET_TFLOPS: dict[str, dict[str, float]] = {
    "H100 80GB HBM3": {"fp32": 67.0, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},  # SXM5
    "H100 PCIe": {"fp32": 51.2, "bf16": 756.0, "fp16": 756.0, "fp8": 1513.0},
    "H200": {"fp32": 67.0, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
    "A100": {"fp32": 19.5, "bf16": 312.0, "fp16": 312.0},
    "L40S": {"fp32": 91.6, "bf16": 362.05, "fp16": 362.05, "fp8": 733.0},
    "L4": {"fp32": 30.3, "bf16": 121.0, "fp16": 121.0, "fp8": 242.5},
}


@dataclass
class DecoderState:
    caches: list[dict[str, Any]]
    generated: list[torch.Tensor]
    position: int


class TorchTrainer:
    """Trains a workload with AdamW on fixed synthetic batches; fp16 uses dynamic loss scaling."""

    BATCHES = 8

    def __init__(
        self, backend: TorchBackend, workload: Workload, shape: Shape, precision: str, seed: int, lr: float
    ) -> None:
        torch.manual_seed(seed)
        self.backend, self.workload, self.shape = backend, workload, shape
        self.model = torch_models.build(workload).to(backend.device).train()
        self.parameters = sum(p.numel() for p in self.model.parameters())
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler(backend.device, enabled=precision == "fp16")
        self.precision = precision
        self._host = self._batches(seed)

    def _batches(self, seed: int) -> list[torch.Tensor]:
        w, s, n = self.workload, self.shape, self.BATCHES
        if not w.is_transformer:
            x, y = workloads.features(w, s, seed, n)
            host = [torch.from_numpy(x), torch.from_numpy(y)]
        else:
            host = [torch.from_numpy(workloads.tokens(w, s, seed, n))]
            if not w.is_decoder:
                host.append(torch.from_numpy(workloads.mlm_mask(s, seed, n)))
        # Pinned host memory makes the data phase a true asynchronous copy on GPUs.
        return [t.pin_memory() if self.backend.device == "cuda" else t for t in host]

    def data(self, step: int) -> list[torch.Tensor]:
        i = (step % self.BATCHES) * self.shape.batch_size
        return [t[i : i + self.shape.batch_size].to(self.backend.device, non_blocking=True) for t in self._host]

    def forward(self, batch: list[torch.Tensor]) -> torch.Tensor:
        with self.backend.autocast(self.precision):
            if not self.workload.is_transformer:
                return F.cross_entropy(self.model(batch[0]), batch[1])
            if self.workload.is_decoder:  # next-token prediction
                logits = self.model(batch[0][:, :-1])
                return F.cross_entropy(logits.flatten(0, 1).float(), batch[0][:, 1:].flatten())
            tokens, mask = batch
            logits = self.model(tokens.masked_fill(mask, 0))  # token 0 doubles as [MASK]
            return F.cross_entropy(logits[mask].float(), tokens[mask])

    def backward(self, loss: torch.Tensor) -> None:
        self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]

    def optimizer_step(self) -> None:
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)

    def loss_value(self, loss: torch.Tensor) -> float:
        return float(loss.detach().float().item())


# What int8 and fp8 change in the precision section (the other precisions: weights, accumulation fp32).
_QUANTIZED_PRECISION: dict[str, dict[str, Any]] = {
    "int8": {
        "weights": "int8",
        "activations": "fp32",
        "accumulation": "int32",
        "quantization": {
            "method": "dynamic",
            "granularity": "per-tensor",
            "library": "torch.ao.quantization",
            "notes": "weights int8 ahead of time; activations quantized per batch at run time",
        },
    },
    "fp8": {
        "weights": "fp8-e4m3",
        "quantization": {
            "method": "dynamic",
            "granularity": "per-tensor",
            "library": "torch._scaled_mm",
            "notes": "Linear layers with dimensions divisible by 16; other ops bf16 autocast",
        },
    },
}


def _cuda_settings() -> dict[str, Scalar]:
    return {
        "torch.backends.cudnn.enabled": torch.backends.cudnn.enabled,
        "torch.backends.cudnn.benchmark": torch.backends.cudnn.benchmark,
        "torch.backends.cuda.flash_sdp_enabled": torch.backends.cuda.flash_sdp_enabled(),  # type: ignore[no-untyped-call]
        "torch.backends.cuda.mem_efficient_sdp_enabled": torch.backends.cuda.mem_efficient_sdp_enabled(),  # type: ignore[no-untyped-call]
        "torch.backends.cuda.math_sdp_enabled": torch.backends.cuda.math_sdp_enabled(),  # type: ignore[no-untyped-call]
    }


class TorchBackend:
    """PyTorch on "cpu" or "cuda"."""

    name = "torch"

    def __init__(self, device: str = "cpu") -> None:
        if device == "cuda" and not torch.cuda.is_available():
            raise UnsupportedRun("--device cuda but torch sees no CUDA device (CPU build or no driver)")
        self.device = device
        self._precision: str | None = None
        self._rss_reset = False

    def check(self, phase: str, workload: Workload, precision: str) -> None:
        if precision not in FORMAT:
            raise UnsupportedRun(f"unknown precision {precision!r} (known: {', '.join(FORMAT)})")
        if precision == "int8" and (self.device != "cpu" or phase != "inference"):
            raise UnsupportedRun("dynamic int8 is a CPU inference precision (torch.ao dynamic quantization)")
        if precision == "fp8" and (phase != "inference" or not self._has_fp8()):
            raise UnsupportedRun("fp8 needs CUDA compute capability >= 8.9 (Ada/Hopper) and is inference-only")

    def _has_fp8(self) -> bool:
        return self.device == "cuda" and torch.cuda.get_device_capability() >= (8, 9)

    def configure(self, threads: int, precision: str) -> None:
        self._precision = precision
        torch.set_num_threads(threads)
        # fp32 means fp32 (see module docstring); reduced precisions say so through autocast instead.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")

    def synchronize(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def device_uuid(self) -> str | None:
        if self.device != "cuda":
            return None
        uuid = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", None)
        return str(uuid) if uuid is not None else None

    def autocast(self, precision: str) -> Any:
        if precision in AUTOCAST:
            return torch.autocast(device_type=self.device, dtype=AUTOCAST[precision])
        return nullcontext()

    def build(self, workload: Workload, precision: str, seed: int) -> nn.Module:
        torch.manual_seed(seed)
        model = torch_models.build(workload).eval()
        if precision == "int8":
            from torch.ao.quantization import quantize_dynamic

            with warnings.catch_warnings():  # deprecated in favour of torchao, which is not a dependency
                warnings.simplefilter("ignore")
                model = quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)  # type: ignore[no-untyped-call]
        else:
            model = model.to(self.device)
            if precision == "fp8":
                model = torch_models.to_fp8(model)
        # Read by _inference: autocast goes with the model (a reference fp32 model runs beside it).
        model.benchreg_precision = precision  # type: ignore[assignment]
        return model

    def to_device(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array).to(self.device)

    @contextmanager
    def _inference(self, model: Any) -> Iterator[None]:
        with torch.inference_mode(), self.autocast(getattr(model, "benchreg_precision", "fp32")):
            yield

    def forward(self, model: Any, inputs: Any) -> torch.Tensor:
        with self._inference(model):
            return model(inputs)  # type: ignore[no-any-return]

    def prefill(self, model: Any, prompts: Any, output_tokens: int) -> DecoderState:
        caches: list[dict[str, Any]] = [{"length": prompts.shape[1] + output_tokens} for _ in model.blocks]
        with self._inference(model):
            logits = model(prompts, caches, 0)
            return DecoderState(caches, [logits[:, -1].argmax(dim=-1)], prompts.shape[1])

    def decode(self, model: Any, state: DecoderState) -> None:
        with self._inference(model):
            logits = model(state.generated[-1][:, None], state.caches, state.position)
            state.generated.append(logits[:, -1].argmax(dim=-1))
        state.position += 1

    def predictions(self, output: Any) -> np.ndarray:
        if isinstance(output, DecoderState):
            return torch.stack(output.generated, dim=1).cpu().numpy()
        return output.float().argmax(dim=-1).cpu().numpy()  # type: ignore[no-any-return]

    def trainer(self, workload: Workload, shape: Shape, precision: str, seed: int, lr: float) -> TorchTrainer:
        self.check("training", workload, precision)
        return TorchTrainer(self, workload, shape, precision, seed, lr)

    def settings(self) -> dict[str, Scalar]:
        out: dict[str, Scalar] = {
            "runner.backend": "torch",
            "torch.num_threads": torch.get_num_threads(),
            "torch.num_interop_threads": torch.get_num_interop_threads(),
            "torch.float32_matmul_precision": torch.get_float32_matmul_precision(),
            "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
            ),
            "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
            ),
            "torch.backends.mkldnn.enabled": bool(torch.backends.mkldnn.enabled),
            "torch.backends.quantized.engine": torch.backends.quantized.engine,
            "torch.backends.cpu.capability": torch.backends.cpu.get_cpu_capability(),
            "torch.deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "torch.autocast": str(AUTOCAST[self._precision]).removeprefix("torch.")
            if self._precision in AUTOCAST
            else None,
        }
        if self.device == "cuda":
            out.update(_cuda_settings())
        return out

    def precision_section(self, phase: str, precision: str) -> dict[str, Any]:
        fmt = FORMAT[precision]
        out: dict[str, Any] = {
            "weights": "fp32",
            "activations": fmt,
            "accumulation": "fp32",
            "kv_cache": None,
            "quantization": None,
        }
        out.update(copy.deepcopy(_QUANTIZED_PRECISION.get(precision, {})))
        if phase == "training":
            out.update(master_weights="fp32", loss_scaling="dynamic" if precision == "fp16" else None)
        return out

    def kv_cache_format(self, precision: str) -> str:
        """The format the KV cache is stored in: what the key/value projections produce."""
        return {"bf16": "bf16", "fp16": "fp16", "fp8": "bf16"}.get(precision, "fp32")

    def reset_peak_memory(self) -> None:
        if self.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        else:
            self._rss_reset = telemetry.reset_peak_rss()

    def peak_memory(self) -> tuple[int | None, str | None, str | None]:
        if self.device == "cuda":
            return int(torch.cuda.max_memory_allocated()), "device", None
        value, note = telemetry.peak_rss(self._rss_reset)
        return value, "host-rss", note

    def peak_tflops(self, precision: str) -> tuple[float | None, str]:
        if self.device == "cuda":
            name = torch.cuda.get_device_name()
            for fragment, peaks in DATASHEET_TFLOPS.items():
                if fragment in name and precision in peaks:
                    return peaks[precision], f"NVIDIA {fragment} datasheet, {precision} dense"
            return None, f"no datasheet peak on file for {name} at {precision}"
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
        a = torch.randn(1024, 1024, dtype=dtype)
        return telemetry.measured_peak_tflops(
            lambda: a @ a,
            2.0 * 1024**3,
            f"1024² {FORMAT.get(precision, precision)} torch.mm, {torch.get_num_threads()} threads",
        )
