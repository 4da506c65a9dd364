"""Architectures of Yang et al. (2018) Table 4: Localness, Rel_Pos, and both."""

from .base import register_locality_architectures

register_locality_architectures("transformer_gaussian_local", {"locality_methods": "gaussian"})
register_locality_architectures("transformer_relpos", {"locality_methods": "relpos"})
register_locality_architectures("transformer_gaussian_local_relpos", {"locality_methods": "gaussian,relpos"})
