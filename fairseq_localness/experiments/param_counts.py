"""Parameter counts of architectures and their delta over the plain Transformer of the same size.

    python scripts/param_counts.py --archs transformer_gaussian_local,transformer_relpos --sizes base,big
    python scripts/param_counts.py --archs transformer_hybrid_local --sizes base --extra="--hybrid-combine concat"

Vocabularies follow the standard recipes (``--recipe wmt14``: one joint 32k dictionary with shared embeddings;
``iwslt14``: fairseq's IWSLT'14 De-En dictionaries). Deltas do not depend on the vocabulary. ``--extra`` holds
fairseq flags and starts with a dash, so it is given with ``=`` (argparse would read ``--extra --flag`` as two
options).
"""

from __future__ import annotations

import argparse
import logging
import re
import shlex
from typing import Optional, Sequence

from ..attention.errors import LocalityConfigError
from ..modelbuild import RECIPE_VOCABULARIES, ModelOptionError, count_parameters, recipe_model, unknown_architecture

#: size name -> (architecture suffix, fairseq's Transformer of that size, the baseline of every delta)
SIZES = {"base": ("", "transformer"), "iwslt": ("_iwslt_de_en", "transformer_iwslt_de_en"),
         "big": ("_wmt_en_de_big", "transformer_wmt_en_de_big")}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="param_counts.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archs", required=True, help="comma-separated base architecture names (without size suffix)")
    parser.add_argument("--sizes", default="base,big", help=f"comma-separated sizes from {', '.join(SIZES)}")
    parser.add_argument("--recipe", default="wmt14", choices=sorted(RECIPE_VOCABULARIES))
    parser.add_argument("--extra", default="",
                        help="fairseq flags for every model (not the baseline), given with '=': "
                             "--extra='--gaussian-window layer'")
    parser.add_argument("--exact", action="store_true",
                        help="print exact counts (integers) rather than millions: for methods adding a few hundred")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown or not sizes:
        parser.error(f"--sizes {args.sizes!r}: choose from {', '.join(SIZES)}")
    try:
        extra = shlex.split(args.extra)
    except ValueError as err:  # an unclosed quote
        parser.error(f"--extra {args.extra!r}: {err}")
    archs = [arch for arch in args.archs.split(",") if arch]
    if not archs:
        parser.error(f"--archs {args.archs!r}: give one or more architecture names")
    for arch in archs:  # every name, before the first row is printed
        for size in sizes:
            problem = unknown_architecture(arch + SIZES[size][0])
            if problem:
                parser.error(f"--archs {arch}: {problem}" + (f" (size {size})" if SIZES[size][0] else ""))
    logging.disable(logging.WARNING)

    def show(count: int, signed: bool = False) -> str:
        if args.exact:
            return f"{count:+10,d}" if signed else f"{count:12,d}"
        return f"{count / 1e6:+9.3f}M" if signed else f"{count / 1e6:11.2f}M"

    given = {word.split("=")[0] for word in extra}  # the flags --extra gives, to blame it for their errors
    print(f"{'architecture':45s} {'params':>12s} {'baseline':>12s} {'delta':>10s}")
    for size in sizes:
        suffix, baseline = SIZES[size]
        base = count_parameters(recipe_model(baseline, args.recipe))
        for arch in archs:
            try:
                params = count_parameters(recipe_model(arch + suffix, args.recipe, extra))
            except ModelOptionError as err:  # a flag fairseq does not know for this architecture
                parser.error(f"{'--extra' if set(err.options) & given else '--archs ' + arch}: {err}")
            except LocalityConfigError as err:  # a locality option's bad value: --extra's where it names its flag
                named = set(re.findall(r"--[A-Za-z0-9][\w-]*", str(err)))
                parser.error(f"{'--extra' if named & given else '--archs ' + arch}: {err}")
            except ValueError as err:  # the architecture's own checks, as it is built
                parser.error(f"--archs {arch}: {err}")
            print(f"{arch + suffix:45s} {show(params)} {show(base)} {show(params - base, signed=True)}")


if __name__ == "__main__":
    main()
