"""The bundled workloads: what each model is, its default shape, its synthetic data and its FLOP count.

Backends build the models from these definitions, so a workload means the same architecture whichever
backend runs it. Data is synthetic and deterministic (a seeded generator), and learnable, so that the
training check "the loss goes down" has something to learn: tokens follow t[i+1] = (5 t[i] + 3) mod V
from a random start, and class labels come from a fixed random linear teacher.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import numpy as np

FFN_MULTIPLIER = 4  # transformer MLP width = 4 × hidden, as in BERT/GPT-2


@dataclass(frozen=True)
class Shape:
    """The shape of one query (inference) or one step (training)."""

    batch_size: int
    sequence_length: int | None = None
    output_tokens: int | None = None
    input_features: int | None = None

    def section(self, phase: str) -> dict[str, Any]:
        """The protocol's `workload.shape`: only the fields that apply."""
        out: dict[str, Any] = {"batch_size": self.batch_size}
        if phase == "training":
            out.update(micro_batch_size=self.batch_size, gradient_accumulation_steps=1)
        for key in ("sequence_length", "output_tokens", "input_features"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class Workload:
    """A model architecture with its task, synthetic dataset and default shape."""

    name: str
    task: str
    architecture: str
    layers: int
    hidden_size: int
    dataset: str
    default_shape: Shape
    attention_heads: int | None = None
    vocabulary_size: int | None = None
    classes: int | None = None
    version: str = "1.0"

    @property
    def is_decoder(self) -> bool:
        return self.architecture == "decoder-transformer"

    @property
    def is_transformer(self) -> bool:
        return self.attention_heads is not None

    def shape(self, batch_size: int, sequence_length: int | None = None, output_tokens: int | None = None) -> Shape:
        """The default shape with the given batch size and optional overrides."""
        base = self.default_shape
        return replace(
            base,
            batch_size=batch_size,
            sequence_length=sequence_length or base.sequence_length,
            output_tokens=output_tokens or base.output_tokens,
        )

    def mlp_dims(self) -> list[int]:
        """Layer widths of the MLP classifier: input, hidden × (layers - 1), classes."""
        assert self.default_shape.input_features is not None and self.classes is not None
        return [self.default_shape.input_features, *[self.hidden_size] * (self.layers - 1), self.classes]

    def parameters(self) -> int:
        """Parameter count of the architecture as both backends build it (tied embeddings counted once)."""
        if not self.is_transformer:
            dims = self.mlp_dims()
            return sum(a * b + b for a, b in pairwise(dims))
        assert self.vocabulary_size is not None
        d, f = self.hidden_size, FFN_MULTIPLIER * self.hidden_size
        block = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d)  # 2 LNs, qkv, out, MLP
        return self.vocabulary_size * d + self.layers * block + 2 * d


WORKLOADS: dict[str, Workload] = {
    "mlp-classifier": Workload(
        name="mlp-classifier",
        task="classification",
        architecture="mlp",
        layers=4,
        hidden_size=2048,
        dataset="synthetic-features",
        classes=10,
        default_shape=Shape(batch_size=32, input_features=1024),
    ),
    # Small enough that its step is a few milliseconds on one CPU core: distributed runs of several ranks on a shared
    # machine (and their truth tests) measure the injected or communication times, not contention over one core.
    "mlp-tiny": Workload(
        name="mlp-tiny",
        task="classification",
        architecture="mlp",
        layers=3,
        hidden_size=64,
        dataset="synthetic-features",
        classes=10,
        default_shape=Shape(batch_size=16, input_features=64),
    ),
    "encoder-small": Workload(
        name="encoder-small",
        task="masked-language-modeling",
        architecture="encoder-transformer",
        layers=4,
        hidden_size=256,
        attention_heads=4,
        vocabulary_size=2048,
        dataset="synthetic-tokens",
        default_shape=Shape(batch_size=32, sequence_length=128),
    ),
    "decoder-small": Workload(
        name="decoder-small",
        task="text-generation",
        architecture="decoder-transformer",
        layers=6,
        hidden_size=512,
        attention_heads=8,
        vocabulary_size=12288,
        dataset="synthetic-prompts",
        default_shape=Shape(batch_size=8, sequence_length=256, output_tokens=64),
    ),
}


def get(name: str) -> Workload:
    """The workload called `name`; ValueError naming the known ones otherwise."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})") from None


# --- synthetic data -------------------------------------------------------------------------------------


def features(workload: Workload, shape: Shape, seed: int, batches: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """`batches` batches of fp32 features (N, F) and teacher labels (N,), for the MLP classifier."""
    assert shape.input_features is not None and workload.classes is not None
    rng = np.random.default_rng(seed)
    teacher = np.random.default_rng(seed + 1).standard_normal((shape.input_features, workload.classes))
    x = rng.standard_normal((batches * shape.batch_size, shape.input_features)).astype(np.float32)
    return x, np.argmax(x @ teacher, axis=1).astype(np.int64)


def tokens(workload: Workload, shape: Shape, seed: int, batches: int = 1) -> np.ndarray:
    """`batches` batches of token sequences (N, S) following the learnable affine rule."""
    assert shape.sequence_length is not None and workload.vocabulary_size is not None
    vocab = workload.vocabulary_size
    rng = np.random.default_rng(seed)
    out = np.empty((batches * shape.batch_size, shape.sequence_length), dtype=np.int64)
    out[:, 0] = rng.integers(0, vocab, size=out.shape[0])
    for i in range(1, shape.sequence_length):
        out[:, i] = (5 * out[:, i - 1] + 3) % vocab
    return out


MASK_FRACTION = 0.15


def mlm_mask(shape: Shape, seed: int, batches: int = 1) -> np.ndarray:
    """Boolean mask (N, S) of the positions a masked-LM step must predict (15%, at least one per row)."""
    assert shape.sequence_length is not None
    rng = np.random.default_rng(seed + 2)
    mask = rng.random((batches * shape.batch_size, shape.sequence_length)) < MASK_FRACTION
    mask[:, 0] = True
    return mask


# --- FLOPs ----------------------------------------------------------------------------------------------


def _transformer_token_flops(w: Workload, context: int) -> float:
    """Forward matmul FLOPs for one token at `context` attended positions, including the output head."""
    assert w.vocabulary_size is not None
    d = w.hidden_size
    per_layer = 2 * (4 * d * d + 2 * FFN_MULTIPLIER * d * d) + 2 * 2 * context * d
    return float(w.layers * per_layer + 2 * d * w.vocabulary_size)


def forward_flops(w: Workload, shape: Shape) -> float:
    """Forward FLOPs (2 per multiply-add, matmuls only) of one batch: the prompt pass for a decoder."""
    if not w.is_transformer:
        dims = w.mlp_dims()
        return float(2 * shape.batch_size * sum(a * b for a, b in pairwise(dims)))
    assert shape.sequence_length is not None
    seq = shape.sequence_length
    return shape.batch_size * seq * _transformer_token_flops(w, seq)


def training_flops(w: Workload, shape: Shape) -> float:
    """FLOPs of one training step: forward + backward ≈ 3 × forward (Kaplan et al. 2020)."""
    return 3.0 * forward_flops(w, shape)
