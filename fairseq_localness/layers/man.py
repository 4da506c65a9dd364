"""Mask Attention Networks: Fan et al. (2021), "Mask Attention Networks: Rethinking and Strengthen Transformer", NAACL.

Every sub-layer of a MAN layer is a mask attention network (Eq. 4-5, see
``methods/mask_attention.py``) with its own residual connection and layer
norm, H' = LN(H + sublayer(H)) (pre-norm: H + sublayer(LN(H))):

    SAN   M = 1 (all ones)                                    (Eq. 6-9)
    FFN   M = I: S_I(Q, K) = I, so the sub-layer is
          act(H W^V) W^O, i.e. fc2(act(fc1(H)))
    DMAN  M = Eq. 12's dynamic mask;  SMAN  M = Eq. 11's band

and the paper's layer is DMAN -> SAN -> FFN (Table 3 compares the orders
FFN->SAN->FFN, SAN->SAN->FFN, DMAN->DMAN->FFN, SAN->DMAN->FFN and
DMAN->SAN->FFN; Table 4 puts SMAN in DMAN's place). ``--man-encoder-order`` and
``--man-decoder-order`` take these as comma lists, e.g. ``dman,san,ffn``; a
two-item order such as ``san,ffn`` is a plain Transformer layer.

Layout: a MAN layer is fairseq's Transformer layer (its self-attention slot
holds the order's second-to-last sub-layer, then its FFN) with the order's
first sub-layer in front. In the decoder the encoder-decoder attention stays
where fairseq's decoder layer has it: right after that self-attention slot
and before the final FFN, so DMAN -> SAN -> FFN decodes as
DMAN (causal) -> SAN (causal) -> encoder-decoder attention -> FFN, as in the
authors' code. Every attention module keeps its own incremental state.
``--locality-methods`` still places other methods, on the self-attention slot
and on the encoder-decoder attention.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.modules import LayerNorm
from fairseq.modules.fairseq_dropout import FairseqDropout
from torch import Tensor, nn

from ..attention.registry import LocalityConfigError, parse_bool, read_method_options
from ..architectures.base import LocalnessDecoderLayer, LocalnessEncoderLayer, make_locality_attention
from ..methods.mask_attention import DynamicMask, StaticMask

logger = logging.getLogger(__name__)

#: the mask of each masked sub-layer kind; "san" (M = 1) and "ffn" (M = I) need none
MASK_METHODS = {"dman": DynamicMask, "sman": StaticMask}
ATTENTION_KINDS = ("san", "dman", "sman")
SUBLAYER_KINDS = ATTENTION_KINDS + ("ffn",)
#: Table 3 (collaboration orders) and Table 4 (static masks)
PAPER_ORDERS = ("dman,san,ffn", "ffn,san,ffn", "san,san,ffn", "dman,dman,ffn", "san,dman,ffn", "sman,san,ffn")
SIZE_SETTINGS = ("released", "paper")
#: layer-norm placement of every MAN sub-layer: "pre" H + f(LN(H)), "post" LN(H + f(H))
NORM_SETTINGS = ("pre", "post")

def parse_order(text: Any, flag: str) -> Tuple[str, ...]:
    """'dman,san,ffn' -> ('dman', 'san', 'ffn'): [first,] attention, ffn."""
    order = tuple(kind.strip().lower() for kind in str(text).split(",") if kind.strip())
    unknown = [kind for kind in order if kind not in SUBLAYER_KINDS]
    if unknown:
        raise LocalityConfigError(f"{flag}: unknown sub-layer(s) {unknown}; use {', '.join(SUBLAYER_KINDS)}")
    # the last two fill fairseq's self-attention and FFN slots (cross-attention sits between them)
    if len(order) not in (2, 3) or order[-1] != "ffn" or order[-2] not in ATTENTION_KINDS:
        raise LocalityConfigError(
            f"{flag}: {text!r} is not a MAN order: give [SUBLAYER,]ATTENTION,ffn with ATTENTION one of "
            f"{', '.join(ATTENTION_KINDS)}, e.g. the paper's {', '.join(PAPER_ORDERS)}, or san,ffn (Transformer)"
        )
    return order


@dataclass(frozen=True)
class MANOptions:
    encoder_order: Tuple[str, ...]
    decoder_order: Tuple[str, ...]
    sizes: str
    attention_relu: bool


MAN_FLAGS = {
    "man_encoder_order": (str, "ORDER", "sub-layers of every encoder layer, e.g. dman,san,ffn (paper), "
                          f"any of {', '.join(PAPER_ORDERS)} (Tables 3-4) or san,ffn"),
    "man_decoder_order": (str, "ORDER", "sub-layers of every decoder layer (masks causal; encoder-decoder "
                          "attention before the final ffn); default: the encoder's order, san,ffn for "
                          "--man-sizes released at the IWSLT size"),
    "man_sizes": (str, "SETTING", "released: the authors' released sizes, which reproduce the paper's "
                  "parameter counts (IWSLT: FFN inner dim = hidden, decoder layers san,ffn); paper: the text's "
                  "FFN inner dim = 2 x hidden and the MAN order in the decoder too. Base and big: identical"),
    "man_attention_relu": (parse_bool, "BOOL", "ReLU on every attention output before its output projection "
                           "(the authors' code; makes an M = I sub-layer exactly an FFN); paper: false"),
    "man_norm": (str, "PLACEMENT", "layer norm of every sub-layer, encoder and decoder: pre, H + f(LN(H)) and a "
                 "final LN after each stack (the authors' released man_iwslt_de_en / man_wmt_en_de_base / "
                 "man_wmt_en_de_big set --encoder/decoder-normalize-before; the paper does not say), or post, "
                 "LN(H + f(H)) (Vaswani et al.'s placement; learns far slower with the extra sub-layer, "
                 "see docs/dman.md)"),
}
MAN_DEFAULTS = {"man_encoder_order": "dman,san,ffn", "man_sizes": "released", "man_attention_relu": False, "man_norm": "pre"}
FLAG_CHOICES = {"man_sizes": SIZE_SETTINGS, "man_norm": NORM_SETTINGS}


def add_man_args(parser: argparse.ArgumentParser) -> None:
    for attr, (kind, metavar, text) in MAN_FLAGS.items():
        default = f" (default: {MAN_DEFAULTS[attr]})" if attr in MAN_DEFAULTS else ""
        parser.add_argument(
            "--" + attr.replace("_", "-"), type=kind, metavar=metavar,
            choices=FLAG_CHOICES.get(attr), help=text + default,
        )


def man_base_architecture(args) -> None:
    """Fill in every MAN option not given."""
    for attr, value in MAN_DEFAULTS.items():
        if getattr(args, attr, None) is None:
            setattr(args, attr, value)
    if getattr(args, "man_decoder_order", None) is None:
        args.man_decoder_order = args.man_encoder_order
    apply_man_norm(args)


def apply_man_norm(args) -> None:
    """--man-norm as fairseq's --encoder/decoder-normalize-before (which also add the final LN of each stack)."""
    norm = getattr(args, "man_norm", None) or MAN_DEFAULTS["man_norm"]
    if norm not in NORM_SETTINGS:
        raise LocalityConfigError(f"--man-norm: {norm!r} is not one of {', '.join(NORM_SETTINGS)}")
    if norm == "post":
        given = [flag for flag in ("encoder_normalize_before", "decoder_normalize_before") if getattr(args, flag, False)]
        if given:
            raise LocalityConfigError(
                f"--man-norm post contradicts --{given[0].replace('_', '-')}: drop one (pre-norm is --man-norm pre)"
            )
    args.encoder_normalize_before = args.decoder_normalize_before = norm == "pre"


