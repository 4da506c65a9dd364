"""Architectures of the window family: Yang et al. (2019) Tables 1-2 (CSANs and the baselines they were
compared against) and Xu et al. (2019) Tables 1-2 (hybrid local/global attention).

Every name also comes in the sizes ``_iwslt_de_en``, ``_wmt_en_de`` and
``_wmt_en_de_big``; every default is the paper's, or the authors' release's where
the paper gives none (2D-CSAN's N = 3), and can be overridden by its flag (see
docs/methods/yang2019-csan.md and docs/baselines.md). Local_Soft is
``transformer_gaussian_local``, Rel_Pos ``transformer_relpos``; Block and Cnns are
``transformer_block`` and ``transformer_cnns``.
"""

from .base import register_locality_architectures

WINDOW_ARCHITECTURES = {
    "transformer_csan1d": "csan1d",
    "transformer_csan2d": "csan2d",
    "transformer_hybrid_local": "hybrid",
    "transformer_neighbor": "neighbor",
    "transformer_local_hard": "localhard",
    "transformer_bidirect": "bidirect",
    "transformer_block": "block",
    "transformer_cnns": "cnns",
}

for _name, _method in WINDOW_ARCHITECTURES.items():
    register_locality_architectures(_name, {"locality_methods": _method})
