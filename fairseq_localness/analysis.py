"""Build models without data (synthetic dictionaries) for parameter counts and benchmarks."""

from __future__ import annotations

import argparse
from typing import Dict, Iterable, Optional, Tuple

from fairseq import options
from fairseq.data import Dictionary
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq.tasks.translation import TranslationTask

#: vocabulary sizes (types, before fairseq's 4 specials) of the standard recipes
RECIPE_VOCABULARIES: Dict[str, Tuple[int, int, bool]] = {
    # name: (source types, target types, joined dictionary + --share-all-embeddings)
    # fairseq's examples/translation/prepare-iwslt14.sh (joint BPE 10k, separate dictionaries)
    "iwslt14": (8844, 6628, False),
    # fairseq's WMT'16 En-De (Vaswani et al.) release: joint BPE 32k, one dictionary
    "wmt14": (32764, 32764, True),
}


def synthetic_dictionary(types: int) -> Dictionary:
    dictionary = Dictionary()
    for index in range(types):
        dictionary.add_symbol(f"w{index}")
    return dictionary


def parse_model_args(arch: str, extra: Iterable[str] = ()) -> argparse.Namespace:
    """Parse ``--arch arch extra...`` with fairseq's training parser, exactly as fairseq-train does."""
    import fairseq_localness  # noqa: F401  (registers the plugin's architectures)

    if arch not in ARCH_MODEL_REGISTRY:
        raise ValueError(f"unknown architecture {arch!r}")
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, ["/nonexistent-data-dir", "--arch", arch, "--task", "translation", *extra])


def build_model_with_vocab(
    arch: str, source_types: int, target_types: int, joined: bool, extra: Iterable[str] = (),
):
    """A model of ``arch`` over synthetic dictionaries of the given sizes."""
    extra = list(extra)
    if joined and "--share-all-embeddings" not in extra:
        extra.append("--share-all-embeddings")
    if not joined and "--share-decoder-input-output-embed" not in extra:
        extra.append("--share-decoder-input-output-embed")
    args = parse_model_args(arch, extra)
    source = synthetic_dictionary(source_types)
    target = source if joined else synthetic_dictionary(target_types)
    task = TranslationTask(args, source, target)
    return task.build_model(args)


def count_parameters(model, trainable_only: bool = True) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def recipe_model(arch: str, recipe: str, extra: Iterable[str] = ()):
    source_types, target_types, joined = RECIPE_VOCABULARIES[recipe]
    return build_model_with_vocab(arch, source_types, target_types, joined, extra)


def parameter_delta(arch: str, baseline: str, recipe: str, extra: Iterable[str] = (), baseline_extra: Optional[Iterable[str]] = None) -> Tuple[int, int]:
    """(parameters of ``arch``, parameters of ``baseline``) on the recipe's vocabulary."""
    model = count_parameters(recipe_model(arch, recipe, extra))
    base = count_parameters(recipe_model(baseline, recipe, baseline_extra if baseline_extra is not None else extra))
    return model, base
