"""The one attention module every locality method plugs into."""

from __future__ import annotations

from contextlib import contextmanager
from functools import partial
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention
from torch import Tensor, nn

from .backends import BACKENDS, CallFacts, FlexCall, choose_backend, flex_available, log_choice_once
from .context import AttentionContext
from .errors import LocalityConfigError
from .fusion import FlexTerms
from .protocol import AttentionSpec, LocalityMethod

IncrementalState = Dict[str, Dict[str, Optional[Tensor]]]


class LocalityAttention(MultiheadAttention):
    """fairseq's ``MultiheadAttention`` with locality methods in its own forward.

    Parameters and checkpoint layout (q/k/v/out projections) are those of
    ``MultiheadAttention``; the methods' own parameters live under
    ``locality.<i>``. fairseq's ``MultiheadAttention`` hands training to
    PyTorch's fused kernel, which cannot take a learned bias, so this class
    always runs its own forward: through ``flex_attention`` with the methods'
    score_mods and block masks, or ``scaled_dot_product_attention`` with the
    summed logit bias, when no method needs the probabilities, an explicit
    softmax otherwise (``need_weights``, post-softmax methods). ``backend``
    (``--locality-attention-backend``) picks among them; the rules are
    :func:`fairseq_localness.attention.backends.choose_backend`.

    Every cached tensor, the methods' included, has the full batch x beam
    dimension first. Decoder self-attention caches are reordered with the
    beam; the static encoder-decoder caches (keys, values, methods' key-side
    values) are identical for all beams of a sentence, so a reorder within
    sentences leaves them as they are and only dropping finished sentences
    selects rows (like fairseq's beamable ``MultiheadAttention``, without
    changing the attention arithmetic).
    """

    def __init__(self, embed_dim: int, num_heads: int, spec: AttentionSpec, methods: Sequence[Tuple[type, object]],
                 backend: str = "auto", **kwargs):
        super().__init__(embed_dim, num_heads, **kwargs)
        if backend not in BACKENDS:
            raise LocalityConfigError(f"--locality-attention-backend: {backend!r} is not one of {', '.join(BACKENDS)}")
        #: requested backend: auto, eager, sdpa or flex (see backends.choose_backend); may be changed after building
        self.backend = backend
        if kwargs.get("add_bias_kv") or kwargs.get("add_zero_attn") or kwargs.get("xformers_att_config"):
            raise ValueError("locality methods do not support add_bias_kv, add_zero_attn or xformers attention")
        self.spec = spec
        self.locality = nn.ModuleList(cls(options, spec) for cls, options in methods)
        self._hooks = {
            hook: [m for m in self.locality if type(m).overrides(hook)]
            for hook in ("transform_input", "transform_qk", "logit_bias", "transform_probs", "value_term", "mix_output",
                         "mixed_probs", "output_term", "attention_kernel")
        }
        if self._hooks["transform_qk"] and not self.self_attention:
            raise LocalityConfigError(
                f"{spec.attn_type} attention, layer {spec.layer}: {', '.join(m.name for m in self._hooks['transform_qk'])} "
                "transform(s) queries and keys by their positions in one sequence, which cross attention does not have"
            )
        self._masks_rows = any(m.masks_rows for m in self.locality)
        self._kernel = self._pick_kernel()
        # why Flex cannot run this block whatever the call (the first method that says so), or None
        self._unfusable = next((f"{m.name}: {why}" for m in self.locality for why in [m.flex_unfusable()] if why), None)
        self._training_fallback = next(
            (f"{m.name}: {why}" for m in self.locality for why in [m.flex_training_fallback()] if why), None)
        self._flex_available = flex_available()
        #: when set to a dict, methods' analysis values (e.g. gates) of the last call are stored here
        self.capture: Optional[Dict[str, Tensor]] = None

    def _pick_kernel(self) -> Optional[LocalityMethod]:
        """The one method whose attention_kernel replaces the core's step, if any (see LocalityMethod)."""
        kernels = self._hooks["attention_kernel"]
        where = f"{self.spec.attn_type} attention, layer {self.spec.layer}"
        if len(kernels) > 1:
            raise LocalityConfigError(
                f"{where}: {', '.join(m.name for m in kernels)} each replace the attention computation; "
                "place at most one of them in an attention block"
            )
        if not kernels:
            return None
        per_prob = [m for m in self.locality if m in self._hooks["transform_probs"] or m in self._hooks["value_term"]]
        if per_prob:
            if kernels[0].replaces_attention:
                raise LocalityConfigError(
                    f"{where}: {kernels[0].name} replaces the attention computation and cannot share a block with "
                    f"{', '.join(m.name for m in per_prob)}, which change(s) probabilities or add value terms"
                )
            return None  # its dense logit_bias is exact, and lets the per-probability hooks run
        return kernels[0]

    @property
    def needs_probs(self) -> bool:
        # a method overriding transform_probs starts with needs_probs = True (LocalityMethod.__init__)
        return any(m.needs_probs for m in self.locality)

    def set_beam_size(self, beam_size: int) -> None:
        """Called by fairseq's generator: hypotheses ``i*beam .. (i+1)*beam - 1`` belong to sentence ``i``."""
        self.beam_size = beam_size

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
        input_shift = None  # transformed minus original input, returned into the layer's residual stream
        if self.self_attention:
            for method in self._hooks["transform_input"]:  # e.g. convolutions feeding the attention (CNNs)
                if saved_state is not None:
                    raise RuntimeError(f"{method.name} transforms the whole input sequence and has no incremental decoding")
                original, query = query, method.transform_input(query, key_padding_mask)
                if method.input_in_residual:
                    input_shift = query - original if input_shift is None else input_shift + query - original
            key = value = query

        key_beam = 1
        if self.encoder_decoder_attention and saved_state is not None and key is not None and value is key:
            key, key_beam = self._one_row_per_sentence(key)
            value = key

        def project(linear: nn.Linear, x: Tensor) -> Tensor:
            projected = self._split_heads(linear(x))
            return projected if key_beam == 1 else projected.repeat_interleave(key_beam, dim=0)

        q = self._split_heads(self.q_proj(query))
        k = project(self.k_proj, key) if key is not None else None
        v = project(self.v_proj, value) if value is not None else None
        if self._hooks["transform_qk"]:  # self-attention only (see __init__): the new keys are the queries
            positions = self._new_key_positions(key_padding_mask, saved_state, k)
            for method in self._hooks["transform_qk"]:  # before caching: cached keys keep their own positions
                q, k = method.transform_qk(q, k, positions, positions)

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
            key_beam=key_beam,
            records={} if self.capture is not None else None,
        )
        if before_softmax:
            bias = self._logit_bias(ctx, skip=self._kernel)
            if self._kernel is not None:
                if self._kernel.replaces_attention:
                    raise RuntimeError(f"before_softmax is unsupported: {self._kernel.name} has no pre-softmax logits over (T, S) keys")
                bias = self._add_method_bias(ctx, bias, self._kernel)
            return self._logits(ctx, bias), v
        need_probs = need_weights or self.needs_probs
        backend = self.choose_backend(ctx, need_probs)
        if backend == "flex":
            call = self._flex_call(ctx)
            out, probs = call.attend(), None
            attend_extra = partial(self._attend_extra_flex, ctx, call)
        else:
            bias = self._logit_bias(ctx, skip=self._kernel)
            out, probs = self._attend(ctx, bias, need_probs=need_probs, explicit=backend == "eager")
            attend_extra = partial(self._attend_extra, ctx, bias, backend == "eager", keep_probs=need_weights)
        for method in self._hooks["mix_output"]:
            out = method.mix_output(ctx, out, attend_extra)
        if self.capture is not None:
            self.capture.clear()
            self.capture.update(ctx.records or {})
        if saved_state is not None:
            self._set_input_buffer(incremental_state, saved_state)

        out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
        out = self.out_proj(out)
        for method in self._hooks["output_term"]:  # (B, T, C) terms after the output projection
            term = method.output_term(ctx)
            if term is not None:
                out = out + term.transpose(0, 1)
        if input_shift is not None:
            out = out + input_shift  # the layer adds its input back: x + (c - x) + attn(c) = c + attn(c)
        weights = None
        if need_weights:
            for method in self._hooks["mixed_probs"]:  # the weights the output was mixed from, not the softmax alone
                probs = method.mixed_probs(ctx, probs)
            weights = probs.transpose(0, 1)  # (H, B, T, S) as fairseq returns head weights
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return out, weights

    def _one_row_per_sentence(self, key: Tensor) -> Tuple[Tensor, int]:
        """The encoder output (S, B*beam, C) of beam search as (S, B, C) and the beam size, where its rows repeat.

        fairseq's generator repeats every sentence's encoder output once per hypothesis before the first
        step; projecting it (keys, values, methods' key-side terms) once per sentence and repeating the
        results gives the same cache for a beam-th of the projection cost, as fairseq's beamable
        ``MultiheadAttention`` does. Rows that do not repeat (other callers) are used as they are.
        """
        beam = max(int(self.beam_size), 1)
        length, rows, dim = key.shape
        if beam == 1 or rows % beam != 0:
            return key, 1
        grouped = key.view(length, rows // beam, beam, dim)
        first = grouped[:, :, :1]
        if not torch.equal(grouped, first.expand_as(grouped)):
            return key, 1
        return first.squeeze(2), beam

    @staticmethod
    def _new_key_positions(key_padding_mask: Optional[Tensor], saved_state, k: Tensor) -> Tensor:
        """(B, S_new) positions of this call's keys within their sentences, before they join the cache.

        The same numbers as ``AttentionContext.key_positions`` over the extended cache (real tokens counted from
        the first one, padding ignored): the real keys already cached come first.
        """
        batch, new = k.size(0), k.size(2)
        valid = torch.ones(batch, new, dtype=torch.long, device=k.device)
        if key_padding_mask is not None and key_padding_mask.dim() == 2:
            valid = (~key_padding_mask.to(torch.bool)).long()
        before = torch.zeros(batch, 1, dtype=torch.long, device=k.device)
        prev_key = saved_state.get("prev_key") if saved_state is not None else None
        if prev_key is not None:
            prev_mask = saved_state.get("prev_key_padding_mask")
            if prev_mask is not None:
                before = (~prev_mask.to(torch.bool)).long().sum(dim=1, keepdim=True)
            else:
                before = before + prev_key.size(2)
        return (before + valid.cumsum(dim=1) - 1).clamp_min(0)

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
        elif static_kv:
            k, v = k.contiguous(), v.contiguous()  # kept for every step and (see reorder) rarely copied again
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

    def _logit_bias(self, ctx: AttentionContext, skip: Optional[LocalityMethod] = None) -> Optional[Tensor]:
        """Sum of fairseq's mask, the padding mask and every method's logit term (but ``skip``'s)."""
        bias: Optional[Tensor] = None
        if ctx.attn_mask is not None:
            bias = ctx.attn_mask.to(ctx.q.dtype)
        for method in self._hooks["logit_bias"]:
            if method is skip:
                continue
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
                bias = self._revive_dead_rows(ctx, bias)
        return bias

    def _revive_dead_rows(self, ctx: AttentionContext, bias: Tensor) -> Tensor:
        """``bias`` where a query sees no key at all (a method's window over padding or future keys only) replaced
        by fairseq's mask and the padding alone: that query attends uniformly over the keys it may see, rather
        than producing NaN, and never over future keys or padding. A query that may see none (a padding query)
        attends uniformly over all keys; its output is never read."""
        dead = torch.isneginf(bias).all(dim=-1, keepdim=True)
        visible = torch.zeros((1, 1, 1, bias.size(-1)), dtype=bias.dtype, device=bias.device)
        if ctx.attn_mask is not None:
            visible = visible + ctx.attn_mask.to(bias.dtype)
        if ctx.key_padding_mask is not None:
            visible = visible.masked_fill(ctx.key_padding_mask[:, None, None, :], float("-inf"))
        visible = visible.masked_fill(torch.isneginf(visible).all(dim=-1, keepdim=True), 0.0)
        return torch.where(dead, visible, bias)

    def _add_method_bias(self, ctx: AttentionContext, bias: Optional[Tensor], method: LocalityMethod) -> Optional[Tensor]:
        """``bias`` plus the logit term of ``method`` (a kernel that declined), rows kept NaN-free."""
        term = method.logit_bias(ctx) if type(method).overrides("logit_bias") else None
        if term is None:
            return bias
        bias = term.to(ctx.q.dtype) if bias is None else bias + term.to(ctx.q.dtype)
        if self._masks_rows:
            bias = self._revive_dead_rows(ctx, bias)
        return bias

    def _logits(self, ctx: AttentionContext, bias: Optional[Tensor]) -> Tensor:
        logits = torch.matmul(ctx.q * ctx.scaling, ctx.k.transpose(-1, -2))
        return logits if bias is None else logits + bias

    def _dropout_p(self) -> float:
        active = self.training or self.dropout_module.apply_during_inference
        return self.dropout_module.p if active else 0.0

    def uses_kernel(self, device: torch.device) -> bool:
        """Whether the method's ``attention_kernel`` runs on ``device`` (else its dense bias and the core's step).

        On CUDA, ``scaled_dot_product_attention`` with the dense float bias runs
        as one fused kernel (memory-efficient attention, gradients to the bias
        included), which beats the kernels' step-by-step PyTorch code (banded
        windows, written for the CPU's memory). Kernels without a bias
        equivalent (``replaces_attention``) and an explicit user choice (an
        ``implementation`` option other than ``auto``) still run there.
        """
        if self._kernel is None:
            return False
        explicit = getattr(self._kernel.options, "implementation", "auto") != "auto"
        return device.type != "cuda" or self._kernel.replaces_attention or explicit

    def choose_backend(self, ctx: AttentionContext, need_probs: bool) -> str:
        """``eager``, ``sdpa`` or ``flex`` for this call (rules: ``backends.choose_backend``), logged once per choice."""
        device = ctx.q.device
        own_kernel = None
        if self._kernel is not None and self.uses_kernel(device) and not self._kernel.replaces_attention:
            choice = getattr(self._kernel.options, "implementation", "auto")
            if choice != "auto":
                own_kernel = f"{self._kernel.name}'s own kernel was chosen (--{self._kernel.name}-implementation {choice})"
        needs_grad = torch.is_grad_enabled() and (
            ctx.q.requires_grad or ctx.k.requires_grad or ctx.v.requires_grad
            or any(p.requires_grad for p in self.locality.parameters())
        )
        grad_on_cpu = device.type != "cuda" and needs_grad
        mask = ctx.attn_mask
        other_mask = mask is not None and not (ctx.causal and tuple(mask.shape) == (ctx.tgt_len, ctx.src_len))
        unfusable = self._unfusable
        if unfusable is None and device.type == "cuda" and self.head_dim < 16:
            unfusable = f"head dimension {self.head_dim} < 16 (Flex's CUDA kernel)"
        facts = CallFacts(
            requested=self.backend, device=device.type, need_probs=need_probs, unfusable=unfusable,
            own_kernel=own_kernel, dropout=self._dropout_p() > 0, grad_on_cpu=grad_on_cpu,
            incremental=ctx.incremental, other_mask=other_mask, capture=self.capture is not None,
            flex_missing=not self._flex_available,
            training_fallback=self._training_fallback if needs_grad else None,
        )
        backend, reason = choose_backend(facts)
        log_choice_once(self.spec.attn_type, [m.name for m in self.locality] or ["none"], backend, reason)
        return backend

    def _flex_terms(self, ctx: AttentionContext) -> List[FlexTerms]:
        return [terms for method in self.locality for terms in [method.flex_terms(ctx)] if terms is not None]

    def _flex_call(self, ctx: AttentionContext) -> FlexCall:
        """The call's FlexAttention: the methods' terms, the padding and (decoder self-attention) the future mask."""
        return FlexCall(
            ctx.q, ctx.k, ctx.v, ctx.scaling, self._flex_terms(ctx),
            # always a padding term (all True without padding): one score_mod structure per block, fewer recompiles
            key_valid=ctx.key_valid,
            causal=ctx.attn_mask is not None,  # choose_backend lets only the decoder's future mask through
        )

    def _attend_extra_flex(self, ctx: AttentionContext, call: FlexCall, extra_bias, flex: Optional[FlexTerms] = None) -> Tensor:
        """``attend`` of mix_output methods under Flex: their extra pattern's Flex form, else the dense path."""
        if flex is not None:
            return call.attend(flex)
        return self._attend_extra(ctx, self._logit_bias(ctx, skip=self._kernel), False, extra_bias)

    def _attend(
        self, ctx: AttentionContext, bias: Optional[Tensor], need_probs: bool, explicit: bool = False
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """Per-head output (B, H, T, d) and, when asked for (or ``explicit``), the probabilities."""
        if self._kernel is not None and not self.uses_kernel(ctx.q.device):
            bias = self._add_method_bias(ctx, bias, self._kernel)
        elif self._kernel is not None:
            result = self._kernel.attention_kernel(ctx, bias, need_probs, self.dropout_module)
            if result is not None:
                if need_probs and result[1] is None:
                    raise RuntimeError(f"{self._kernel.name}.attention_kernel returned no probabilities although asked to")
                return result
            bias = self._add_method_bias(ctx, bias, self._kernel)
        if not need_probs and not explicit:
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

    def _attend_extra(
        self, ctx: AttentionContext, bias: Optional[Tensor], explicit: bool, extra_bias, flex: Optional[FlexTerms] = None,
        keep_probs: bool = False,
    ) -> Tensor:
        """Attention over the same logits plus ``extra_bias`` (for output-mixing methods).

        ``extra_bias`` is a tensor or a function returning one (computed only here, not under Flex); ``flex``
        is the same pattern's Flex form (used by ``_attend_extra_flex``). With ``keep_probs`` (the layer's weights
        are asked for) the pattern's probabilities are kept in ``ctx.extra_probs``.
        """
        extra_bias = extra_bias() if callable(extra_bias) else extra_bias
        combined = extra_bias.to(ctx.q.dtype) if bias is None else bias + extra_bias.to(ctx.q.dtype)
        combined = self._revive_dead_rows(ctx, combined)
        out, probs = self._attend(ctx, combined, need_probs=self.needs_probs or keep_probs, explicit=explicit)
        if keep_probs:
            ctx.extra_probs = probs
        return out

    @torch.jit.unused
    def reorder_incremental_state(self, incremental_state: IncrementalState, new_order: Tensor):
        """Reorder every cached tensor (keys, values, methods' caches) along the batch x beam dim.

        Static encoder-decoder caches are left alone when ``new_order`` only
        moves hypotheses within their sentence's beam (see the class docstring).
        """
        buffer = self._get_input_buffer(incremental_state)
        if buffer:
            if self.encoder_decoder_attention and self._within_sentences(buffer, new_order):
                return incremental_state
            for name, value in buffer.items():
                if value is not None:
                    buffer[name] = value.index_select(0, new_order)
            incremental_state = self._set_input_buffer(incremental_state, buffer)
        return incremental_state

    def _within_sentences(self, buffer: Dict[str, Optional[Tensor]], new_order: Tensor) -> bool:
        """Whether row r of the reordered cache comes from r's own sentence (rows grouped by ``beam_size``)."""
        cached = next((value for value in buffer.values() if value is not None), None)
        if cached is None or cached.size(0) != new_order.numel():
            return False  # sentences were dropped: rows must be selected
        beam = max(int(self.beam_size), 1)
        rows = torch.arange(new_order.numel(), device=new_order.device)
        return bool(torch.equal(torch.div(new_order, beam, rounding_mode="floor"), torch.div(rows, beam, rounding_mode="floor")))

    def locality_methods(self) -> List[LocalityMethod]:
        return list(self.locality)


class LocalityCapture:
    """Analysis values that methods recorded (``ctx.record``), per attention block and call.

    ``calls[(attn_type, layer)]`` lists one dict per forward call of that
    block, in order: one call per encoder forward, one per decoding step in
    incremental decoding.
    """

    def __init__(self) -> None:
        self.calls: Dict[Tuple[str, int], List[Dict[str, Tensor]]] = {}

    def get(self, name: str, attn_type: str, layer: int, call: int = -1) -> Tensor:
        """The value ``name`` of one call (the last by default) of the block at (attn_type, 1-based layer)."""
        try:
            return self.calls[(attn_type, layer)][call][name]
        except (KeyError, IndexError):
            have = sorted({(k, n) for k, calls in self.calls.items() for c in calls for n in c})
            raise KeyError(f"no {name!r} recorded for {attn_type} layer {layer} call {call}; recorded: {have}") from None

    def by_layer(self, name: str, attn_type: str, call: int = -1) -> Dict[int, Tensor]:
        """{layer: value} of every block of ``attn_type`` that recorded ``name``."""
        return {
            layer: calls[call][name]
            for (kind, layer), calls in sorted(self.calls.items())
            if kind == attn_type and calls and name in calls[call]
        }


@contextmanager
def capture_locality(model: nn.Module) -> Iterator[LocalityCapture]:
    """Record the analysis values of every LocalityAttention in ``model`` while the block runs.

    Example (the hybrid gate per encoder layer and source position)::

        with capture_locality(model) as captured:
            model(src_tokens, src_lengths, prev_output_tokens)
        gates = captured.by_layer("hybrid_gate", "encoder")  # {layer: (B, T, 1 or H)}
    """
    captured = LocalityCapture()
    handles = []
    modules = [m for m in model.modules() if isinstance(m, LocalityAttention)]

    def keep(module: "LocalityAttention", _inputs, _output) -> None:
        key = (module.spec.attn_type, module.spec.layer)
        captured.calls.setdefault(key, []).append(dict(module.capture or {}))

    try:
        for module in modules:
            module.capture = {}
            handles.append(module.register_forward_hook(keep))
        yield captured
    finally:
        for handle in handles:
            handle.remove()
        for module in modules:
            module.capture = None
