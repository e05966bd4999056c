"""The bundled workloads written in plain NumPy (fp32): an MLP, and a pre-LN transformer used both as the
encoder and, with a causal mask and a KV cache, as the decoder.

Weights are drawn from a seeded generator; positions are sinusoidal, so any sequence length works and no
parameters depend on the shape. Only the MLP has a backward pass (manual, with AdamW), which is what the
NumPy backend can train; transformer training needs the PyTorch backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from ..workloads import FFN_MULTIPLIER, Workload

F32 = np.float32
Arr = np.ndarray


def sinusoidal(positions: Arr, dim: int) -> Arr:
    """Sinusoidal position encodings (Vaswani et al. 2017), shape (len(positions), dim)."""
    rates = np.exp(-np.log(10000.0) * np.arange(0, dim, 2) / dim)
    angles = positions[:, None].astype(np.float64) * rates[None, :]
    out = np.empty((positions.size, dim), dtype=F32)
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out


def gelu(x: Arr) -> Arr:
    out: Arr = 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
    return out


def layer_norm(x: Arr, g: Arr, b: Arr) -> Arr:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    out: Arr = ((x - mean) / np.sqrt(var + 1e-5) * g + b).astype(F32)
    return out


def softmax(x: Arr) -> Arr:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out: Arr = e / e.sum(axis=-1, keepdims=True)
    return out


@dataclass
class MLP:
    """ReLU MLP; `layers` holds (weight (in, out), bias (out,)) pairs."""

    layers: list[tuple[Arr, Arr]]

    @classmethod
    def create(cls, workload: Workload, seed: int) -> MLP:
        rng = np.random.default_rng(seed)
        dims = workload.mlp_dims()
        return cls(
            [
                ((rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(F32), np.zeros(b, F32))
                for a, b in pairwise(dims)
            ]
        )

    def forward(self, x: Arr, keep: list[Arr] | None = None) -> Arr:
        """Logits; if `keep` is given, the input of every layer is appended to it (for backward)."""
        for i, (w, b) in enumerate(self.layers):
            if keep is not None:
                keep.append(x)
            x = x @ w + b
            if i < len(self.layers) - 1:
                x = np.maximum(x, 0.0)
        return x

    def backward(self, keep: list[Arr], grad: Arr) -> list[tuple[Arr, Arr]]:
        """Gradients of every (weight, bias) given d(loss)/d(logits) and the inputs kept by forward."""
        grads: list[tuple[Arr, Arr]] = []
        for i in range(len(self.layers) - 1, -1, -1):
            x = keep[i]
            grads.append((x.T @ grad, grad.sum(axis=0)))
            if i > 0:
                grad = (grad @ self.layers[i][0].T) * (x > 0)  # ReLU' of the previous layer's output
        return grads[::-1]


@dataclass
class AdamW:
    """AdamW (Loshchilov & Hutter) over a list of arrays, updated in place."""

    params: list[Arr]
    lr: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.01
    step_count: int = 0
    m: list[Arr] = field(default_factory=list)
    v: list[Arr] = field(default_factory=list)

    def step(self, grads: list[Arr]) -> None:
        if not self.m:
            self.m = [np.zeros_like(p) for p in self.params]
            self.v = [np.zeros_like(p) for p in self.params]
        self.step_count += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1**self.step_count, 1 - b2**self.step_count
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            p *= 1 - self.lr * self.weight_decay
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            p -= (self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)).astype(F32)


def _new_block(normal: Callable[[int, int], Arr], d: int, f: int) -> dict[str, Arr]:
    """One transformer block's parameters; `normal` draws the weights (in this order: wqkv, wo, w1, w2)."""
    return {
        "ln1_g": np.ones(d, F32),
        "ln1_b": np.zeros(d, F32),
        "wqkv": normal(d, 3 * d),
        "bqkv": np.zeros(3 * d, F32),
        "wo": normal(d, d),
        "bo": np.zeros(d, F32),
        "ln2_g": np.ones(d, F32),
        "ln2_b": np.zeros(d, F32),
        "w1": normal(d, f),
        "b1": np.zeros(f, F32),
        "w2": normal(f, d),
        "b2": np.zeros(d, F32),
    }


