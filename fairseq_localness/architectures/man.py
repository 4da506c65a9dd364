"""Mask Attention Networks (Fan et al. 2021): the ``transformer_man`` model and its ``transformer_dman*`` /
``transformer_sman*`` sizes. The MAN layers themselves are in :mod:`fairseq_localness.layers.man`."""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable, Dict, Tuple

from fairseq.models import register_model
from fairseq.models.transformer import transformer_iwslt_de_en, transformer_wmt_en_de, transformer_wmt_en_de_big

from ..attention.errors import exit_on_config_error
from ..attention.options import add_option_args, read_option, read_options
from ..layers.man import MAN_PREFIX, MANDecoderLayer, MANEncoderLayer, MANOptions, man_base_architecture
from .base import LocalnessTransformerDecoder, LocalnessTransformerEncoder, LocalnessTransformerModel, as_namespace, register_locality_architectures

logger = logging.getLogger(__name__)

MODEL_NAME = "transformer_man"

#: Table 1's parameter counts in millions: (MAN, Transformer) per size suffix
PAPER_PARAMETERS: Dict[str, Tuple[int, int]] = {
    "_iwslt_de_en": (37, 36),
    "_wmt_en_de": (63, 62),
    "_wmt_en_de_big": (215, 213),
}


class MANTransformerEncoder(LocalnessTransformerEncoder):
    encoder_layer_class = MANEncoderLayer


class MANTransformerDecoder(LocalnessTransformerDecoder):
    decoder_layer_class = MANDecoderLayer


@register_model(MODEL_NAME)
class MANTransformerModel(LocalnessTransformerModel):
    """Transformer whose layers are MAN layers (Fan et al. 2021), orders set by --man-{encoder,decoder}-order."""

    encoder_class = MANTransformerEncoder
    decoder_class = MANTransformerDecoder

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        add_option_args(parser, MAN_PREFIX, MANOptions)

    @classmethod
    @exit_on_config_error  # fairseq-train: the message and exit status 2, no traceback
    def build_model(cls, args, task):
        args = as_namespace(args)
        man_base_architecture(args)
        options = read_options(args, MAN_PREFIX, MANOptions)  # validates before anything is built
        logger.info(
            "MAN layers: encoder %s, decoder %s, sizes %s, attention ReLU %s",
            "->".join(options.encoder_sublayers), "->".join(options.decoder_sublayers), options.sizes, options.attention_relu,
        )
        return super().build_model(args, task)


def man_size(fairseq_size: Callable[[Any], None], small: bool) -> Callable[[Any], None]:
    """A fairseq Transformer size plus MAN's FFN width and decoder order, where the user set none.

    ``--man-sizes released`` (default) at the small (IWSLT) size is the
    authors' released model: FFN inner dim = hidden size and Transformer
    decoder layers (san,ffn), within 0.1M of the Transformer (the paper's +1M is
    a difference of totals rounded to 1M: docs/methods/fan2021-man.md). ``paper`` and
    every other size: FFN inner dim = 2 x hidden and the encoder's order in
    the decoder too.
    """

    def apply(args) -> None:
        sizes = read_option(args, MAN_PREFIX, MANOptions, "sizes")
        released_small = small and sizes == "released"
        probe = copy.copy(args)
        fairseq_size(probe)  # the size's hidden dims, as the user's flags leave them
        ratio = 1 if released_small else 2
        defaults = {
            "encoder_ffn_embed_dim": ratio * probe.encoder_embed_dim,
            "decoder_ffn_embed_dim": ratio * probe.decoder_embed_dim,
            "man_decoder_order": "san,ffn" if released_small else getattr(args, "man_encoder_order", None),
            # the paper's small model; fairseq's IWSLT recipe passes --dropout 0.3 on the command line
            "dropout": 0.3 if small else None,
        }
        for attr, value in defaults.items():
            if value is not None and getattr(args, attr, None) is None:
                setattr(args, attr, value)
        fairseq_size(args)
        man_base_architecture(args)

    return apply


MAN_SIZES = {
    "": man_size(transformer_wmt_en_de, small=False),
    "_iwslt_de_en": man_size(transformer_iwslt_de_en, small=True),
    "_wmt_en_de": man_size(transformer_wmt_en_de, small=False),
    "_wmt_en_de_big": man_size(transformer_wmt_en_de_big, small=False),
}

# Table 1 and 3: DMAN -> SAN -> FFN (other orders: --man-encoder-order / --man-decoder-order)
register_locality_architectures("transformer_dman", {"man_encoder_order": "dman,san,ffn"}, model=MODEL_NAME, sizes=MAN_SIZES)
# Table 4: SMAN -> SAN -> FFN, SMAN1 (b = sqrt(L)/2) by default, SMAN2 with --sman-window fixed
register_locality_architectures("transformer_sman", {"man_encoder_order": "sman,san,ffn"}, model=MODEL_NAME, sizes=MAN_SIZES)