def read_man_options(args) -> MANOptions:
    """Validated MAN options from an argparse namespace or fairseq's TransformerConfig."""
    sizes = getattr(args, "man_sizes", None) or MAN_DEFAULTS["man_sizes"]
    if sizes not in SIZE_SETTINGS:
        raise LocalityConfigError(f"--man-sizes: {sizes!r} is not one of {', '.join(SIZE_SETTINGS)}")
    encoder = getattr(args, "man_encoder_order", None) or MAN_DEFAULTS["man_encoder_order"]
    try:
        relu = parse_bool(getattr(args, "man_attention_relu", None) or False)
    except argparse.ArgumentTypeError as err:
        raise LocalityConfigError(f"--man-attention-relu: {err}") from None
    return MANOptions(
        encoder_order=parse_order(encoder, "--man-encoder-order"),
        decoder_order=parse_order(getattr(args, "man_decoder_order", None) or encoder, "--man-decoder-order"),
        sizes=sizes,
        attention_relu=relu,
    )


def _relu_before_projection(module: nn.Module, inputs: Tuple[Tensor, ...]) -> Tuple[Tensor, ...]:
    return (F.relu(inputs[0]),) + tuple(inputs[1:])


def man_attention(cfg, options: MANOptions, kind: str, attn_type: str, layer: int, methods: List,
                  default_builder: Callable[[], nn.Module]) -> nn.Module:
    """The attention of one sub-layer: the locality ``methods`` placed there plus the mask of ``kind``.

    Without a method and without the ReLU this is fairseq's own attention
    (``default_builder``); the ReLU needs LocalityAttention, whose forward
    calls ``out_proj`` as a module (fairseq's fused path reads its weights).
    """
    methods = list(methods)
    if kind in MASK_METHODS:
        mask = MASK_METHODS[kind]
        methods.append((mask, read_method_options(cfg, mask)))
    if not methods and not options.attention_relu:
        return default_builder()
    attention = make_locality_attention(cfg, attn_type, layer, methods)
    if options.attention_relu:
        attention.out_proj.register_forward_pre_hook(_relu_before_projection)
    return attention


