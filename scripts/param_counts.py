#!/usr/bin/env python
"""Print parameter counts of architectures and their delta over the plain Transformer of the same size.

    python scripts/param_counts.py --archs transformer_gaussian_local,transformer_relpos --sizes base,big

Vocabularies follow the standard recipes (``--recipe wmt14``: one joint 32k
dictionary with shared embeddings; ``iwslt14``: fairseq's IWSLT'14 De-En
dictionaries). Deltas do not depend on the vocabulary.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fairseq_localness.modelbuild import RECIPE_VOCABULARIES, count_parameters, recipe_model  # noqa: E402

SIZES = {"base": ("", "transformer"), "iwslt": ("_iwslt_de_en", "transformer_iwslt_de_en"), "big": ("_wmt_en_de_big", "transformer_wmt_en_de_big")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archs", required=True, help="comma-separated base architecture names (without size suffix)")
    parser.add_argument("--sizes", default="base,big", help=f"comma-separated sizes from {', '.join(SIZES)}")
    parser.add_argument("--recipe", default="wmt14", choices=sorted(RECIPE_VOCABULARIES))
    parser.add_argument("--extra", default="", help="extra flags for every model, e.g. '--gaussian-window layer'")
    parser.add_argument("--exact", action="store_true",
                        help="print exact counts (integers) rather than millions: for methods adding a few hundred")
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    extra = args.extra.split()
    print(f"{'architecture':45s} {'params':>12s} {'baseline':>12s} {'delta':>10s}")

    def show(count: int, signed: bool = False) -> str:
        if args.exact:
            return f"{count:+10,d}" if signed else f"{count:12,d}"
        return f"{count / 1e6:+9.3f}M" if signed else f"{count / 1e6:11.2f}M"
    for size in args.sizes.split(","):
        if size not in SIZES:
            parser.error(f"unknown size {size!r}; choose from {', '.join(SIZES)}")
        suffix, baseline = SIZES[size]
        base = count_parameters(recipe_model(baseline, args.recipe))
        for arch in args.archs.split(","):
            try:
                params = count_parameters(recipe_model(arch + suffix, args.recipe, extra))
            except ValueError as err:  # an unknown architecture
                parser.error(f"--archs {arch}: {err}")
            print(f"{arch + suffix:45s} {show(params)} {show(base)} {show(params - base, signed=True)}")


if __name__ == "__main__":
    main()
