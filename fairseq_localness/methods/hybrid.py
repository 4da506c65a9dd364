"""Hybrid local/global attention: Xu et al. (2019), "Leveraging Local and Global Patterns for
Self-Attention Networks", ACL.

Two patterns over the same logits xi_i = q_i K^T / sqrt(d) of each head:

    global  O^G_i = softmax(xi_i) V
    local   O^L_i = softmax(B(xi_i)) V,   B(xi)_ij = xi_ij if |i - j| <= m, else -inf
    O_i = (1 - g_i) O^G_i + g_i O^L_i                                (Eq. 4)
    g_i = sigmoid(W_g H_i),  H_i the input of the attention layer    (Eq. 5)

Options beyond the paper's equations:

* ``--hybrid-gate-input query`` computes the gate from the scaled query projection
  Q_i / sqrt(d), and ``--hybrid-gate-per-head`` gives every head its own gate (both as
  in the authors' released code, github.com/scewiner/Leveraging, thumt/layers/leverage_nn.py
  gate_sum, which reads the queries after leverage_att.py scales them by d^-0.5);
* ``--hybrid-combine concat`` concatenates the patterns (Table 1 "HYBRID (Concate)"). By default
  (``--hybrid-concat-into output``) the layer's output projection reads both,
  W_O [O^G_i; O^L_i] = W_O (O^G_i + W_c O^L_i) with one new C x C matrix W_c: in THUMT (the
  authors' toolkit) the output transform is sized from its input, so concatenating the heads'
  outputs would widen it from C x C to 2C x C (+C^2 per layer). The authors' release has the gate
  only: this variant is our reading. ``--hybrid-concat-into projection`` adds a
  projection of its own, O_i = W_c [O^G_i; O^L_i] with W_c 2C x C, before W_O (+2C^2 per layer).
  Table 1 prints +0.3M: C^2 in one layer (0.26M, the released code's default ``layers=1``; its
  submit.sh uses 2), a guess at how the table counted; the
  paper's two layers give 0.52M (output) or 1.05M (projection), see docs/baselines.md;
* ``--hybrid-combine local`` keeps the local pattern only (Table 1 "LOCAL
  PATTERN"); plain attention is the global pattern alone.

The gate of every call is recorded as ``hybrid_gate`` (B, T, 1 or H), see
``fairseq_localness.attention.core.capture_locality``.

Under FlexAttention each pattern is one kernel call: O^G with the block's other
terms, O^L with B(.) as a band block mask |i - j| <= m (cached per length
bucket), so the kernel reads only the keys of the band; the gate mixes the two
outputs outside the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import Band, FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.tensors import BiasFreeLinear

COMBINATIONS = ("gate", "concat", "local")
CONCAT_TARGETS = ("output", "projection")
GATE_INPUTS = ("input", "query")


@dataclass
class HybridOptions(MethodOptions):
    layers: str = field(default="1-2", metadata={"help": "1-based layers (paper: encoder layers 1-2)"})
    attention: str = field(default="encoder", metadata={"help": "self-attention types: encoder, decoder (paper: encoder)"})
    window: int = field(default=1, metadata={"help": "m: the local pattern sees keys with |i - j| <= m (paper: 1)"})
    combine: str = field(
        default="gate",
        metadata={"help": "gate ((1-g) global + g local, Eq. 4), concat (project [global; local]), "
                  "or local (the local pattern alone)", "choices": COMBINATIONS},
    )
    gate_input: str = field(
        default="input",
        metadata={"help": "what the gate reads: input (the layer input H_i, Eq. 5) or query (the query "
                  "projection scaled by d^-0.5, the authors' released code)", "choices": GATE_INPUTS},
    )
    gate_per_head: bool = field(default=False, metadata={"help": "one gate per head (the authors' code) instead of one per position"})
    concat_into: str = field(
        default="output",
        metadata={"help": "concat only: output (the output projection reads [global; local], W_O (O^G + W_c O^L), "
                  "+C^2) or projection (W_c [O^G; O^L] with W_c 2C x C before W_O, +2C^2)", "choices": CONCAT_TARGETS},
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.window < 0:
            raise LocalityConfigError(f"--{method}-window must be >= 0, got {self.window}")


@register_locality_method("hybrid")
class HybridLocalGlobal(LocalityMethod):
    """Gated mix of global attention and attention restricted to |i - j| <= m (Xu et al. 2019)."""

    Options = HybridOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: HybridOptions, spec):
        super().__init__(options, spec)
        dim = spec.embed_dim
        # with combine=local the band is a plain logit bias that may hide every key from a padding query
        self.masks_rows = options.combine == "local"
        if options.combine == "gate":
            self.gate_proj = BiasFreeLinear(dim, spec.num_heads if options.gate_per_head else 1)  # W_g, Eq. 5
            # the paper gives no initialisation; the released gate_sum draws W_g from N(0, 0.1)
            nn.init.normal_(self.gate_proj.weight, std=0.1)
        elif options.combine == "concat":
            self.concat_proj = BiasFreeLinear(2 * dim if options.concat_into == "projection" else dim, dim)  # W_c
            nn.init.xavier_uniform_(self.concat_proj.weight)

    def local_band(self, ctx) -> Tensor:
        """B(.): (B, 1, T, S) with -inf where |i - j| > m."""
        outside = ctx.relative_positions.abs() > self.options.window
        return torch.zeros(outside.shape, dtype=ctx.q.dtype, device=ctx.q.device).masked_fill(outside, float("-inf")).unsqueeze(1)

    def local_window(self) -> FlexTerms:
        """B(.) in FlexAttention: the band |i - j| <= m."""
        return FlexTerms(band=Band(self.options.window, self.options.window))

    def gate(self, ctx) -> Tensor:
        """g = sigmoid(W_g H) (Eq. 5): (B, T, 1 or H)."""
        source = ctx.query_input if self.options.gate_input == "input" else ctx.query_proj * ctx.scaling
        return torch.sigmoid(self.gate_proj(source))

    def mixed_probs(self, ctx, probs: Tensor) -> Tensor:
        """Eq. 4's output is (1 - g) P^G V + g P^L V = ((1 - g) P^G + g P^L) V: with the gate, that mixture is the
        attention the layer uses. P^L is the local pattern's softmax as ``mix_output`` attended with it
        (``ctx.extra_probs``, computed from the logits, not derived from P^G, whose in-band entries can underflow).
        Concat projects two outputs (no distribution over the keys): ``probs`` are P^G. With combine=local
        ``probs`` are already P^L."""
        if self.options.combine != "gate":
            return probs
        if ctx.extra_probs is None:
            raise RuntimeError("hybrid: the local pattern's probabilities were not kept (mix_output did not run)")
        g = self.gate(ctx).transpose(1, 2).unsqueeze(-1).to(probs.dtype)  # (B, 1 or H, T, 1), as in mix_output
        return (1 - g) * probs + g * ctx.extra_probs.to(probs.dtype)

    def logit_bias(self, ctx) -> Optional[Tensor]:
        return self.local_band(ctx) if self.options.combine == "local" else None

    def flex_terms(self, ctx) -> Optional[FlexTerms]:
        return self.local_window() if self.options.combine == "local" else None

    def mix_output(self, ctx, out: Tensor, attend) -> Tensor:
        combine = self.options.combine
        if combine == "local":
            return out  # the band was applied to the logits
        local = attend(lambda: self.local_band(ctx), flex=self.local_window())  # O^L, (B, H, T, d)
        if combine == "gate":
            g = self.gate(ctx)
            ctx.record("hybrid_gate", g)
            g = g.transpose(1, 2).unsqueeze(-1).to(out.dtype)  # (B, 1 or H, T, 1)
            return (1 - g) * out + g * local  # Eq. 4
        batch, heads, length, head_dim = out.shape
        if self.options.concat_into == "output":
            mixed = out.transpose(1, 2).flatten(2) + self.concat_proj(local.transpose(1, 2).flatten(2))  # O^G + W_c O^L
            return mixed.view(batch, length, heads, head_dim).transpose(1, 2)
        merged = torch.cat([out.transpose(1, 2).flatten(2), local.transpose(1, 2).flatten(2)], dim=-1)  # (B, T, 2C)
        mixed = self.concat_proj(merged)  # W_c [O^G; O^L], (B, T, C)
        return mixed.view(batch, length, heads, head_dim).transpose(1, 2)
