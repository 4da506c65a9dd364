"""The one way to build a model outside fairseq-train: fairseq's own option parsing over synthetic dictionaries.

Used by the benchmark, the parameter counts, the paper tables' build checks, the
analyses and the tests, so that every one of them builds exactly the model that
``fairseq-train --arch ARCH FLAGS`` would.
"""

from __future__ import annotations

import argparse
import difflib
from typing import Dict, Iterable, Mapping, Optional, Sequence, Tuple

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


class ModelOptionError(ValueError):
    """A model option that fairseq's parser rejects; the message names the option and the model, ``options`` the
    command-line words it rejected (empty for an override)."""

    def __init__(self, message: str, options: Sequence[str] = ()):
        super().__init__(message)
        self.options = list(options)


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _flag_value(dest: str, raw: str, label: str) -> bool:
    low = raw.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise ModelOptionError(f"{label}: option {dest} is a flag, give true or false (got {raw!r})")


def _typed_value(action: argparse.Action, dest: str, raw: str, label: str):
    if action.type is not None and raw != "None":
        try:
            value = action.type(raw)
        except Exception as exc:  # argparse would reject it the same way
            raise ModelOptionError(f"{label}: bad value {raw!r} for option {dest}: {exc}")
    else:
        value = None if raw == "None" else raw
    if action.choices is not None and value not in action.choices:
        raise ModelOptionError(f"{label}: option {dest} must be one of {list(action.choices)}, got {raw!r}")
    return value


def unknown_architecture(arch: str) -> Optional[str]:
    """Why ``arch`` cannot be built: it is no registered architecture (with the close names); None when it is one."""
    import fairseq_localness  # noqa: F401  (registers the plugin's architectures)

    if arch in ARCH_MODEL_REGISTRY:
        return None
    close = difflib.get_close_matches(arch, sorted(ARCH_MODEL_REGISTRY), n=4, cutoff=0.6)
    return f"unknown architecture {arch!r}" + (f" (close: {', '.join(close)})" if close else "")


def parse_model_args(
    arch: str,
    extra: Iterable[str] = (),
    overrides: Optional[Mapping[str, str]] = None,
    lenient_overrides: Optional[Mapping[str, str]] = None,
    label: Optional[str] = None,
) -> argparse.Namespace:
    """Parse ``--arch arch extra...`` with fairseq's training parser, exactly as fairseq-train does.

    ``overrides`` (option dest -> value as a command-line string) are applied as
    parser defaults, i.e. before the architecture function runs, exactly like
    command-line flags; booleans may be turned off with ``false``. An unknown
    name in ``overrides`` is a :class:`ModelOptionError`; ``lenient_overrides``
    (lower precedence) are skipped where the architecture lacks the option.
    """
    label = label or arch
    problem = unknown_architecture(arch)  # also registers the plugin's architectures
    if problem:
        raise ValueError(problem)
    requested: Dict[str, Tuple[str, bool]] = {k: (v, False) for k, v in (lenient_overrides or {}).items()}
    requested.update({k: (v, True) for k, v in (overrides or {}).items()})

    def modify(parser: argparse.ArgumentParser) -> None:
        actions = {a.dest: a for a in parser._actions}
        defaults = {}
        for dest, (raw, _strict) in requested.items():
            action = actions.get(dest)
            if action is None:
                continue  # not (yet) known: architecture options appear later; checked after parsing
            defaults[dest] = (_flag_value(dest, raw, label) if action.nargs == 0
                              else _typed_value(action, dest, raw, label))
        parser.set_defaults(**defaults)

    parser = options.get_training_parser()
    args, unknown = options.parse_args_and_arch(
        parser, ["/nonexistent-data-dir", "--arch", arch, "--task", "translation", *extra], parse_known=True,
        modify_parser=modify)
    if unknown:  # named here with its model, not in fairseq's page-long usage message
        given = [a.split("=")[0] for a in unknown if a.startswith("-") and not _is_number(a)]
        if not given:  # a value too many, after an option that takes fewer
            raise ModelOptionError(f"{label}: {' '.join(unknown)}: a value no option of arch {arch} takes",
                                   unknown)
        flags = sorted(a for a in parser._option_string_actions if a.startswith("--"))
        close = difflib.get_close_matches(given[0], flags, n=4, cutoff=0.6)
        hint = f" (close: {', '.join(close)})" if close else ""
        raise ModelOptionError(f"{label}: {', '.join(given)} is not a fairseq option for arch {arch}{hint}", given)
    known = {a.dest for a in parser._actions}
    for dest, (_raw, strict) in requested.items():
        if strict and dest not in known:
            close = difflib.get_close_matches(dest, sorted(known), n=4, cutoff=0.6)
            hint = f" (close: {', '.join(close)})" if close else ""
            raise ModelOptionError(f"{label}: {dest!r} is not a fairseq option for arch {arch}{hint}")
    return args


def build_translation_model(args, source: Dictionary, target: Dictionary):
    """(task, model) of fairseq's translation task over the given dictionaries, as fairseq-train builds them."""
    task = TranslationTask(args, source, target)
    return task, task.build_model(args)


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
    return build_translation_model(args, source, target)[1]


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
