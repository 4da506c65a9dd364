"""Architectures of Nguyen et al. (2020) Table 1, named after the paper's rows.

Each placement of the Differentiable Window is its own locality method with
the paper's defaults (layers 1-3): ``diffwin_enc`` (AW, token masking),
``diffwin_cross`` (AW, segment masking, b = 5) and ``diffwin_dec`` (MW, causal
token pointers). Table 3 rows are these architectures with
``--diffwin-{enc,cross,dec}-{mode,masking,layers,renormalize}`` flags; Table 2 rows
are ``transformer_localness_*`` with ``--locality-methods diffwin_*``
(configs/paper_tables.yaml).
"""

from .base import register_locality_architectures

# Enc(AW)-Cr(AW,Seg)-Dec(MW): the paper's best row
register_locality_architectures("transformer_diffwin", {"locality_methods": "diffwin_enc,diffwin_cross,diffwin_dec"})
# Enc(AW)-Dec(MW)
register_locality_architectures("transformer_diffwin_enc_dec", {"locality_methods": "diffwin_enc,diffwin_dec"})
# Cr(AW,Seg)
register_locality_architectures("transformer_diffwin_cross", {"locality_methods": "diffwin_cross"})
