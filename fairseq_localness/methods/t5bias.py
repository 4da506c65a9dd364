"""T5's relative position biases: Raffel et al. (2020), "Exploring the Limits of Transfer Learning with a Unified
Text-to-Text Transformer", JMLR, Section 2.1 (no numbered equations there).

Section 2.1, paraphrased: each "embedding" is a scalar added to the logit of the attention weights; the
position embedding parameters are shared across all layers, each head of a layer has its own; 32 embeddings whose
ranges grow logarithmically up to an offset of 128, beyond which all relative positions share one embedding.
T5 has no other position information.

    logits_hij = q_i k_j / sqrt(d) + w[h, bucket(j - i)]

bucket() is T5's released ``_relative_position_bucket`` (Mesh TensorFlow, mesh_tensorflow/transformer/
transformer_layers.py), with n = i - j:
    bidirectional (encoder): half of the buckets per direction, the upper half for keys after the query (n < 0);
    causal (decoder): n = max(n, 0), all buckets for the past;
    then, with B the buckets left: n < B/2 is its own bucket (exact; B/2 = num_buckets/4 bidirectional,
    num_buckets/2 causal), larger n are log-spaced,
        B/2 + floor(log(n / (B/2) + eps) / log(max_distance / (B/2)) * (B - B/2)),  capped at B - 1,
    computed in float32 with eps = float32's machine epsilon, as T5X does (t5x/examples/t5/layers.py,
    RelativePositionBiases._relative_position_bucket); Mesh TensorFlow has no eps, and the two agree on every
    offset (tests/test_equations_modern.py).

Our readings: fairseq scales q k^T by 1/sqrt(d) (T5 folds it into its initialisation); the table is initialised
N(0, embed_dim^-1/2) as the Hugging Face port of T5 does (the paper states no initialisation); one table per stack
(encoder, decoder) shared by its layers, as the paper says (``--t5bias-share-layers false``: one per layer).
Cross attention has no bias in T5 and is refused.

Under FlexAttention the table is looked up once per relative position j - i in [-(S-1), S-1] (a (2S-1, H) tensor),
and each score reads its entry; no (B, H, T, S) bias is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.sharing import shared_per_stack
from ..attention.tensors import offset_rows


def t5_bucket(relative_position: Tensor, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128) -> Tensor:
    """T5's bucket of every relative position j - i (long tensor of any shape)."""
    bucket = torch.zeros_like(relative_position)
    n = -relative_position  # i - j
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (n < 0).long() * num_buckets  # keys after the query: the upper half
        n = n.abs()
    else:
        n = n.clamp_min(0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    eps = float(np.finfo(np.float32).eps)
    large = max_exact + (
        torch.log(n.float() / max_exact + eps) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).long()
    large = large.clamp_max(num_buckets - 1)
    return bucket + torch.where(is_small, n, large)


@dataclass
class T5BiasOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (T5: every layer)"})
    attention: str = field(
        default="encoder,decoder",
        metadata={"help": "self-attention types: encoder (bidirectional buckets), decoder (causal buckets); "
                  "T5 has no cross-attention bias"},
    )
    num_buckets: int = field(default=32, metadata={"help": "number of buckets (T5: 32; half per direction in the encoder)"})
    max_distance: int = field(default=128, metadata={"help": "distance from which all offsets share the last bucket (T5: 128)"})
    share_layers: bool = field(
        default=True, metadata={"help": "one table per stack shared by its layers, as T5 (false: one table per layer)"}
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if "cross" in self.attention_types():
            raise LocalityConfigError(
                f"--{method}-attention: T5 adds relative position biases in self-attention only; cross attention "
                "compares positions of two sequences. Use encoder and/or decoder"
            )
        if self.num_buckets < 4:
            raise LocalityConfigError(f"--{method}-num-buckets must be >= 4, got {self.num_buckets}")
        if self.max_distance <= self.num_buckets // 2:
            raise LocalityConfigError(
                f"--{method}-max-distance must exceed num_buckets / 2 = {self.num_buckets // 2} (the exact buckets), "
                f"got {self.max_distance}"
            )


@register_locality_method("t5bias")
class T5RelativeBias(LocalityMethod):
    """A learned scalar per head and bucket of the relative position, added to the logits (Raffel et al. 2020)."""

    Options = T5BiasOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: T5BiasOptions, spec):
        super().__init__(options, spec)

        def table() -> nn.Embedding:
            embedding = nn.Embedding(options.num_buckets, spec.num_heads)  # w[bucket, h]
            nn.init.normal_(embedding.weight, mean=0.0, std=spec.embed_dim ** -0.5)
            return embedding

        self.table = shared_per_stack(options, spec, "t5bias", table) if options.share_layers else table()

    def per_offset(self, ctx) -> Tensor:
        """w[bucket(j - i), h] for every offset j - i = -(S - 1) .. S - 1, (2S - 1, H): the table read once each."""
        relative = torch.arange(-(ctx.src_len - 1), ctx.src_len, device=ctx.q.device)  # j - i, (2S - 1,)
        return self.table(t5_bucket(relative, bidirectional=not ctx.causal, num_buckets=self.options.num_buckets,
                                    max_distance=self.options.max_distance))

    def logit_bias(self, ctx) -> Tensor:
        # by index within the padded batch: fairseq pads each sentence on one side only, so between real tokens the
        # index offset is the position offset, and padding keys are masked; offset_rows keeps the table's gradient
        # a dense sum rather than a scatter over B x T x S bucket indices
        rows = offset_rows(self.per_offset(ctx), ctx.tgt_len)  # (T, S, H)
        return rows.permute(2, 0, 1).unsqueeze(0).expand(ctx.batch_size, -1, -1, -1).to(ctx.q.dtype)  # (B, H, T, S)

    def flex_terms(self, ctx) -> FlexTerms:
        """w[h, bucket(j - i)] for one score, from the table looked up once per relative position."""
        per_offset = self.per_offset(ctx)  # (2S - 1, H)
        keys, queries = ctx.key_positions, ctx.query_positions

        def relative_bias(score, b, h, q_idx, kv_idx):
            offset = keys[b, kv_idx] - queries[b, q_idx] + per_offset.size(0) // 2  # j - i + S - 1
            return score + per_offset[offset, h].to(score.dtype)

        return FlexTerms(score_mod=relative_bias)
