"""Transformer layers that are more than a swapped attention module (e.g. the MAN layer's extra sub-layer)."""
