"""How a method's logit term runs inside FlexAttention: the declaration a method returns from ``flex_terms``.

FlexAttention (``torch.nn.attention.flex_attention``) computes ``softmax(score_mod(q k^T / sqrt(d))) v`` in one
kernel without ever holding the (B, H, T, S) logits, and skips the key blocks its ``block_mask`` rules out. A
locality term fits it in two ways:

* a ``score_mod``: a function of one score and its indices ``(score, b, h, q_idx, kv_idx) -> score`` that reads
  small captured tensors (a centre per query, a bias per distance, ...) instead of a dense bias. It is exact:
  hard windows that depend on the data return ``-inf`` outside them;
* a :class:`Band`: keys ``i - left <= j <= i + right`` in buffer positions, a structure that depends on the
  lengths only, so the attention core builds its block mask once per length bucket and caches it. A band is
  exact where the term is such a band (CSAN-1D's window, the hybrid's local pattern) and, paired with an exact
  ``score_mod``, a superset that only lets the kernel skip blocks (SMAN's widest window, Block's longest block).

Buffer positions equal the padding-aware sentence positions of the methods for every real query and key: fairseq
pads at one end of a sentence, so both shift by the same amount. Padding queries may differ (nothing reads them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from torch import Tensor

#: ``score_mod(score, b, h, q_idx, kv_idx) -> score``: one (0-dim) score and its indices, as FlexAttention calls it
ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]


def _tighter(a: Optional[int], b: Optional[int]) -> Optional[int]:
    if a is None:
        return b
    return a if b is None else min(a, b)


@dataclass(frozen=True)
class Band:
    """Query i may see keys i - left <= j <= i + right (buffer positions; None: unbounded on that side).

    Queries are the last T of the S keys (self-attention), so query index q is key index q + S - T.
    Hashable: the attention core caches one block mask per band and length bucket.
    """

    left: Optional[int] = None
    right: Optional[int] = None

    def __post_init__(self):
        for side in (self.left, self.right):
            if side is not None and side < 0:
                raise ValueError(f"a band's sides are >= 0 or None, got {self}")

    def __and__(self, other: "Band") -> "Band":
        """The keys both bands allow."""
        return Band(_tighter(self.left, other.left), _tighter(self.right, other.right))

    @property
    def unbounded(self) -> bool:
        return self.left is None and self.right is None


@dataclass
class FlexTerms:
    """One method's logit term for one attention call, in FlexAttention's two forms (either may be None).

    ``key_window``: optional (lowest, highest) key *positions* (B, H, T), float, each query may see; the core
    turns them into the blocks this call may skip (a window that moves with the data, such as Local_Hard's
    predicted centre, cannot be a cached band). The exact mask stays in ``score_mod``.
    """

    score_mod: Optional[ScoreMod] = None
    band: Optional[Band] = None
    key_window: Optional[Tuple[Tensor, Tensor]] = None
