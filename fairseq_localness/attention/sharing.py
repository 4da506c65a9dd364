"""One module shared by every layer of a stack (T5's position biases, KERPLE's kernel, FIRE's function on request).

The attention core builds one method instance per attention block, so a method whose paper shares its parameters
across layers asks for them here. Sharing is per *stack*: the placement plan (``LocalityPlan.from_args``) is built
once by the encoder and once by the decoder, and hands every block of its stack the same options object, so the
shared modules live on that object, one per (name, attention type). The module is registered in every block that
uses it, as tied embeddings are: ``model.parameters()`` yields it once (parameter counts, the optimiser), the
state dict has one entry per layer holding the same values, and fairseq's trainer re-ties it on the device.
"""

from __future__ import annotations

from typing import Callable

from torch import nn

from .protocol import AttentionSpec, MethodOptions


def shared_per_stack(options: MethodOptions, spec: AttentionSpec, name: str, build: Callable[[], nn.Module]) -> nn.Module:
    """The module ``name`` of this stack's ``spec.attn_type`` blocks, built by ``build()`` on first use."""
    modules = options.__dict__.setdefault("_shared_per_stack", {})
    key = (name, spec.attn_type)
    if key not in modules:
        modules[key] = build()
    return modules[key]
