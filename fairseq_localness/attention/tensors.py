"""Small tensor helpers shared by the locality methods."""

from __future__ import annotations

import torch
from torch import nn


class BiasFreeLinear(nn.Linear):
    """``y = x W^T``, registering no ``bias`` entry at all.

    fairseq's trainer catalogues parameters by identity, so every ``None``
    bias of ``nn.Linear(bias=False)`` looks like one shared parameter and is
    logged as "detected shared parameter" for each pair.
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__(in_features, out_features, bias=False)
        del self._parameters["bias"]
        self.bias = None


def large_negative(dtype: torch.dtype) -> float:
    """A finite 'minus infinity' for soft biases: exp() of it is 0 but sums of a few stay finite."""
    return -1e4 if dtype in (torch.float16, torch.bfloat16) else -1e9
