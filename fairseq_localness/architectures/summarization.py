"""Fan et al. (2021)'s summarization sizes (Sec. 3.1.2, Table 2): MAN and its Transformer baseline at 768 dims.

Sec. 3.1.2: "Following Song et al. (2019), we set the hidden size, embeddings
and attention heads to 768, 768, and 12 respectively. Our model consists of a
6-layer encoder and 6-layer decoder. [...] the dimensionality of the
inner-layer of the FFN in the MAN layers is set to two times of the
dimensionality of the hidden states" (FFN 1536). The authors' released
``man_base`` (summarization/model/man.py) has exactly these sizes, every
encoder and decoder layer DMAN -> SAN -> FFN (``*_mix_layers = 6``), and, where
the paper is silent: post-norm sub-layers LN(H + f(H)), a layer norm on the
embeddings, learned positions, dropout / attention dropout / activation
dropout 0.1, shared source/target/output embeddings (MASS's setting, one BERT
WordPiece dictionary). Both architectures here take those as their defaults, and
the release's GELU in the FFN (its man.py line 773), where the paper's Eq. 3 and 9
write a ReLU (docs/summarization.md says why we keep the release's).

The Transformer baseline keeps FFN = 4 x hidden (3,072): Sec. 3.1.1 halves the
FFN of MAN layers "to make a relatively fair comparison", i.e. against
Transformers with the usual 4 x hidden, and Table 1's counts (62M vs 63M at the
base size) are equal-parameter; the paper names no other FFN for it.
Table 2 has no SMAN row, so there is no ``transformer_sman_summarization``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from fairseq.models.transformer import base_architecture

from ..layers.man import man_base_architecture
from .base import localness_base_architecture, register_locality_architectures

HIDDEN, HEADS, LAYERS = 768, 12, 6
MAN_FFN = 2 * HIDDEN  # Sec. 3.1.2 / man_base: 1536
TRANSFORMER_FFN = 4 * HIDDEN  # Sec. 3.1.1's comparison: the Transformer's usual 4 x hidden
#: the authors' scripts train with --max-source-positions 512 --max-target-positions 512; pass them on the
#: command line (fairseq's translation task sets its own 1024 before any architecture runs)
MAX_POSITIONS = 512

#: the authors' man_base where the paper is silent (summarization/model/man.py)
RELEASED_SETTINGS: Dict[str, Any] = {
    "encoder_embed_dim": HIDDEN, "decoder_embed_dim": HIDDEN,
    "encoder_attention_heads": HEADS, "decoder_attention_heads": HEADS,
    "encoder_layers": LAYERS, "decoder_layers": LAYERS,
    "dropout": 0.1, "attention_dropout": 0.1, "activation_dropout": 0.1,
    "activation_fn": "gelu",
    "encoder_learned_pos": True, "decoder_learned_pos": True,
    "layernorm_embedding": True,
    "share_all_embeddings": True,
}


def summarization_size(ffn: int, man: bool) -> Callable[[Any], None]:
    """Fill every size/regularisation option the user did not set; flags given on the command line win."""

    def apply(args) -> None:
        defaults = dict(RELEASED_SETTINGS, encoder_ffn_embed_dim=ffn, decoder_ffn_embed_dim=ffn)
        if man:
            defaults["man_norm"] = "post"  # the released summarization layers are post-norm
        for attr, value in defaults.items():
            current = getattr(args, attr, None)
            if current is None or current is False:  # store_true flags are False when not given
                setattr(args, attr, value)
        if man:
            man_base_architecture(args)
        else:
            localness_base_architecture(args)
        base_architecture(args)  # fairseq's own defaults for the rest (decoder_output_dim, ...)

    return apply


# Table 2 "Ours": DMAN -> SAN -> FFN in every encoder and decoder layer (released man_base: mix layers 6/6)
register_locality_architectures(
    "transformer_dman", {"man_encoder_order": "dman,san,ffn"}, model="transformer_man",
    sizes={"_summarization": summarization_size(MAN_FFN, man=True)},
)
# Table 2 "Transformer (Vaswani et al., 2017)": the same model with plain Transformer layers
register_locality_architectures(
    "transformer", {}, sizes={"_summarization": summarization_size(TRANSFORMER_FFN, man=False)},
)
