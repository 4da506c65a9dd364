"""CNNs before self-attention: the "Cnns" baseline of Yang et al. (2019) Table 1, after Yu et al. (2018),
"QANet: Combining Local Convolution with Global Self-Attention for Reading Comprehension", ICLR.

Yang et al. (2019, Sec. 4) describe it as "several CNN layers (Kim, 2014) to fuse local information, the
output of which is fed to the subsequent SAN layer", in the lower encoder layers (Sec. 5). Each QANet
encoder block (Yu et al. 2018, Sec. 2.2 and Fig. 1) runs a stack of convolutions, each a residual
sub-layer, in front of its self-attention:

    c_0 = x
    c_n = c_{n-1} + ReLU(Conv_k(LayerNorm(c_{n-1})))          n = 1..N    (QANet encoder block, conv sub-layers)
    y   = c_N + SelfAttention(c_N)                                       (the attention sub-layer reads c_N)

With ``--cnns-separable false`` (default) Conv_k is a full 1-D convolution over the sequence with C
output channels (Kim 2014: k * C * C weights + C biases); with ``true`` it is QANet's depthwise-separable
convolution (k * C depthwise + C * C pointwise weights + C biases). QANet's embedding encoder block uses
N = 4 convolutions of kernel size k = 7 (Yu et al. 2018, Sec. 2.2), the defaults here.

The stack is the attention block's ``transform_input`` hook with ``input_in_residual``: the Transformer
layer's residual then carries c_N, i.e. y = c_N + Attn(c_N) (post-LN, fairseq's default; with
``--encoder-normalize-before`` the attention reads LayerNorm(x) and the residual gets c_N - LayerNorm(x)).

Padding is zeroed before every convolution, so a padded sentence sees the same zero border as one
without padding. Encoder self-attention only (QANet is an encoder; Yang et al. use the encoder).

Parameters at Transformer-Base (C = 512) per layer: 4 x (7 * 512^2 + 512 + LayerNorm 1024) = 7.35M,
22.0M over the lower three layers; Yang et al. (2019) Table 1 prints +42.6M (see docs/baselines.md for
what each reading gives).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method


@dataclass
class CNNsOptions(MethodOptions):
    layers: str = field(default="1-3", metadata={"help": "1-based layers (the lowest three encoder layers, where Yang et al. 2019 Sec. 5 put the CSANs; "
                                                               "the paper does not place its baselines, so this is our reading)"})
    attention: str = field(default="encoder", metadata={"help": "attention types: encoder only"})
    num_convs: int = field(default=4, metadata={"help": "N: convolution sub-layers in front of each attention (QANet: 4)"})
    kernel_size: int = field(default=7, metadata={"help": "k: convolution width, odd (QANet: 7)"})
    separable: bool = field(default=False, metadata={"help": "depthwise-separable convolutions as in QANet (default: full "
                                                              "convolutions, Kim 2014, as Yang et al. 2019 describe)"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.num_convs < 1:
            raise LocalityConfigError(f"--{method}-num-convs must be >= 1, got {self.num_convs}")
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise LocalityConfigError(f"--{method}-kernel-size must be a positive odd number (centred window), got {self.kernel_size}")


class ConvSubLayer(nn.Module):
    """c + ReLU(Conv_k(LayerNorm(c))) with padding zeroed: one QANet conv sub-layer."""

    def __init__(self, dim: int, kernel_size: int, separable: bool):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        pad = kernel_size // 2
        if separable:
            self.depthwise = nn.Conv1d(dim, dim, kernel_size, padding=pad, groups=dim, bias=False)
            self.pointwise = nn.Conv1d(dim, dim, 1)
            self.conv = nn.Sequential(self.depthwise, self.pointwise)
        else:
            self.conv = nn.Conv1d(dim, dim, kernel_size, padding=pad)

    def forward(self, c: Tensor, keep: Optional[Tensor]) -> Tensor:
        """c (B, C, T); keep (B, 1, T) float, 0 at padding, or None."""
        h = self.norm(c.transpose(1, 2)).transpose(1, 2)
        if keep is not None:
            h = h * keep
        return c + F.relu(self.conv(h))


@register_locality_method("cnns")
class CNNs(LocalityMethod):
    """N residual convolution sub-layers in front of the self-attention (Yu et al. 2018, as in Yang et al. 2019)."""

    Options = CNNsOptions
    supported_attention = frozenset({"encoder"})
    input_in_residual = True

    def __init__(self, options: CNNsOptions, spec):
        super().__init__(options, spec)
        self.convs = nn.ModuleList(
            ConvSubLayer(spec.embed_dim, options.kernel_size, options.separable) for _ in range(options.num_convs)
        )

    def transform_input(self, x: Tensor, key_padding_mask: Optional[Tensor]) -> Tensor:
        c = x.permute(1, 2, 0)  # (T, B, C) -> (B, C, T)
        keep = None
        if key_padding_mask is not None and key_padding_mask.any():
            keep = (~key_padding_mask.to(torch.bool)).unsqueeze(1).to(c.dtype)
        for conv in self.convs:
            c = conv(c, keep)
        if keep is not None:
            c = c * keep  # padding rows stay what they were (zero residual change)
            c = c + x.permute(1, 2, 0) * (1 - keep)
        return c.permute(2, 0, 1)
