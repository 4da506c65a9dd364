"""The plugin's architecture families: one base-size architecture name per family."""

from __future__ import annotations

from typing import List


def architecture_families(include_plain: bool = True) -> List[str]:
    """Every architecture the plugin registers, without its size variants (``_iwslt_de_en``,
    ``_summarization`` ...: ``REGISTERED_SIZE_SUFFIXES``), sorted.

    ``transformer_localness`` (no method unless ``--locality-methods`` is given) is the plugin's
    plain Transformer; ``include_plain=False`` leaves it out.
    """
    import fairseq_localness  # noqa: F401  (registers the architectures)
    from fairseq.models import ARCH_MODEL_REGISTRY

    from ..architectures.base import REGISTERED_SIZE_SUFFIXES, LocalnessTransformerModel

    suffixes = tuple(REGISTERED_SIZE_SUFFIXES)
    names = sorted(
        arch for arch, model in ARCH_MODEL_REGISTRY.items()
        if isinstance(model, type) and issubclass(model, LocalnessTransformerModel) and not arch.endswith(suffixes)
    )
    return [name for name in names if include_plain or name != "transformer_localness"]
