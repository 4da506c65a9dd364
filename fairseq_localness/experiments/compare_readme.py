"""The README's results section, generated from the published comparison tables (docs/results/compare/).

    python -m fairseq_localness.experiments.compare_readme [--check]

Writes the text between ``<!-- compare-results -->`` and ``<!-- /compare-results -->`` in README.md: one line
per published corpus (its caption with date, machine and command, and links to its full table, figure, learning
curves, runs and BLEU by length), then one compact table with a row per (architecture, norm placement) and a
column per corpus (BLEU, and the difference from the baseline with its significance mark), read from each
corpus's ``table.json``. The full tables (every metric, the recipe, the test) stay in docs/results/compare/, so
the README stays short while the grid grows. ``--check`` writes nothing and exits 1 when the README differs from
the files (``tests/test_docs.py`` runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..paths import REPO
from .doc_tables import markdown, replace_block

RESULTS = REPO / "docs" / "results" / "compare"
README = REPO / "README.md"
BEGIN, END = "<!-- compare-results -->", "<!-- /compare-results -->"
#: the published corpora, in the README's order: (label, title, short column name)
CORPORA = (("multi30k_de_en", "Multi30k de→en (test2016)", "Multi30k de→en"),
           ("kftt_ja_en", "KFTT ja→en (dev)", "KFTT ja→en"),
           ("tatoeba_zh_en", "Tatoeba zh→en (fixed split)", "Tatoeba zh→en"),
           ("europarl_len_de_en", "Train short, test long: Europarl de→en, trained on sentences of at most 20 words",
            "Europarl, train ≤ 20 words"))


def cell(row: Dict, baseline: str) -> str:
    """BLEU (mean ± sd over seeds) and, against the baseline, the difference with its significance mark."""
    metric = "sacrebleu" if row.get("sacrebleu") is not None else "tokenized_bleu"
    if row.get(metric) is None:
        return "-"
    text = f"{row[metric]:.2f}" + (f" ± {row[metric + '_sd']:.2f}" if row.get(metric + "_sd") is not None else "")
    significance = (row.get("significance") or {}).get(metric)
    if significance:
        mark = f" {significance['mark']}" if significance.get("mark") else ""
        return f"{text} ({significance['delta']:+.2f}{mark})"
    return f"{text} (baseline)" if row["arch"] == baseline else text


def render(results: Path = RESULTS, base: Path = REPO) -> str:
    """The section's text from the table.json files under ``results`` (links relative to ``base``)."""
    published: List[Tuple[str, str, str, Dict]] = []
    for label, title, column in CORPORA:
        table = results / label / "table.json"
        if table.is_file():
            published.append((label, title, column, json.loads(table.read_text(encoding="utf-8"))))
    if not published:
        return "No comparison has been published yet: `bash scripts/compare-published.sh` runs the grid."
    lines = []
    for label, title, _, table in published:
        rel = (results / label).relative_to(base).as_posix()
        links = [f"[full table]({rel}/table.md)", f"[figure]({rel}/figure.png)", f"[learning curves]({rel}/curves.png)",
                 f"[every run]({rel}/runs.csv)"]
        if (results / label / "buckets.md").is_file():
            links.append(f"[BLEU by source length]({rel}/buckets.md)")
        lines.append(f"* **{title}**: {table['caption']}; {', '.join(links)}.")
    first = published[0][3]
    order: List[Tuple[str, str]] = []
    cells: Dict[Tuple[str, str], Dict[str, str]] = {}
    for _, _, column, table in published:
        for row in table["rows"]:
            key = (row["arch"], row["norm"])
            if key not in cells:
                order.append(key)
                cells[key] = {}
            cells[key][column] = cell(row, table["baseline"])
    extras = {(r["arch"], r["norm"]): r for r in first["rows"]}
    name = published[0][2]
    header = ["architecture", "norm", *(c for _, _, c, _ in published), f"parameters ({name})",
              f"training speed ({name})"]
    rows = []
    for arch, norm in order:
        extra = extras.get((arch, norm), {})
        params = f"{extra['params'] / 1e6:.2f}M" if extra.get("params") else "-"
        speed = f"{extra['train_speed_ratio']:.2f}" if extra.get("train_speed_ratio") is not None else "-"
        rows.append([f"`{arch}`", norm, *(cells[(arch, norm)].get(c, "-") for _, _, c, _ in published), params, speed])
    notes = ("Cells: sacreBLEU (tokenized BLEU where a corpus has no raw reference), mean ± sd over the seeds "
             f"finished, and the difference from `{first['baseline']}` with the same norm placement and seeds; "
             "⇑/⇓ p < 0.01, ↑/↓ p < 0.05 (paired bootstrap over the test sentences, every seed's output of each). "
             "Training speed is a ratio to the baseline in the same grid (CPU runs share the machine: noisy). The "
             "full tables give every metric, the seeds, the recipe, the test and the layers each method sits in "
             "(each method's default placement, which its paper chose for a 6-layer encoder).")
    return "\n".join(lines) + "\n\n" + markdown(header, rows) + "\n\n" + notes


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
