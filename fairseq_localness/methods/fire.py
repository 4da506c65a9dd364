"""FIRE: Li et al. (2024), "Functional Interpolation for Relative Positions Improves Long Context Transformers",
ICLR.

A learned function of the progressively interpolated distance is added to the logits (we cite no section or
equation numbers because we could not check them):

    b(i, j) = f_theta( psi(i - j) / psi(max(L, i)) ),     psi(x) = log(c x + 1)

f_theta is an MLP from one input to one output per head: Linear(1, 32) -> ReLU -> Linear(32, H). c and the
threshold L are learned. Parameterisation and initialisation follow the PyTorch listing of the paper's appendix
(its defaults: mlp_width=32, init_c=0.1, init_L=512., eps=1e-6): L = |L_multiplier * init_L| with L_multiplier
learned from 1.0, psi computed as log(|c x| + 1), eps added to the normaliser psi(max(L, i)); the MLP keeps
PyTorch's default initialisation. Positions i, j count from 0 at each sentence's first real token.

Our readings: the paper's models are causal (j <= i, so i - j >= 0); in the bidirectional encoder the distance is
|i - j| and the normaliser stays psi(max(L, i)) of the query position i (so the MLP's input can exceed 1 there
only for sentences longer than L). Every attention layer has its own FIRE (MLP, c, L): the appendix listing
defines FIRE as one attention-bias module with nothing shared between layers (public reimplementations of the
listing build one per attention layer). ``share_layers=True`` shares one FIRE by all layers of a stack, the
layerwise sharing the paper discusses as a cheaper variant (which we could not re-read to confirm its results).
Cross attention is refused. Computed in float32 (half-precision models included).

Under FlexAttention f_theta is evaluated once per pair of sentence positions (i, j), an (H, S, S) table that every
sentence of the batch reads by its padding-aware positions, instead of once per (batch, query, key).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.sharing import shared_per_stack

#: the appendix listing's eps, added to psi(max(L, i))
EPS = 1e-6


class FireFunction(nn.Module):
    """f_theta, c and L of one FIRE: the bias (B, H, T, S) from distances |i - j| and query positions i."""

    def __init__(self, heads: int, width: int, init_c: float, init_l: float):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(1, width), nn.ReLU(), nn.Linear(width, heads))  # f_theta
        self.c = nn.Parameter(torch.tensor(float(init_c)))
        self.l_multiplier = nn.Parameter(torch.tensor(1.0))
        self.init_l = float(init_l)  # a constant of the parameterisation, not a parameter

    def threshold(self) -> Tensor:
        """L = |L_multiplier * init_L|."""
        return (self.l_multiplier.float() * self.init_l).abs()

    def psi(self, x: Tensor) -> Tensor:
        """psi(x) = log(|c x| + 1)."""
        return torch.log((self.c.float() * x).abs() + 1)

    def forward(self, distance: Tensor, query_position: Tensor) -> Tensor:
        """distance (B, T, S) and query_position (B, T, 1), float32 -> bias (B, H, T, S) float32."""
        normaliser = self.psi(torch.maximum(query_position, self.threshold())) + EPS
        ratio = (self.psi(distance) / normaliser).unsqueeze(-1)  # (B, T, S, 1)
        first, _, second = self.mlp
        hidden = F.relu(F.linear(ratio, first.weight.float(), first.bias.float()))
        return F.linear(hidden, second.weight.float(), second.bias.float()).permute(0, 3, 1, 2)


@dataclass
class FireOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (FIRE: every layer)"})
    attention: str = field(
        default="encoder,decoder",
        metadata={"help": "self-attention types: encoder (|i-j|, our reading), decoder (causal, the paper's)"},
    )
    mlp_width: int = field(default=32, metadata={"help": "hidden units of f_theta's one hidden layer (paper: 32)"})
    init_c: float = field(default=0.1, metadata={"help": "initial c of psi(x) = log(c x + 1) (paper's listing: 0.1)"})
    init_l: float = field(default=512.0, metadata={"help": "init_L: L = |L_multiplier * init_L|, L_multiplier learned from 1 "
                                                          "(paper's listing: 512)"})
    share_layers: bool = field(
        default=False, metadata={"help": "one FIRE per stack shared by its layers (default false: one per layer, as "
                                         "the paper's listing)"}
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if "cross" in self.attention_types():
            raise LocalityConfigError(
                f"--{method}-attention: FIRE is a function of i - j within one sequence and is not defined for cross "
                "attention; use encoder and/or decoder"
            )
        if self.mlp_width < 1:
            raise LocalityConfigError(f"--{method}-mlp-width must be >= 1, got {self.mlp_width}")
        if self.init_c <= 0:
            raise LocalityConfigError(f"--{method}-init-c must be > 0, got {self.init_c}")
        if self.init_l <= 0:
            raise LocalityConfigError(f"--{method}-init-l must be > 0, got {self.init_l}")


@register_locality_method("fire")
class Fire(LocalityMethod):
    """b(i, j) = f_theta(psi(i - j) / psi(max(L, i))) with a small MLP f_theta and learned c, L (Li et al. 2024)."""

    Options = FireOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: FireOptions, spec):
        super().__init__(options, spec)

        def build() -> FireFunction:
            return FireFunction(spec.num_heads, options.mlp_width, options.init_c, options.init_l)

        self.fire = shared_per_stack(options, spec, "fire", build) if options.share_layers else build()

    @staticmethod
    def distance(relative: Tensor, causal: bool) -> Tensor:
        """i - j (causal; masked future keys give 0) or |i - j| from relative positions j - i, float32."""
        relative = relative.float()
        return (-relative if causal else relative.abs()).clamp_min(0)

    def logit_bias(self, ctx) -> Tensor:
        distance = self.distance(ctx.relative_positions, ctx.causal)
        query_position = ctx.query_positions.float().unsqueeze(-1)  # i, (B, T, 1)
        return self.fire(distance, query_position).to(ctx.q.dtype)

    def flex_terms(self, ctx) -> FlexTerms:
        """b(i, j) for every pair of positions 0 <= i, j < S, read per score by the sentence positions."""
        positions = torch.arange(ctx.src_len, device=ctx.q.device)
        relative = positions.view(1, 1, -1) - positions.view(1, -1, 1)  # j - i, (1, S, S)
        table = self.fire(self.distance(relative, ctx.causal), positions.float().view(1, -1, 1))[0]  # (H, S, S)
        keys, queries = ctx.key_positions, ctx.query_positions

        def fire_bias(score, b, h, q_idx, kv_idx):
            return score + table[h, queries[b, q_idx], keys[b, kv_idx]].to(score.dtype)

        return FlexTerms(score_mod=fire_bias)
