"""Decoder-only language models with locality methods (Nguyen et al. 2020, §5.4, Table 6).

fairseq's ``TransformerLanguageModel`` whose decoder is the plugin's
:class:`LocalnessTransformerDecoder` with no encoder and no cross-attention:
``fairseq-train --task language_modeling --arch transformer_lm_diffwin ...``,
``fairseq-eval-lm`` for perplexity, incremental generation (hub sampling,
``fairseq-interactive --task language_modeling``) like fairseq's own LM. Any
method defined for decoder self-attention can be placed with
``--locality-methods NAME --NAME-attention decoder``; encoder- and
cross-attention placements are rejected ("the model has no encoder attention").

Architectures (§5.4: "the same model settings as adopted in our MT
experiments", i.e. the base size; fairseq's ``transformer_lm`` defaults:
6 layers, d 512, FFN 2048, 8 heads, pre-norm):

====================================  ===========================  =====================
architecture                          Table 6 row                  locality
====================================  ===========================  =====================
transformer_lm_localness              Vaswani et al. (2017)        none (unless flags)
transformer_lm_relpos                 Shaw et al. (2018)           relpos, decoder, all layers
transformer_lm_diffwin                Dec (MW)                     diffwin_dec, mul, layers 1-3
transformer_lm_diffwin_aw             Dec (AW)                     diffwin_dec, add, layers 1-3
====================================  ===========================  =====================

§5.4 says Yang et al. (2018)'s method "is not applicable to this task"; it is
not a named row (``--locality-methods gaussian --gaussian-attention decoder``
builds it anyway).
"""

from __future__ import annotations

from typing import Any, Dict

from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer_lm import TransformerLanguageModel, TransformerLanguageModelConfig, base_lm_architecture

from ..attention.placement import LocalityPlan
from ..attention.errors import exit_on_config_error
from .base import (
    LocalnessTransformerDecoder,
    add_locality_args,
    as_namespace,
    localness_base_architecture,
    logger,
    register_locality_architectures,
)

MODEL_NAME = "transformer_lm_localness"


@register_model(MODEL_NAME)  # no dataclass: the locality options must reach build_model (see add_args)
class LocalnessTransformerLanguageModel(TransformerLanguageModel):
    """fairseq's Transformer LM with locality methods in decoder self-attention."""

    @classmethod
    def add_args(cls, parser):
        # fairseq's LM options (a dataclass-registered model would drop every option outside its dataclass)
        gen_parser_from_dataclass(parser, TransformerLanguageModelConfig(), delete_default=True)
        add_locality_args(parser)

    @classmethod
    @exit_on_config_error  # fairseq-train: the message and exit status 2, no traceback
    def build_model(cls, args, task):
        args = as_namespace(args)
        localness_lm_base(args)
        args.no_cross_attention = True  # read by the locality plan: no encoder, no cross-attention
        logger.info("locality: %s", LocalityPlan.from_args(args).describe())  # validates first
        # fairseq's build_model makes the embeddings (plain, adaptive or character input) and a plain
        # TransformerDecoder, with no hook to swap the decoder class: the decoder is rebuilt around them
        model = super().build_model(args, task)
        cfg = TransformerConfig.from_namespace(args)
        cfg.encoder.layers = 0  # TransformerConfig's default is 6; this model has no encoder
        model.decoder = LocalnessTransformerDecoder(
            cfg, task.target_dictionary, model.decoder.embed_tokens, no_encoder_attn=True
        )
        return model


def localness_lm_base(args) -> None:
    base_lm_architecture(args)
    localness_base_architecture(args)


#: Table 6 rows (Yang et al. excluded, §5.4); the methods keep their paper defaults otherwise
TABLE6_ROWS: Dict[str, Dict[str, Any]] = {
    "transformer_lm_localness": {},
    "transformer_lm_relpos": {"locality_methods": "relpos", "relpos_attention": "decoder"},
    "transformer_lm_diffwin": {"locality_methods": "diffwin_dec", "diffwin_dec_mode": "mul"},
    "transformer_lm_diffwin_aw": {"locality_methods": "diffwin_dec", "diffwin_dec_mode": "add"},
}


def _register(name: str, defaults: Dict[str, Any]) -> None:
    """``name`` with ``defaults`` for unset options, on top of :func:`localness_lm_base` (one size)."""
    register_locality_architectures(name, defaults, model=MODEL_NAME, sizes={"": localness_lm_base})


for _name, _row in TABLE6_ROWS.items():
    _register(_name, _row)
