"""KERPLE: Chi, Fan, Ramadge and Rudnicky (2022), "KERPLE: Kernelized Relative Positional Embedding for Length
Extrapolation", NeurIPS.

A conditionally positive definite kernel of the distance, negated, is added to the logits of every head, its
constant offset absorbed by the softmax (the paper's abstract); the two kernels the paper trains:

    power:        b_ij = -r1 |i - j|^r2,          r1 > 0,  0 < r2 <= 2
    logarithmic:  b_ij = -r1 log(1 + r2 |i - j|), r1 > 0,  r2 > 0

The paper's full text is not at hand here, so this module cites no section or equation number of it; every detail
below follows the authors' released code (github.com/chijames/KERPLE). That code adds the kernel to the logits
after their 1/sqrt(d) scaling (``megatron/model/transformer.py``), as we do.

r1 and r2 are learned, one pair per head, shared across layers: the released code builds one kernel module and
hands it to every layer of its language model (``megatron/model/gpt2_model.py``, ``rpe=rpe_emb``). Our reading
for an encoder-decoder: one pair per head for each stack (encoder, decoder), shared by its layers;
``share_layers=False`` gives every layer its own pair. How they are kept in range follows that code
(github.com/chijames/KERPLE, ``megatron/mpu/layers.py``, ``ParallelKerpleLog`` / ``ParallelKerplePower``): before
every training forward the parameters themselves are clamped, r1, r2 >= 0.01 (and r2 <= 2 for the power kernel),
a projection after each optimiser step rather than a reparameterisation (no softplus); the forward also clamps, so
that a model evaluated right after an optimiser step sees values in range. Initialisation as that code:
log kernel r1 ~ U(0, 2), r2 ~ U(0, 1); power kernel r1 ~ U(0, 1), r2 ~ U(0, 2).

Our readings: the paper's models are causal language models (keys j <= i); in the bidirectional encoder the
kernel of |i - j| is used as it stands (it is symmetric). Cross attention is refused. The bias is computed in
float32 and floored at a large negative number, so that |i - j|^2 of long sentences cannot overflow float16.
Under FlexAttention the kernel is evaluated score by score from the H pairs (r1, r2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.sharing import shared_per_stack
from ..attention.tensors import large_negative

KERNELS = ("log", "power")
#: the released code's lower bound of r1 and r2 (``self.eps``)
EPS = 1e-2


@dataclass
class KerpleOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (KERPLE: every layer)"})
    attention: str = field(
        default="encoder,decoder",
        metadata={"help": "self-attention types: encoder (kernel of |i-j|, our reading), decoder (causal, the paper's)"},
    )
    kernel: str = field(
        default="log",
        metadata={"help": "log: -r1 log(1 + r2 |i-j|) (the paper's better kernel); power: -r1 |i-j|^r2",
                  "choices": KERNELS},
    )
    share_layers: bool = field(
        default=True, metadata={"help": "one (r1, r2) per head shared by the stack's layers, as the "
                                        "authors' code (false: one per layer)"}
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if "cross" in self.attention_types():
            raise LocalityConfigError(
                f"--{method}-attention: KERPLE is a kernel of the distance |i - j| within one sequence and is not "
                "defined for cross attention; use encoder and/or decoder"
            )


class KernelParameters(nn.Module):
    """r1 and r2 of every head, initialised as the released code: log kernel r1 ~ U(0, 2), r2 ~ U(0, 1); power
    kernel r1 ~ U(0, 1), r2 ~ U(0, 2)."""

    def __init__(self, heads: int, kernel: str):
        super().__init__()
        self.kernel = kernel
        scale_r1, scale_r2 = (2.0, 1.0) if kernel == "log" else (1.0, 2.0)
        self.r1 = nn.Parameter(torch.rand(heads) * scale_r1)
        self.r2 = nn.Parameter(torch.rand(heads) * scale_r2)

    def bounds(self):
        """((low, high) of r1, (low, high) of r2); None: unbounded."""
        return (EPS, None), (EPS, 2.0 if self.kernel == "power" else None)


@register_locality_method("kerple")
class Kerple(LocalityMethod):
    """-r1 log(1 + r2 |i - j|) or -r1 |i - j|^r2 with r1, r2 learned per head (Chi et al. 2022), shared by the
    stack's layers."""

    Options = KerpleOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: KerpleOptions, spec):
        super().__init__(options, spec)

        def build() -> KernelParameters:
            return KernelParameters(spec.num_heads, options.kernel)

        self.kernel = shared_per_stack(options, spec, "kerple", build) if options.share_layers else build()

    @property
    def r1(self) -> nn.Parameter:
        return self.kernel.r1

    @property
    def r2(self) -> nn.Parameter:
        return self.kernel.r2

    def constrained(self):
        """(r1, r2) in range, float32; in training the parameters are first projected, as the authors' code does."""
        (lo1, hi1), (lo2, hi2) = self.kernel.bounds()
        if self.training:  # on .data, as the released code: no autograd version bump of a saved parameter
            self.r1.data.clamp_(lo1, hi1)
            self.r2.data.clamp_(lo2, hi2)
        return self.r1.float().clamp(lo1, hi1), self.r2.float().clamp(lo2, hi2)

    def logit_bias(self, ctx) -> Tensor:
        r1, r2 = self.constrained()
        r1, r2 = r1.view(1, -1, 1, 1), r2.view(1, -1, 1, 1)
        distance = ctx.relative_positions.abs().float().unsqueeze(1)  # |i - j|, (B, 1, T, S)
        if self.options.kernel == "log":
            bias = -r1 * torch.log1p(r2 * distance)
        else:
            bias = -r1 * distance.pow(r2)
        return bias.clamp_min(large_negative(ctx.q.dtype)).to(ctx.q.dtype)

    def flex_terms(self, ctx) -> FlexTerms:
        """The kernel of |i - j| for one score, float32 and floored as ``logit_bias``."""
        r1, r2 = self.constrained()  # (H,) each
        keys, queries = ctx.key_positions, ctx.query_positions
        logarithmic, floor = self.options.kernel == "log", large_negative(ctx.q.dtype)

        def kernel(score, b, h, q_idx, kv_idx):
            distance = (keys[b, kv_idx] - queries[b, q_idx]).abs().float()  # |i - j|
            bias = -r1[h] * torch.log1p(r2[h] * distance) if logarithmic else -r1[h] * distance.pow(r2[h])
            return score + bias.clamp_min(floor).to(score.dtype)

        return FlexTerms(score_mod=kernel)
