"""The one attention module every locality method plugs into."""

from __future__ import annotations

from functools import partial
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn

from .context import AttentionContext
from .registry import AttentionSpec, LocalityMethod

IncrementalState = Dict[str, Dict[str, Optional[Tensor]]]


class LocalityAttention(MultiheadAttention):
    """fairseq's ``MultiheadAttention`` with locality methods in its own forward.

    Parameters and checkpoint layout (q/k/v/out projections) are those of
    ``MultiheadAttention``; the methods' own parameters live under
    ``locality.<i>``. fairseq's ``MultiheadAttention`` hands training to
    PyTorch's fused kernel, which cannot take a learned bias, so this class
    always runs its own forward: through ``scaled_dot_product_attention``
    with the summed logit bias when no method needs the probabilities, an
    explicit softmax otherwise (``need_weights``, post-softmax methods).

    Beamable encoder-decoder attention (``set_beam_size``) is not used:
    every cached tensor, the methods' included, has the full batch x beam
    dimension first and is reordered with the beam.
    """

    def __init__(self, embed_dim: int, num_heads: int, spec: AttentionSpec, methods: Sequence[Tuple[type, object]], **kwargs):
        super().__init__(embed_dim, num_heads, **kwargs)
        if kwargs.get("add_bias_kv") or kwargs.get("add_zero_attn") or kwargs.get("xformers_att_config"):
            raise ValueError("locality methods do not support add_bias_kv, add_zero_attn or xformers attention")
        self.spec = spec
        self.locality = nn.ModuleList(cls(options, spec) for cls, options in methods)
        self._hooks = {
            hook: [m for m in self.locality if type(m).overrides(hook)]
            for hook in ("logit_bias", "transform_probs", "value_term", "mix_output")
        }
        self._masks_rows = any(m.masks_rows for m in self.locality)
        #: when set to a dict, methods' analysis values (e.g. gates) of the last call are stored here
        self.capture: Optional[Dict[str, Tensor]] = None

    @property
    def needs_probs(self) -> bool:
        return bool(self._hooks["transform_probs"]) or any(m.needs_probs for m in self.locality)

    def set_beam_size(self, beam_size: int) -> None:
        # see class docstring: keep the simple, fully reordered cache
        self.beam_size = 1

    def _split_heads(self, x: Tensor) -> Tensor:
        """(T, B, C) -> (B, H, T, d)."""
        length, bsz, _ = x.shape
        return x.view(length, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def forward(
        self,
        query: Tensor,
        key: Optional[Tensor],
        value: Optional[Tensor],
        key_padding_mask: Optional[Tensor] = None,
        incremental_state: Optional[IncrementalState] = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Optional[Tensor] = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        need_weights = need_weights or need_head_weights
        tgt_len, bsz, embed_dim = query.shape
        saved_state = None
        if incremental_state is not None:
            saved_state = self._get_input_buffer(incremental_state)
            if static_kv and "prev_key" in saved_state:
                key = value = None
        if self.self_attention:
            key = value = query

        q = self._split_heads(self.q_proj(query))
        k = self._split_heads(self.k_proj(key)) if key is not None else None
        v = self._split_heads(self.v_proj(value)) if value is not None else None

        query_offset = None
        if saved_state is not None:
            k, v, key_padding_mask = self._extend_cache(saved_state, k, v, key_padding_mask, static_kv)
            if self.encoder_decoder_attention:
                steps = saved_state.get("locality_steps")
                query_offset = steps if steps is not None else q.new_zeros(bsz, 1, dtype=torch.long)
                saved_state["locality_steps"] = query_offset + tgt_len
        assert k is not None and v is not None
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.to(torch.bool)
            if key_padding_mask.dim() == 0 or not key_padding_mask.any():
                key_padding_mask = None

        ctx = AttentionContext(
            q=q, k=k, v=v,
            query_input=query.transpose(0, 1),
            key_input=key.transpose(0, 1) if key is not None else None,
            key_padding_mask=key_padding_mask,
            attn_mask=attn_mask,
            causal=self.spec.attn_type == "decoder",
            attn_type=self.spec.attn_type,
            layer=self.spec.layer,
            scaling=self.scaling,
            incremental=saved_state is not None,
            static_kv=static_kv,
            saved_state=saved_state,
            query_offset=query_offset,
            records={} if self.capture is not None else None,
        )
        bias = self._logit_bias(ctx)
        if before_softmax:
            return self._logits(ctx, bias), v
        out, probs = self._attend(ctx, bias, need_probs=need_weights or self.needs_probs)
        for method in self._hooks["mix_output"]:
            out = method.mix_output(ctx, out, partial(self._attend_extra, ctx, bias))
        if self.capture is not None:
            self.capture.clear()
            self.capture.update(ctx.records or {})
        if saved_state is not None:
            self._set_input_buffer(incremental_state, saved_state)

        out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
        out = self.out_proj(out)
        weights = None
        if need_weights:
            weights = probs.transpose(0, 1)  # (H, B, T, S) as fairseq returns head weights
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return out, weights

    def _extend_cache(self, saved_state, k, v, key_padding_mask, static_kv):
        """Append new keys/values to (or reuse them from) the incremental cache, fairseq's layout."""
        prev_key = saved_state.get("prev_key")
        if prev_key is not None:
            prev_value = saved_state["prev_value"]
            if static_kv:
                k, v = prev_key, prev_value
            else:
                k = torch.cat([prev_key, k], dim=2)
                v = torch.cat([prev_value, v], dim=2)
        key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
            key_padding_mask=key_padding_mask,
            prev_key_padding_mask=saved_state.get("prev_key_padding_mask"),
            batch_size=k.size(0),
            src_len=k.size(2),
            static_kv=static_kv,
        )
        saved_state["prev_key"] = k
        saved_state["prev_value"] = v
        saved_state["prev_key_padding_mask"] = key_padding_mask
        return k, v, key_padding_mask

    def _logit_bias(self, ctx: AttentionContext) -> Optional[Tensor]:
        """Sum of fairseq's mask, the padding mask and every method's logit term."""
        bias: Optional[Tensor] = None
        if ctx.attn_mask is not None:
            bias = ctx.attn_mask.to(ctx.q.dtype)
        for method in self._hooks["logit_bias"]:
            term = method.logit_bias(ctx)
            if term is not None:
                bias = term if bias is None else bias + term
        if ctx.key_padding_mask is not None:
            pad = ctx.key_padding_mask[:, None, None, :]
            bias = pad.new_zeros(pad.shape, dtype=ctx.q.dtype) if bias is None else bias
            bias = bias.masked_fill(pad, float("-inf"))
        if bias is not None:
            bias = bias.to(ctx.q.dtype)
            if self._masks_rows:
                # a query that sees no key at all attends uniformly rather than producing NaN
                dead = torch.isneginf(bias).all(dim=-1, keepdim=True)
                bias = bias.masked_fill(dead, 0.0)
        return bias

    def _logits(self, ctx: AttentionContext, bias: Optional[Tensor]) -> Tensor:
        logits = torch.matmul(ctx.q * ctx.scaling, ctx.k.transpose(-1, -2))
        return logits if bias is None else logits + bias

    def _dropout_p(self) -> float:
        active = self.training or self.dropout_module.apply_during_inference
        return self.dropout_module.p if active else 0.0

    def _attend(self, ctx: AttentionContext, bias: Optional[Tensor], need_probs: bool) -> Tuple[Tensor, Optional[Tensor]]:
        """Per-head output (B, H, T, d) and, when asked for, the probabilities."""
        if not need_probs:
            out = F.scaled_dot_product_attention(
                ctx.q, ctx.k, ctx.v, attn_mask=bias, dropout_p=self._dropout_p(), scale=ctx.scaling
            )
            return out, None
        logits = self._logits(ctx, bias)
        probs = F.softmax(logits, dim=-1, dtype=torch.float32).type_as(logits)
        for method in self._hooks["transform_probs"]:
            probs = method.transform_probs(ctx, probs)
        dropped = self.dropout_module(probs)
        out = torch.matmul(dropped, ctx.v)
        for method in self._hooks["value_term"]:
            term = method.value_term(ctx, dropped)
            if term is not None:
                out = out + term
        return out, probs

    def _attend_extra(self, ctx: AttentionContext, bias: Optional[Tensor], extra_bias: Tensor) -> Tensor:
        """Attention over the same logits plus ``extra_bias`` (for output-mixing methods)."""
        combined = extra_bias.to(ctx.q.dtype) if bias is None else bias + extra_bias.to(ctx.q.dtype)
        combined = combined.masked_fill(torch.isneginf(combined).all(dim=-1, keepdim=True), 0.0)
        out, _ = self._attend(ctx, combined, need_probs=self.needs_probs)
        return out

    @torch.jit.unused
    def reorder_incremental_state(self, incremental_state: IncrementalState, new_order: Tensor):
        """Reorder every cached tensor (keys, values, methods' caches) along the batch x beam dim."""
        buffer = self._get_input_buffer(incremental_state)
        if buffer:
            for name, value in buffer.items():
                if value is not None:
                    buffer[name] = value.index_select(0, new_order)
            incremental_state = self._set_input_buffer(incremental_state, buffer)
        return incremental_state

    def locality_methods(self) -> List[LocalityMethod]:
        return list(self.locality)
