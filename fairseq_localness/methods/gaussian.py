"""Learnable Gaussian localness: Yang et al. (2018), "Modeling Localness for Self-Attention Networks", EMNLP.

Equation numbers refer to the paper:

    ATT(Q, K) = softmax(energy + G)                                  (Eq. 4)
    G_ij = -(j - P_i)^2 / (2 sigma_i^2),  sigma_i = D_i / 2          (Eq. 5)
    [P_i; D_i] = I * sigmoid([p_i; z_i])                             (Eq. 6)
    p_i = U_p^T tanh(W_p Q_i)                                        (Eq. 7)
    window:  query-specific  z_i = U_d^T tanh(W_p Q_i)               (Eq. 9, shares W_p)
             layer-specific  z   = U_d^T tanh(W_d K_bar)             (Eq. 8, mean key)
             fixed           D   = 10                                (Sec. 3.3)
             head-specific   D_m = N * sigmoid(z_m), N = 50          (Eq. 11, Sec. 5.1)
    multi-head: U_p, U_d have one column per head                   (Eq. 10)

I is the real (unpadded) sentence length: the source length in encoder and
cross attention, the current prefix length in decoder self-attention.

Under FlexAttention G is not built: ``gaussian_score_mod`` adds G_ij to each
score from P_i and sigma_i alone, (B, H, T) tensors instead of (B, H, T, S).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import FlexTerms, ScoreMod
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.tensors import BiasFreeLinear, large_negative

WINDOW_STRATEGIES = ("query", "layer", "fixed", "head")


@dataclass
class GaussianOptions(MethodOptions):
    layers: str = field(default="1-3", metadata={"help": "1-based layers (paper: lower 3 encoder layers)"})
    attention: str = field(default="encoder", metadata={"help": "attention types: encoder, decoder, cross (paper: encoder)"})
    window: str = field(
        default="query",
        metadata={"help": "window strategy: query (per-query D, the paper's best), layer (from the mean key), "
                  "fixed (D = --gaussian-fixed-window), head (one learned D per head)", "choices": WINDOW_STRATEGIES},
    )
    fixed_window: float = field(default=10.0, metadata={"help": "window size D of the 'fixed' strategy"})
    head_window_max: float = field(default=50.0, metadata={"help": "N of the 'head' strategy: D_m = N * sigmoid(z_m)"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.fixed_window <= 0:
            raise LocalityConfigError(f"--{method}-fixed-window must be > 0, got {self.fixed_window}")
        if self.head_window_max <= 0:
            raise LocalityConfigError(f"--{method}-head-window-max must be > 0, got {self.head_window_max}")


def gaussian_bias(key_positions: Tensor, center: Tensor, window: Tensor, floor: float, dtype=None) -> Tensor:
    """G_ij = -(j - P_i)^2 / (2 sigma_i^2) with sigma = D / 2 (Eq. 5).

    key_positions (B, S); center and window (B, H, T) -> (B, H, T, S) in
    ``dtype`` (default: the centre's), clamped at ``floor`` so that a tiny
    window cannot overflow to -inf. Computed in float32 whatever the model's
    dtype: in float16 a distance of 256 squared, or 2 sigma^2 for a window
    above ~362, overflows (and the clamp turns 0 * inf into NaN gradients),
    and bfloat16 rounds positions above 256.
    """
    sigma = (window.float() / 2).clamp_min(1e-4).unsqueeze(-1)
    distance = key_positions[:, None, None, :].float() - center.float().unsqueeze(-1)
    return (-(distance**2) / (2 * sigma**2)).clamp_min(floor).to(dtype or center.dtype)


def gaussian_score_mod(key_positions: Tensor, center: Tensor, window: Tensor, floor: float) -> ScoreMod:
    """G_ij of :func:`gaussian_bias` added to one score (FlexAttention), from P and D (B, H, T) only.

    The same float32 arithmetic as ``gaussian_bias``, element by element.
    """
    sigma = (window.float() / 2).clamp_min(1e-4)
    two_sigma_sq = 2 * sigma**2  # (B, H, T)
    center, keys = center.float(), key_positions.float()

    def gaussian(score, b, h, q_idx, kv_idx):
        distance = keys[b, kv_idx] - center[b, h, q_idx]  # j - P_i
        return score + (-(distance**2) / two_sigma_sq[b, h, q_idx]).clamp_min(floor).to(score.dtype)

    return gaussian


@register_locality_method("gaussian")
class GaussianLocalness(LocalityMethod):
    """Learnable Gaussian bias (Yang et al. 2018): predicted centre P and window D per query and head."""

    Options = GaussianOptions

    def __init__(self, options: GaussianOptions, spec):
        super().__init__(options, spec)
        dim, heads = spec.embed_dim, spec.num_heads
        self.w_p = BiasFreeLinear(dim, dim)  # W_p, Eq. 7
        self.u_p = BiasFreeLinear(dim, heads)  # U_p, one column per head (Eq. 10)
        if options.window in ("query", "layer"):
            self.u_d = BiasFreeLinear(dim, heads)  # U_d, Eq. 8-9
        if options.window == "layer":
            self.w_d = BiasFreeLinear(dim, dim)  # W_d, Eq. 8
        if options.window == "head":
            # z_m, one scalar per head; 0 (D_m = N/2) is our choice, the paper gives no initialisation
            self.z = nn.Parameter(torch.zeros(heads))
        # Xavier-uniform: the release's THUMT default (uniform_unit_scaling, gain 1, fan_avg); the paper is silent
        for module in (self.w_p, self.u_p, getattr(self, "u_d", None), getattr(self, "w_d", None)):
            if module is not None:
                nn.init.xavier_uniform_(module.weight)

    def center_and_window(self, ctx):
        """P and D per head and query, (B, H, T) float32 each (Eq. 6-11)."""
        hidden = torch.tanh(self.w_p(ctx.query_proj))  # (B, T, C)
        length = ctx.visible_lengths.unsqueeze(-1)  # I, (B, T, 1), float32
        # P and D in float32 (see gaussian_bias): a half-precision centre above 256 would be rounded
        center = length * torch.sigmoid(self.u_p(hidden).float())  # P = I * sigmoid(p), Eq. 6
        window = self._window(ctx, hidden, length)
        ctx.record("gaussian_center", center)
        ctx.record("gaussian_window", window)
        return center.transpose(1, 2), window.transpose(1, 2)

    def logit_bias(self, ctx) -> Tensor:
        center, window = self.center_and_window(ctx)
        return gaussian_bias(ctx.key_positions, center, window, large_negative(ctx.q.dtype), dtype=ctx.q.dtype)

    def flex_terms(self, ctx) -> FlexTerms:
        center, window = self.center_and_window(ctx)
        return FlexTerms(score_mod=gaussian_score_mod(ctx.key_positions, center, window, large_negative(ctx.q.dtype)))

    def flex_training_fallback(self) -> Optional[str]:
        # measured: NVIDIA H200, torch 2.11, base size, fp16, 1,024 tokens (docs/gpu.md): 0.39 of the Transformer's
        # training speed through Flex, 0.61 through SDPA; Flex kept 1.01 of its memory, SDPA needed 1.30
        return "its training was slower through Flex than through SDPA on a GPU (docs/gpu.md)"

    def _window(self, ctx, hidden: Tensor, length: Tensor) -> Tensor:
        """D of shape broadcastable to (B, T, H), float32."""
        strategy = self.options.window
        if strategy == "query":
            return length * torch.sigmoid(self.u_d(hidden).float())  # D = I * sigmoid(z), Eq. 6 with Eq. 9 (query)
        if strategy == "layer":
            return length * torch.sigmoid(self.u_d(torch.tanh(self.w_d(self._mean_key(ctx)))).float())
        if strategy == "head":
            return (self.options.head_window_max * torch.sigmoid(self.z.float())).expand(*length.shape[:2], -1)
        return torch.full_like(length, self.options.fixed_window).expand(-1, -1, self.spec.num_heads)

    @staticmethod
    def _mean_key(ctx) -> Tensor:
        """K_bar per query (B, T, C): mean of the real keys it can see (a running mean when causal)."""
        keys = ctx.key_proj * ctx.key_valid.unsqueeze(-1).to(ctx.key_proj.dtype)
        if not ctx.causal:
            total = keys.sum(dim=1, keepdim=True)
            return (total / ctx.key_lengths.view(-1, 1, 1).clamp_min(1).to(keys.dtype)).expand(-1, ctx.tgt_len, -1)
        running = keys.cumsum(dim=1)[:, -ctx.tgt_len :]  # the queries are the last T keys
        return running / ctx.visible_lengths.unsqueeze(-1).to(running.dtype)
