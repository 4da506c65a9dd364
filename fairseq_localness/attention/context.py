"""What a locality method sees of one attention call."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Dict, Optional

import torch
from torch import Tensor


@dataclass
class AttentionContext:
    """Inputs of one attention call, batch-first, with padding-aware positions.

    Shapes: ``B`` batch, ``H`` heads, ``T`` queries, ``S`` keys (in incremental
    decoding: every key so far), ``C`` model dim, ``d`` head dim.

    Attributes:
        q, k, v: projected queries (B, H, T, d), keys and values (B, H, S, d);
            ``q`` is *not* scaled by 1/sqrt(d) (``scaling`` holds that factor).
        query_input: the attention block's query input H (B, T, C).
        key_input: key input of the keys new in this call (B, S_new, C), or
            None when static keys come from the incremental cache. At the first
            step of beam search in cross-attention it holds one row per
            sentence (B / key_beam rows; see ``key_beam``).
        key_padding_mask: (B, S) bool, True at padding, or None.
        attn_mask: additive (T, S) mask passed by fairseq (e.g. the causal mask), or None.
        causal: decoder self-attention (query i sees keys j <= i).
        attn_type, layer: placement of this attention block (layer is 1-based).
        incremental: inside fairseq's incremental decoding.
    """

    q: Tensor
    k: Tensor
    v: Tensor
    query_input: Tensor
    key_input: Optional[Tensor]
    key_padding_mask: Optional[Tensor]
    attn_mask: Optional[Tensor]
    causal: bool
    attn_type: str
    layer: int
    scaling: float
    incremental: bool = False
    static_kv: bool = False
    saved_state: Optional[Dict[str, Optional[Tensor]]] = None
    #: (B, 1) decoder steps already taken: cross-attention queries' offset in incremental decoding
    query_offset: Optional[Tensor] = None
    #: rows of the batch per row of ``key_input``: the beam size when static cross-attention inputs are
    #: projected once per sentence (``key_side`` repeats the results), else 1
    key_beam: int = 1
    #: analysis values recorded by methods (e.g. gate values) when capture is on
    records: Optional[Dict[str, Tensor]] = field(default=None)
    #: when the layer's weights are asked for: the probabilities (B, H, T, S) of the last extra pattern an output-
    #: mixing method attended with (``attend`` in ``mix_output``), as that output used them (``mixed_probs``)
    extra_probs: Optional[Tensor] = field(default=None)

    @property
    def batch_size(self) -> int:
        return self.q.size(0)

    @property
    def num_heads(self) -> int:
        return self.q.size(1)

    @property
    def tgt_len(self) -> int:
        return self.q.size(2)

    @property
    def src_len(self) -> int:
        return self.k.size(2)

    @cached_property
    def query_proj(self) -> Tensor:
        """Unscaled projected queries with heads merged back: (B, T, C)."""
        return self.q.transpose(1, 2).reshape(self.batch_size, self.tgt_len, -1)

    @cached_property
    def key_proj(self) -> Tensor:
        """Projected keys with heads merged back: (B, S, C)."""
        return self.k.transpose(1, 2).reshape(self.batch_size, self.src_len, -1)

    @cached_property
    def key_valid(self) -> Tensor:
        """(B, S) bool, True at real (non-padding) keys."""
        if self.key_padding_mask is None:
            return torch.ones(self.batch_size, self.src_len, dtype=torch.bool, device=self.q.device)
        return ~self.key_padding_mask

    @cached_property
    def key_positions(self) -> Tensor:
        """(B, S) long: position of each key within its own sentence, padding ignored.

        fairseq left-pads sources and right-pads targets; counting real tokens
        makes positions start at 0 at the first real token either way.
        """
        return (self.key_valid.long().cumsum(dim=1) - 1).clamp_min(0)

    @cached_property
    def key_lengths(self) -> Tensor:
        """(B,) long: number of real keys (the sentence length I for encoder and cross attention)."""
        return self.key_valid.long().sum(dim=1)

    @cached_property
    def query_positions(self) -> Tensor:
        """(B, T) long: position of each query within its sentence."""
        if self.attn_type == "cross":
            steps = torch.arange(self.tgt_len, device=self.q.device).unsqueeze(0)
            if self.query_offset is not None:
                steps = steps + self.query_offset
            return steps.expand(self.batch_size, -1)
        # self-attention: the queries are the last T keys
        return self.key_positions[:, -self.tgt_len :]

    @cached_property
    def visible_lengths(self) -> Tensor:
        """(B, T) float32: how many real keys each query may see.

        The sentence length for encoder and cross attention, the current
        prefix length (position + 1) in causal decoder self-attention.
        Always float32: bfloat16 holds integers exactly only up to 256 and
        float16 up to 2048, and methods derive positions from these lengths.
        """
        if self.causal:
            return (self.query_positions + 1).float()
        return self.key_lengths.unsqueeze(1).expand(-1, self.tgt_len).float()

    @cached_property
    def relative_positions(self) -> Tensor:
        """(B, T, S) long: key position minus query position (j - i)."""
        return self.key_positions.unsqueeze(1) - self.query_positions.unsqueeze(2)

    def key_side(self, name: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
        """A per-key tensor (B, X, S, ...) computed from the key input, cached across decoding steps.

        ``compute(key_input)`` maps the new keys' input (B, S_new, C) to a
        tensor with time on dim 2. In incremental decoding the result is
        appended to (self-attention) or reused from (static cross-attention)
        the cache, and fairseq reorders it with the beam like the keys.
        """
        if self.saved_state is None:
            assert self.key_input is not None
            return compute(self.key_input)
        cache_key = f"locality_{name}"
        cached = self.saved_state.get(cache_key)
        if self.key_input is None:
            assert cached is not None, f"{name}: static keys but no cached value"
            return cached
        new = compute(self.key_input)
        if self.key_beam > 1:
            new = new.repeat_interleave(self.key_beam, dim=0)
        if cached is not None and not self.static_kv:
            new = torch.cat([cached, new], dim=2)
        elif self.static_kv:
            new = new.contiguous()  # reused at every step, and not copied on beam reorders (see core)
        self.saved_state[cache_key] = new
        return new

    def memo(self, owner: object, name: str, compute: Callable[[], Tensor]) -> Tensor:
        """``compute()`` once per attention call for ``owner`` (a method): values shared by its hooks."""
        cache = self.__dict__.setdefault("_memo", {})
        key = (id(owner), name)
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def record(self, name: str, value: Tensor) -> None:
        """Keep ``value`` for analysis (see LocalityAttention.capture)."""
        if self.records is not None:
            self.records[name] = value.detach()
