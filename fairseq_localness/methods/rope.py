"""Rotary position embedding (RoPE): Su et al. (2021), "RoFormer: Enhanced Transformer with Rotary Position
Embedding", arXiv:2104.09864 (equation numbers of that arXiv text).

Queries and keys are rotated by their absolute positions, so that their dot product depends on the positions only
through m - n:

    f_{q,k}(x_m, m) = R^d_{Theta,m} W_{q,k} x_m                                   (Eq. 14)
    R^d_{Theta,m} = block-diagonal 2x2 rotations by m theta_k of the dimension pairs (2k, 2k+1),
    Theta = {theta_k = 10000^(-2(k-1)/d), k = 1..d/2}                              (Eq. 15)
    q_m^T k_n = (W_q x_m)^T R^d_{Theta,n-m} W_k x_n                               (Eq. 16)
    R^d_{Theta,m} x = x * (cos m theta_1, cos m theta_1, ..., cos m theta_{d/2}, cos m theta_{d/2})
                    + (-x_2, x_1, -x_4, x_3, ...) * (sin m theta_1, sin m theta_1, ...)      (Eq. 34)

d is the head dimension (each head rotates its own q and k). RoPE is not an additive bias: it uses the core's
``transform_qk`` hook, which runs before the keys enter fairseq's incremental cache, so a cached key stays rotated
by its own absolute position and a new query by its own; the cache is reordered with the beam like any key.

Our readings: positions count from 0 at each sentence's first real token (padding ignored), in the encoder as in
the decoder; RoFormer replaces the additive position encoding, so the architecture drops fairseq's sinusoidal
embeddings; cross attention (two sequences, no common position) is refused. The rotation is computed in float32
and cast back, so half-precision models rotate position 1,000 as exactly as float32 ones.

RoPE runs with every attention backend, FlexAttention included: the rotation happens before the kernel (and before
caching), so the kernel only ever sees rotated queries and keys and RoPE adds no term to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Tuple

import torch
from torch import Tensor

from ..attention.errors import LocalityConfigError
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method


def rotate(x: Tensor, positions: Tensor, base: float = 10000.0) -> Tensor:
    """R^d_{Theta,m} x (Eq. 34) of x (B, H, T, d) at positions m (B, T), in float32, cast back to x's dtype."""
    d = x.size(-1)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)  # theta_k, Eq. 15
    angle = positions.float()[:, None, :, None] * theta  # m theta_k, (B, 1, T, d/2)
    cos, sin = angle.cos(), angle.sin()
    pairs = x.float().unflatten(-1, (d // 2, 2))  # (x_{2k}, x_{2k+1})
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@dataclass
class RopeOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (RoFormer: every layer)"})
    attention: str = field(
        default="encoder,decoder", metadata={"help": "self-attention types: encoder, decoder (cross is not defined)"}
    )
    base: float = field(default=10000.0, metadata={"help": "theta_k = base^(-2(k-1)/d) (RoFormer: 10000, Eq. 15)"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if "cross" in self.attention_types():
            raise LocalityConfigError(
                f"--{method}-attention: RoPE rotates queries and keys by their positions in one sequence and is not "
                "defined for cross attention; use encoder and/or decoder"
            )
        if self.base <= 1:
            raise LocalityConfigError(f"--{method}-base must be > 1, got {self.base}")


@register_locality_method("rope")
class RotaryPositions(LocalityMethod):
    """Queries and keys of every head rotated by their absolute positions (Su et al. 2021); no parameters."""

    Options = RopeOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: RopeOptions, spec):
        super().__init__(options, spec)
        if spec.head_dim % 2:
            raise LocalityConfigError(
                f"--rope-attention: RoPE rotates pairs of dimensions, but {spec.attn_type} attention has an odd head "
                f"dimension {spec.head_dim} ({spec.embed_dim} / {spec.num_heads} heads)"
            )

    def transform_qk(self, q: Tensor, k: Tensor, query_positions: Tensor, key_positions: Tensor) -> Tuple[Tensor, Tensor]:
        return rotate(q, query_positions, self.options.base), rotate(k, key_positions, self.options.base)