@dataclass
class Transformer:
    """Pre-LN transformer with tied input/output embeddings; `causal` makes it a decoder."""

    embedding: Arr
    blocks: list[dict[str, Arr]]
    final_norm: tuple[Arr, Arr]
    heads: int
    causal: bool

    @classmethod
    def create(cls, workload: Workload, seed: int) -> Transformer:
        assert workload.vocabulary_size is not None and workload.attention_heads is not None
        rng = np.random.default_rng(seed)
        d, f = workload.hidden_size, FFN_MULTIPLIER * workload.hidden_size

        def normal(*shape: int) -> Arr:
            return (rng.standard_normal(shape) * 0.02).astype(F32)

        blocks = [_new_block(normal, d, f) for _ in range(workload.layers)]
        return cls(
            normal(workload.vocabulary_size, d),
            blocks,
            (np.ones(d, F32), np.zeros(d, F32)),
            workload.attention_heads,
            workload.is_decoder,
        )

    def _split(self, x: Arr) -> Arr:  # (B, S, D) -> (B, H, S, D/H)
        b, s, d = x.shape
        return x.reshape(b, s, self.heads, d // self.heads).transpose(0, 2, 1, 3)

    def _attention(self, q: Arr, k: Arr, v: Arr, offset: int) -> Arr:
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1]).astype(F32)
        if self.causal:  # query i (at absolute position offset + i) sees keys 0 .. offset + i
            qi = np.arange(q.shape[2])[:, None] + offset
            scores = np.where(np.arange(k.shape[2])[None, :] <= qi, scores, F32(-1e30))
        out = softmax(scores) @ v
        b, h, s, dh = out.shape
        merged: Arr = out.transpose(0, 2, 1, 3).reshape(b, s, h * dh)
        return merged

    def _block(self, blk: dict[str, Arr], x: Arr, cache: dict[str, Any] | None, offset: int) -> Arr:
        qkv = layer_norm(x, blk["ln1_g"], blk["ln1_b"]) @ blk["wqkv"] + blk["bqkv"]
        q, k, v = (self._split(t) for t in np.split(qkv, 3, axis=-1))
        if cache is not None:  # write this step's keys/values, attend over everything so far
            end = offset + k.shape[2]
            cache["k"][:, :, offset:end], cache["v"][:, :, offset:end] = k, v
            k, v = cache["k"][:, :, :end], cache["v"][:, :, :end]
        x = x + self._attention(q, k, v, offset) @ blk["wo"] + blk["bo"]
        h = gelu(layer_norm(x, blk["ln2_g"], blk["ln2_b"]) @ blk["w1"] + blk["b1"])
        out: Arr = (x + h @ blk["w2"] + blk["b2"]).astype(F32)
        return out

    def forward(self, tokens: Arr, caches: list[dict[str, Any]] | None = None, offset: int = 0) -> Arr:
        """Logits (B, S, V) for token ids (B, S) at absolute positions offset .. offset + S - 1."""
        d = self.embedding.shape[1]
        x = self.embedding[tokens] + sinusoidal(np.arange(offset, offset + tokens.shape[1]), d)
        for i, blk in enumerate(self.blocks):
            x = self._block(blk, x, None if caches is None else caches[i], offset)
        logits: Arr = layer_norm(x, *self.final_norm) @ self.embedding.T
        return logits

    def new_caches(self, batch: int, length: int) -> list[dict[str, Any]]:
        d = self.embedding.shape[1]
        shape = (batch, self.heads, length, d // self.heads)
        return [{"k": np.zeros(shape, F32), "v": np.zeros(shape, F32)} for _ in self.blocks]
