"""The localness Transformer: fairseq's Transformer with LocalityAttention where a plan places it.

Small subclasses that swap components through fairseq's build hooks
(``build_encoder``/``build_decoder`` -> ``build_*_layer`` ->
``build_self_attention``/``build_encoder_attention``); everything else is
fairseq's own code. Layers without a locality method keep fairseq's
``MultiheadAttention`` untouched.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any, Callable, Dict, Mapping

from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerDecoderBase,
    TransformerEncoderBase,
    TransformerModel,
    transformer_iwslt_de_en,
    transformer_wmt_en_de,
    transformer_wmt_en_de_big,
)
from omegaconf import OmegaConf

from ..attention.core import LocalityAttention
from ..attention.placement import LocalityPlan
from ..attention.errors import exit_on_config_error
from ..attention.backends import BACKEND_PREFIX, BackendOptions
from ..attention.options import add_method_args, add_option_args, fill_method_defaults, fill_option_defaults
from ..attention.registry import LOCALITY_METHODS

from ..layers.localness import (  # noqa: F401  (the layers are the building blocks; re-exported for users)
    LocalnessDecoderLayer,
    LocalnessEncoderLayer,
    build_locality_attention,
    make_locality_attention,
    wrap_layer,
)

logger = logging.getLogger(__name__)

MODEL_NAME = "transformer_localness"


class LocalnessTransformerEncoder(TransformerEncoderBase):
    """Layer classes come from ``encoder_layer_class`` so method families with their own block can swap them."""

    encoder_layer_class = LocalnessEncoderLayer

    def __init__(self, cfg, dictionary, embed_tokens, return_fc=False):
        self.plan = LocalityPlan.from_args(cfg)
        self._layers_built = 0
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)

    def build_encoder_layer(self, cfg):
        self._layers_built += 1
        layer = self.encoder_layer_class(cfg, self._layers_built, self.plan, return_fc=self.return_fc)
        return wrap_layer(layer, cfg)


class LocalnessTransformerDecoder(TransformerDecoderBase):
    decoder_layer_class = LocalnessDecoderLayer

    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        self.plan = LocalityPlan.from_args(cfg)
        self._layers_built = 0
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn, output_projection=output_projection)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        self._layers_built += 1
        layer = self.decoder_layer_class(cfg, self._layers_built, self.plan, no_encoder_attn=no_encoder_attn)
        return wrap_layer(layer, cfg)


def add_locality_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--locality-methods", type=str, metavar="NAMES",
        help="comma-separated locality methods to use (available: "
        + ", ".join(sorted(LOCALITY_METHODS)) + "); each is placed by its --<method>-layers and --<method>-attention flags",
    )
    add_option_args(parser, BACKEND_PREFIX, BackendOptions)  # --locality-attention-backend
    for method in sorted(LOCALITY_METHODS):
        add_method_args(parser, LOCALITY_METHODS[method])


def as_namespace(args: Any) -> Any:
    """Hydra hands the model config as a DictConfig; fairseq's TransformerConfig only copies extra keys from a Namespace."""
    if OmegaConf.is_config(args):
        return argparse.Namespace(**OmegaConf.to_container(args, resolve=True))
    return args


@register_model(MODEL_NAME)
class LocalnessTransformerModel(TransformerModel):
    """fairseq's Transformer with locality methods placed by ``--locality-methods`` and per-method flags."""

    encoder_class = LocalnessTransformerEncoder
    decoder_class = LocalnessTransformerDecoder

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        add_locality_args(parser)

    @classmethod
    @exit_on_config_error  # fairseq-train: the message and exit status 2, no traceback
    def build_model(cls, args, task):
        args = as_namespace(args)
        localness_base_architecture(args)
        plan = LocalityPlan.from_args(args)  # validates before anything is built
        logger.info("locality: %s", plan.describe())
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, cfg, src_dict, embed_tokens):
        return cls.encoder_class(cfg, src_dict, embed_tokens)

    def set_beam_size(self, beam_size: int) -> None:
        """Called by fairseq's generator with the beam size: LocalityAttention's static cross-attention caches
        then skip beam reorders within sentences (fairseq's own attention modules are left as they are)."""
        for module in self.modules():
            if isinstance(module, LocalityAttention):
                module.set_beam_size(beam_size)

    @classmethod
    def build_decoder(cls, cfg, tgt_dict, embed_tokens):
        return cls.decoder_class(cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)


def localness_base_architecture(args) -> None:
    """Fill in every locality option not given (the methods' paper defaults)."""
    if getattr(args, "locality_methods", None) is None:
        args.locality_methods = ""
    fill_option_defaults(args, BACKEND_PREFIX, BackendOptions)
    for method in LOCALITY_METHODS.values():
        fill_method_defaults(args, method)


#: fairseq's Transformer sizes; the bare architecture name is the base size.
SIZE_VARIANTS: Dict[str, Callable[[Any], None]] = {
    "": transformer_wmt_en_de,
    "_iwslt_de_en": transformer_iwslt_de_en,
    "_wmt_en_de": transformer_wmt_en_de,
    "_wmt_en_de_big": transformer_wmt_en_de_big,
}
#: every size suffix registered so far (fairseq's sizes and task sizes such as ``_summarization``): an
#: architecture name ending in one is a size variant, not a method family of its own
REGISTERED_SIZE_SUFFIXES = {suffix for suffix in SIZE_VARIANTS if suffix}


def register_locality_architectures(
    name: str, defaults: Mapping[str, Any], model: str = MODEL_NAME,
    sizes: Mapping[str, Callable[[Any], None]] = SIZE_VARIANTS,
) -> None:
    """Register ``name`` and its size variants with ``defaults`` for unset options.

    ``defaults`` maps option attributes (``locality_methods``,
    ``gaussian_layers``, any Transformer option) to values used when the
    user did not set them.
    """

    REGISTERED_SIZE_SUFFIXES.update(suffix for suffix in sizes if suffix)
    for suffix, size in sizes.items():

        def architecture(args, size=size):
            for attr, value in defaults.items():
                if getattr(args, attr, None) is None:
                    setattr(args, attr, value)
            size(args)
            localness_base_architecture(args)

        architecture.__name__ = f"{name}{suffix}".replace("-", "_")
        architecture.__doc__ = f"{name}{suffix}: {dict(defaults)}"
        register_model_architecture(model, f"{name}{suffix}")(architecture)


register_locality_architectures("transformer_localness", {})