class ResidualSubLayer(nn.Module):
    """One sub-layer with its residual connection and layer norm: LN(H + f(H)), or H + f(LN(H)) pre-norm."""

    def __init__(self, embed_dim: int, dropout: float, normalize_before: bool, export: bool = False):
        super().__init__()
        self.layer_norm = LayerNorm(embed_dim, export=export)
        self.dropout_module = FairseqDropout(dropout, module_name=type(self).__name__)
        self.normalize_before = normalize_before

    def transform(self, x: Tensor, **attention_inputs) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define the sub-layer's function f")

    def forward(self, x: Tensor, **attention_inputs) -> Tensor:
        residual = x
        if self.normalize_before:
            x = self.layer_norm(x)
        x = residual + self.dropout_module(self.transform(x, **attention_inputs))
        return x if self.normalize_before else self.layer_norm(x)


class AttentionSubLayer(ResidualSubLayer):
    """SAN, DMAN or SMAN: self-attention under the sub-layer's mask."""

    def __init__(self, attention: nn.Module, **kwargs):
        super().__init__(**kwargs)
        self.attention = attention

    def transform(self, x, key_padding_mask=None, attn_mask=None, incremental_state=None) -> Tensor:
        out, _ = self.attention(
            query=x, key=x, value=x, key_padding_mask=key_padding_mask,
            incremental_state=incremental_state, need_weights=False, attn_mask=attn_mask,
        )
        return out


class FeedForwardSubLayer(ResidualSubLayer):
    """FFN(H) = fc2(act(fc1(H))): mask attention with M = I (Eq. 6-9)."""

    def __init__(self, fc1: nn.Module, fc2: nn.Module, activation_fn: Callable, activation_dropout: float, **kwargs):
        super().__init__(**kwargs)
        self.fc1, self.fc2 = fc1, fc2
        self.activation_fn = activation_fn
        self.activation_dropout_module = FairseqDropout(activation_dropout, module_name=type(self).__name__)

    def transform(self, x, **attention_inputs) -> Tensor:
        return self.fc2(self.activation_dropout_module(self.activation_fn(self.fc1(x))))


def build_first_sublayer(
    layer, cfg, kind: str, side, attn_type: str, options: MANOptions, default_attention: Callable[[], nn.Module],
) -> ResidualSubLayer:
    """The order's first sub-layer of a 3-sub-layer MAN layer (``layer`` is fairseq's layer being built)."""
    common = dict(embed_dim=side.embed_dim, dropout=cfg.dropout, normalize_before=side.normalize_before, export=cfg.export)
    if kind == "ffn":
        return FeedForwardSubLayer(
            fc1=layer.build_fc1(side.embed_dim, side.ffn_embed_dim, layer.quant_noise, layer.quant_noise_block_size),
            fc2=layer.build_fc2(side.ffn_embed_dim, side.embed_dim, layer.quant_noise, layer.quant_noise_block_size),
            activation_fn=utils.get_activation_fn(cfg.activation_fn),
            activation_dropout=layer.activation_dropout_module.p,
            **common,
        )
    attention = man_attention(cfg, options, kind, attn_type, layer.layer_number, [], default_attention)
    return AttentionSubLayer(attention, **common)


