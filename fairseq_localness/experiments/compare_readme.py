"""The README's results section, generated from the published comparison tables (docs/results/compare/).

    python -m fairseq_localness.experiments.compare_readme [--check]

Writes the text between ``<!-- compare-results -->`` and ``<!-- /compare-results -->`` in README.md: for each
published corpus, its table as ``fairseq-localness-compare`` wrote it (caption with date, machine and command;
the recipe and the test under it) and links to its figure and learning curves. ``--check`` writes nothing and
exits 1 when the README differs from the files (``tests/test_docs.py`` runs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..paths import REPO
from .doc_tables import replace_block

RESULTS = REPO / "docs" / "results" / "compare"
README = REPO / "README.md"
BEGIN, END = "<!-- compare-results -->", "<!-- /compare-results -->"
#: the published corpora, in the README's order
CORPORA = (("multi30k_de_en", "Multi30k de→en (test2016)"), ("kftt_ja_en", "KFTT ja→en (dev)"),
           ("tatoeba_zh_en", "Tatoeba zh→en (fixed split)"),
           ("europarl_len_de_en", "Train short, test long: Europarl de→en, trained on sentences of at most 20 words"))
#: corpora whose BLEU-by-length table is the point of the experiment, shown in the README (others: linked)
BUCKETS_SHOWN = {"europarl_len_de_en"}


def render(results: Path = RESULTS, base: Path = REPO) -> str:
    """The section's text from the table.md files under ``results`` (links relative to ``base``)."""
    parts = []
    for label, title in CORPORA:
        table = results / label / "table.md"
        if not table.is_file():
            continue
        rel = (results / label).relative_to(base).as_posix()
        buckets = results / label / "buckets.md"
        by_length = ""
        if buckets.is_file():
            by_length = (f"\n\n{buckets.read_text(encoding='utf-8').strip()}" if label in BUCKETS_SHOWN
                         else f" BLEU by source length: [{rel}/buckets.md]({rel}/buckets.md).")
        parts.append(f"#### {title}\n\n{table.read_text(encoding='utf-8').strip()}\n\n"
                     f"Figure: [BLEU against training speed]({rel}/figure.png); "
                     f"[validation loss per epoch of every run]({rel}/curves.png); every run: [{rel}/runs.csv]({rel}/runs.csv)."
                     + by_length)
    if not parts:
        return "No comparison has been published yet: `bash scripts/compare-published.sh` runs the grid."
    return "\n\n".join(parts)


def replace_section(readme_text: str, section: str) -> str:
    return replace_block(readme_text, BEGIN, END, section, "README.md")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md differs from the result files")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    current = args.readme.read_text(encoding="utf-8")
    wanted = replace_section(current, render(args.results, args.readme.resolve().parent))
    if args.check:
        if wanted != current:
            print(f"{args.readme}: the results section differs from {args.results}; run "
                  "python -m fairseq_localness.experiments.compare_readme", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        args.readme.write_text(wanted, encoding="utf-8")
        print(f"updated {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
