"""Architectures of the position methods that recent models use, one per method (docs/methods/modern.md).

Each method is the model's only position information, as in its paper: fairseq's sinusoidal position embeddings
are off by default (``no_token_positional_embeddings=True``; ALiBi, T5 and RoFormer add none, and KERPLE and FIRE
replace them). ``--arch transformer_localness --locality-methods NAME`` keeps the sinusoidal embeddings (fairseq's
flag can only switch them off). Every name also comes as ``_iwslt_de_en``, ``_wmt_en_de`` and ``_wmt_en_de_big``.
"""

from .base import register_locality_architectures

MODERN_ARCHITECTURES = {
    "transformer_alibi": "alibi",
    "transformer_t5bias": "t5bias",
    "transformer_kerple": "kerple",
    "transformer_fire": "fire",
    "transformer_rope": "rope",
}

for _name, _method in MODERN_ARCHITECTURES.items():
    register_locality_architectures(_name, {"locality_methods": _method, "no_token_positional_embeddings": True})