def _additive(attn_mask: Optional[Tensor], dtype: torch.dtype) -> Optional[Tensor]:
    """fairseq's encoder-layer convention: a 0/1 ``attn_mask`` (1 = excluded) becomes a finite additive mask."""
    if attn_mask is None:
        return None
    return attn_mask.masked_fill(attn_mask.to(torch.bool), -1e8 if dtype == torch.float32 else -1e4)


class MANEncoderLayer(LocalnessEncoderLayer):
    """[first ->] self-attention slot -> FFN, each with residual and layer norm."""

    def __init__(self, cfg, layer: int, plan, return_fc: bool = False):
        self.man = read_man_options(cfg)
        self.order = self.man.encoder_order  # read by build_self_attention during super().__init__
        super().__init__(cfg, layer, plan, return_fc=return_fc)
        self.first_sublayer = None
        if len(self.order) == 3:
            self.first_sublayer = build_first_sublayer(
                self, cfg, self.order[0], cfg.encoder, "encoder", self.man, lambda: self.fairseq_self_attention(cfg),
            )

    def fairseq_self_attention(self, cfg) -> nn.Module:
        return super(LocalnessEncoderLayer, self).build_self_attention(cfg.encoder.embed_dim, cfg)

    def build_self_attention(self, embed_dim, cfg):
        return man_attention(
            cfg, self.man, self.order[-2], "encoder", self.layer_number,
            self.plan.methods_for("encoder", self.layer_number), lambda: self.fairseq_self_attention(cfg),
        )

    def forward(self, x, encoder_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor] = None):
        if self.first_sublayer is not None:
            x = self.first_sublayer(x, key_padding_mask=encoder_padding_mask, attn_mask=_additive(attn_mask, x.dtype))
        return super().forward(x, encoder_padding_mask, attn_mask=attn_mask)


class MANDecoderLayer(LocalnessDecoderLayer):
    """[first ->] causal self-attention slot -> encoder-decoder attention -> FFN."""

    def __init__(self, cfg, layer: int, plan, no_encoder_attn: bool = False):
        self.man = read_man_options(cfg)
        self.order = self.man.decoder_order
        super().__init__(cfg, layer, plan, no_encoder_attn=no_encoder_attn)
        self.first_sublayer = None
        if len(self.order) == 3:
            self.first_sublayer = build_first_sublayer(
                self, cfg, self.order[0], cfg.decoder, "decoder", self.man, lambda: self.fairseq_self_attention(cfg),
            )

    def fairseq_self_attention(self, cfg) -> nn.Module:
        return super(LocalnessDecoderLayer, self).build_self_attention(cfg.decoder.embed_dim, cfg)

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if cfg.cross_self_attention or add_bias_kv or add_zero_attn:
            raise LocalityConfigError("MAN decoder layers support neither --cross-self-attention nor bias/zero attention keys")
        return man_attention(
            cfg, self.man, self.order[-2], "decoder", self.layer_number,
            self.plan.methods_for("decoder", self.layer_number), lambda: self.fairseq_self_attention(cfg),
        )

    def build_encoder_attention(self, embed_dim, cfg):
        default = super(LocalnessDecoderLayer, self).build_encoder_attention
        return man_attention(
            cfg, self.man, "san", "cross", self.layer_number,
            self.plan.methods_for("cross", self.layer_number), lambda: default(embed_dim, cfg),
        )

    def forward(
        self, x, encoder_out=None, encoder_padding_mask=None, incremental_state=None, prev_self_attn_state=None,
        prev_attn_state=None, self_attn_mask=None, self_attn_padding_mask=None, need_attn=False, need_head_weights=False,
    ):
        if self.first_sublayer is not None:
            x = self.first_sublayer(
                x, key_padding_mask=self_attn_padding_mask, attn_mask=self_attn_mask, incremental_state=incremental_state,
            )
        return super().forward(
            x, encoder_out, encoder_padding_mask, incremental_state, prev_self_attn_state=prev_self_attn_state,
            prev_attn_state=prev_attn_state, self_attn_mask=self_attn_mask, self_attn_padding_mask=self_attn_padding_mask,
            need_attn=need_attn, need_head_weights=need_head_weights,
        )
