"""The localness Transformer layers: fairseq's encoder and decoder layers whose attention is LocalityAttention
where a placement plan puts a locality method, and fairseq's own MultiheadAttention elsewhere.

Small subclasses that swap components through fairseq's build hooks (``build_self_attention`` /
``build_encoder_attention``). The models in :mod:`fairseq_localness.architectures` build their stacks from these
layers; the MAN layers (:mod:`.man`) extend them.
"""

from __future__ import annotations

from typing import Callable, Sequence, Tuple

from fairseq.distributed import fsdp_wrap
from fairseq.modules import transformer_layer
from fairseq.modules.checkpoint_activations import checkpoint_wrapper

from ..attention.backends import read_backend
from ..attention.core import LocalityAttention
from ..attention.placement import LocalityPlan
from ..attention.protocol import AttentionSpec


def build_locality_attention(cfg, plan: LocalityPlan, attn_type: str, layer: int, default_builder: Callable, **kwargs):
    """LocalityAttention for the methods ``plan`` places here, else fairseq's own attention."""
    methods = plan.methods_for(attn_type, layer)
    if not methods:
        return default_builder()
    return make_locality_attention(cfg, attn_type, layer, methods, **kwargs)


def make_locality_attention(cfg, attn_type: str, layer: int, methods: Sequence[Tuple[type, object]], **kwargs):
    """LocalityAttention of the given (method class, options) pairs; ``methods`` may be empty."""
    side = cfg.encoder if attn_type == "encoder" else cfg.decoder
    kdim = cfg.encoder.embed_dim if attn_type == "cross" else side.embed_dim
    max_positions = cfg.max_source_positions if attn_type == "encoder" else cfg.max_target_positions
    spec = AttentionSpec(
        embed_dim=side.embed_dim,
        num_heads=side.attention_heads,
        attn_type=attn_type,
        layer=layer,
        kdim=kdim,
        max_positions=int(max_positions),
    )
    return LocalityAttention(
        side.embed_dim,
        side.attention_heads,
        spec,
        methods,
        kdim=kdim if attn_type == "cross" else None,
        vdim=kdim if attn_type == "cross" else None,
        dropout=cfg.attention_dropout,
        self_attention=attn_type != "cross",
        encoder_decoder_attention=attn_type == "cross",
        q_noise=cfg.quant_noise.pq,
        qn_block_size=cfg.quant_noise.pq_block_size,
        backend=read_backend(cfg),
        **kwargs,
    )


def wrap_layer(layer, cfg):
    """Activation checkpointing and FSDP wrapping exactly as fairseq's build_*_layer do."""
    checkpoint = cfg.checkpoint_activations
    if checkpoint:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)


class LocalnessEncoderLayer(transformer_layer.TransformerEncoderLayerBase):
    def __init__(self, cfg, layer: int, plan: LocalityPlan, return_fc: bool = False):
        self.layer_number, self.plan = layer, plan  # read by build_self_attention during super().__init__
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim, cfg):
        default = super().build_self_attention
        return build_locality_attention(cfg, self.plan, "encoder", self.layer_number, lambda: default(embed_dim, cfg))


class LocalnessDecoderLayer(transformer_layer.TransformerDecoderLayerBase):
    def __init__(self, cfg, layer: int, plan: LocalityPlan, no_encoder_attn: bool = False):
        self.layer_number, self.plan = layer, plan
        super().__init__(cfg, no_encoder_attn=no_encoder_attn)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        default = super().build_self_attention
        return build_locality_attention(
            cfg, self.plan, "decoder", self.layer_number,
            lambda: default(embed_dim, cfg, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn),
        )

    def build_encoder_attention(self, embed_dim, cfg):
        default = super().build_encoder_attention
        return build_locality_attention(cfg, self.plan, "cross", self.layer_number, lambda: default(embed_dim, cfg))
