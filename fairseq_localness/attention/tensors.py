"""Small tensor helpers shared by the locality methods."""

from __future__ import annotations

import torch
from torch import Tensor, nn


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


def offset_rows(per_offset: Tensor, tgt_len: int) -> Tensor:
    """Values per key-minus-query offset, spread over the last ``tgt_len`` queries of S keys: (T, S, ...).

    ``per_offset`` (2S - 1, ...) holds offsets s - i = -(S - 1) .. S - 1 on dim 0; row t of the result is query
    index i = S - T + t (the queries of self-attention are the last T keys), so [t, s] = per_offset[s - i + S - 1].
    The rows are windows of one unfolded view, whose gradient sums each offset's entries in a dense pass. Indexing
    the table with a (T, S) index instead has CUDA accumulate the gradient through a sort over every duplicate
    index, a path reported to slow a whole training (about 2x for a detection network, pytorch/pytorch#41162).
    """
    src_len = (per_offset.size(0) + 1) // 2
    windows = per_offset.unfold(0, src_len, 1).movedim(-1, 1)  # window w: offsets w - (S - 1) .. w, (S, S, ...)
    return windows[:tgt_len].flip(0)  # query i reads window S - 1 - i; the last T queries are windows T - 1 .. 0
