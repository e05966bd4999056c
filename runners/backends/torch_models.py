"""The bundled workloads as PyTorch modules: the MLP, a pre-LN transformer (encoder, or causal decoder with
a preallocated KV cache), and an FP8 linear layer for GPUs with FP8 tensor cores (compute capability ≥ 8.9).

Same architecture as runners/backends/numpy_models.py: sinusoidal positions, tied embeddings, GELU MLP.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..workloads import FFN_MULTIPLIER, Workload

FP8_MAX = 448.0  # largest finite float8_e4m3fn value


def sinusoidal(positions: Tensor, dim: int) -> Tensor:
    rates = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, device=positions.device) / dim)
    angles = positions[:, None].float() * rates[None, :]
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)


class MLP(nn.Sequential):
    """ReLU MLP classifier."""

    def __init__(self, workload: Workload) -> None:
        dims = workload.mlp_dims()
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(pairwise(dims)):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        super().__init__(*layers)


class Block(nn.Module):
    """One pre-LN transformer block; with a cache dict it writes and reads keys/values there."""

    def __init__(self, d: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, FFN_MULTIPLIER * d), nn.Linear(FFN_MULTIPLIER * d, d)

    def _split(self, t: Tensor) -> Tensor:
        b, s, d = t.shape
        return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x: Tensor, cache: dict[str, Any] | None = None, offset: int = 0) -> Tensor:
        q, k, v = (self._split(t) for t in self.qkv(self.ln1(x)).chunk(3, dim=-1))
        if cache is not None:
            if "k" not in cache:  # allocate on first use, in the dtype the projections produce
                shape = (k.shape[0], k.shape[1], cache["length"], k.shape[3])
                cache["k"], cache["v"] = k.new_zeros(shape), v.new_zeros(shape)
            end = offset + k.shape[2]
            cache["k"][:, :, offset:end], cache["v"][:, :, offset:end] = k, v
            k, v = cache["k"][:, :, :end], cache["v"][:, :, :end]
        # A single new query attends to every cached key, so only the prompt pass needs the causal mask.
        causal = self.causal and q.shape[2] > 1
        attn = F.scaled_dot_product_attention(q, k.to(q.dtype), v.to(q.dtype), is_causal=causal)
        x = x + self.out(attn.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1))
        out: Tensor = x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return out


class Transformer(nn.Module):
    """Encoder (bidirectional) or decoder (causal) transformer with tied input/output embeddings."""

    def __init__(self, workload: Workload) -> None:
        super().__init__()
        assert workload.vocabulary_size is not None and workload.attention_heads is not None
        d = workload.hidden_size
        self.embedding = nn.Embedding(workload.vocabulary_size, d)
        self.blocks = nn.ModuleList(
            Block(d, workload.attention_heads, workload.is_decoder) for _ in range(workload.layers)
        )
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, workload.vocabulary_size, bias=False)
        self.head.weight = self.embedding.weight
        for p in self.parameters():  # GPT-2 style small init keeps random-weight logits well spread
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens: Tensor, caches: list[dict[str, Any]] | None = None, offset: int = 0) -> Tensor:
        positions = torch.arange(offset, offset + tokens.shape[1], device=tokens.device)
        x = self.embedding(tokens) + sinusoidal(positions, self.embedding.embedding_dim)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i], offset)
        return self.head(self.norm(x))  # type: ignore[no-any-return]


def build(workload: Workload) -> nn.Module:
    return Transformer(workload) if workload.is_transformer else MLP(workload)


class FP8Linear(nn.Module):
    """Linear layer with e4m3 weights and activations, per-tensor scales, bf16 output, via torch._scaled_mm.

    Weights are scaled once; activations get a dynamic per-tensor scale on every call (the recipe of
    Micikevicius et al. 2022, "FP8 formats for deep learning", without delayed scaling).
    """

    weight_fp8: Tensor
    weight_scale: Tensor
    bias: Tensor | None

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        scale = weight.abs().max().clamp(min=1e-12) / FP8_MAX
        self.register_buffer("weight_fp8", (weight / scale).to(torch.float8_e4m3fn))
        self.register_buffer("weight_scale", scale)
        bias = None if linear.bias is None else linear.bias.detach().to(torch.bfloat16)
        self.register_buffer("bias", bias)

    def forward(self, x: Tensor) -> Tensor:
        flat = x.reshape(-1, x.shape[-1])
        scale = flat.abs().max().float().clamp(min=1e-12) / FP8_MAX
        quantized = (flat / scale).to(torch.float8_e4m3fn)
        out = torch._scaled_mm(
            quantized,
            self.weight_fp8.t(),
            scale_a=scale,
            scale_b=self.weight_scale,
            bias=self.bias,
            out_dtype=torch.bfloat16,
        )
        return out.reshape(*x.shape[:-1], out.shape[-1])


def to_fp8(module: nn.Module) -> nn.Module:
    """Replace every Linear whose dimensions FP8 GEMMs accept (multiples of 16) by an FP8Linear."""
    for name, child in module.named_children():
        if isinstance(child, nn.Linear) and child.in_features % 16 == 0 and child.out_features % 16 == 0:
            setattr(module, name, FP8Linear(child))
        else:
            to_fp8(child)
    return module
