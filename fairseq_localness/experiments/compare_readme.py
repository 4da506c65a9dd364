"""The README's results section, generated from the published comparison tables (docs/results/compare/).

    python -m fairseq_localness.experiments.compare_readme [--check]

Writes the text between ``<!-- compare-results -->`` and ``<!-- /compare-results -->`` in README.md: one line
per published corpus (its caption with date, machine and command, and links to its full table, figure, learning
curves, runs and BLEU by length), then one compact table with a row per (architecture, norm placement) and a
column per corpus (BLEU, and the difference from the baseline with its significance mark), read from each
corpus's ``table.json``, and a last column of each architecture's training speed measured in one process
(docs/results/benchmark/compare-size-cpu-time.json, with its own line of date, machine and command), and the
figure of the first corpus's BLEU against that speed (docs/figures/compare-bleu-one-process-speed.png, drawn from
the CSV beside it, which ``--check`` compares). The full
tables (every metric, the recipe, the test) stay in docs/results/compare/, so the README stays short while the
grid grows. It also writes the train-short / test-long block of
docs/methods/modern.md (``<!-- extrapolation-results -->``) from the Europarl split's BLEU by source length.
``--check`` writes nothing and exits 1 when either page differs from the files (``tests/test_docs.py`` checks both).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..paths import REPO
from . import run_analyses
from .compare import (ScatterPoint, ScatterSeries, labelled_scatter, mean_sd, seed_deltas, seeds_note, short_name,
                      speed_cell)
from .doc_tables import load_run, markdown, measured_at, replace_block

RESULTS = REPO / "docs" / "results" / "compare"
README = REPO / "README.md"
BEGIN, END = "<!-- compare-results -->", "<!-- /compare-results -->"
#: the published corpora, in the README's order: (label, title, short column name)
CORPORA = (("multi30k_de_en", "Multi30k de→en (test2016, lowercased)", "Multi30k de→en"),
           ("kftt_ja_en", "KFTT ja→en (dev; its raw reference is the tokenised English, detokenised)", "KFTT ja→en"),
           ("tatoeba_zh_en", "Tatoeba zh→en (fixed split)", "Tatoeba zh→en"),
           ("europarl_len_de_en", "Train short, test long: Europarl de→en, trained on sentences of at most 20 words",
            "Europarl, train ≤ 20 words"))


def cell(row: Dict, baseline: str, baseline_seeds: Optional[Sequence[int]] = None) -> str:
    """BLEU (mean ± sd over seeds) and, against the baseline, the difference with its significance mark, the
    seeds of that difference where it did not use every seed of both rows (``baseline_seeds``: the baseline's
    row's, same norm placement), and, over two or more seeds, on how many of them the row is ahead."""
    metric = "sacrebleu" if row.get("sacrebleu") is not None else "tokenized_bleu"
    if row.get(metric) is None:
        return "-"
    text = f"{row[metric]:.2f}" + (f" ± {row[metric + '_sd']:.2f}" if row.get(metric + "_sd") is not None else "")
    significance = (row.get("significance") or {}).get(metric)
    if significance:
        mark = f" {significance['mark']}" if significance.get("mark") else ""
        seeds = seeds_note(row, baseline_seeds)
        per_seed = seed_deltas(row)
        ahead = (f"; {sum(d > 0 for d in per_seed)} of {len(per_seed)} seeds ahead" if len(per_seed) > 1 else "")
        return f"{text} ({significance['delta']:+.2f}{mark}{', ' + seeds if seeds else ''}{ahead})"
    return f"{text} (baseline)" if row["arch"] == baseline else text


#: every architecture at the comparison recipe's size, timed in one process (docs/compare.md's generated table),
#: relative to ``RESULTS``'s parent
ONE_PROCESS_SPEED = Path("benchmark") / "compare-size-cpu-time.json"


def one_process_run(results: Path, recipe_table: Dict) -> Optional[Dict]:
    """The one-process speed measurement (``results``/../benchmark/), checked against the grid it stands beside;
    None where that file is absent. ``recipe_table`` is the first corpus's table.json: every measured model must
    have the parameters of the grid's model in the recipe's norm placement, else the file measured another model
    size or placement, and each architecture is measured at one length."""
    path = results.parent / ONE_PROCESS_SPEED
    if not path.is_file():
        return None
    run = load_run(path)
    archs = [record["arch"] for record in run["records"]]
    twice = next((arch for i, arch in enumerate(archs) if arch in archs[:i]), None)
    if twice:
        raise ValueError(f"{path}: {twice} is measured at more than one length; the README shows one")
    # the recipe's own norm placement (its first rows; the grid adds post-norm rows after them): a measurement at
    # another size or of the other norm placement (a final layer norm more or less) is refused
    norm = recipe_table["rows"][0]["norm"]
    trained = {r["arch"]: r.get("params") for r in recipe_table["rows"] if r["norm"] == norm}
    differ = [f"{r['arch']} {r['params']:,} (grid: {trained[r['arch']]:,})" for r in run["records"]
              if r["arch"] in trained and r["params"] != trained[r["arch"]]]
    if differ:
        raise ValueError(f"{path}: parameters differ from the grid's {norm}-norm models: {'; '.join(differ)}; "
                         f"measured at another size or norm placement than the recipe's")
    return run


def one_process_speed(results: Path, base: Path, recipe_table: Dict) -> Tuple[Optional[str], Dict[str, float]]:
    """The README's line on the one-process speed measurement (date, machine, command, file) and each
    architecture's median training ratio to the Transformer (:func:`one_process_run`); ``(None, {})`` where that
    file is absent."""
    run = one_process_run(results, recipe_table)
    if run is None:
        return None, {}
    path = results.parent / ONE_PROCESS_SPEED
    ratios = {record["arch"]: record["train_ratio"]["median"] for record in run["records"]}
    baseline, norm = recipe_table["baseline"], recipe_table["rows"][0]["norm"]
    first = run["records"][0]
    line = (f"* **Training speed, one process**: each architecture's training step at the recipe's model size and "
            f"norm placement ({norm}-norm; every measured model has the grid's parameters), on batches of {first['seq_len']}-token sentences, "
            f"interleaved with `{baseline}`'s in one process and timed by CPU time, median of "
            f"{first['train_ratio']['rounds']} rounds; "
            f"measured {measured_at(run)}; command: "
            f"`{run['command']}`; [result file]({Path(os.path.relpath(path, base)).as_posix()}), "
            f"[table]({Path(os.path.relpath(REPO / 'docs' / 'compare.md', base)).as_posix()}#the-table)"
            + speed_figure_link(results, base, recipe_table) + "."
            + (f" {run['note'].rstrip('.')}." if run.get("note") else ""))  # what the load average means, say
    return line, ratios


#: the front door's figure: the first corpus's BLEU against the one-process training speed, in the figures folder
#: beside ``RESULTS``'s parent (docs/figures/): the CSV holds everything the PNG is drawn from (``--check``
#: compares it with the result files), and the PNG records the digest of the CSV it was drawn from
SPEED_FIGURE = "compare-bleu-one-process-speed"
SPEED_FIGURE_FIELDS = ("arch", "baseline", "norm", "seeds", "metric", "bleu", "bleu_sd", "speed_median", "speed_q1",
                       "speed_q3", "speed_rounds", "speed_file", "speed_measured")


def speed_figure_path(results: Path, suffix: str) -> Path:
    return results.parent.parent / "figures" / f"{SPEED_FIGURE}{suffix}"


def speed_figure_link(results: Path, base: Path, recipe_table: Dict) -> str:
    """', [figure](...) ...' where the speed figure is drawn (``main`` draws it before the pages are written)."""
    png = speed_figure_path(results, ".png")
    if not png.is_file():
        return ""
    rel = Path(os.path.relpath(png, base)).as_posix()
    return (f", [figure]({rel}) of {CORPORA[0][2]}'s {recipe_table['rows'][0]['norm']}-norm BLEU against this "
            f"speed ([its points]({rel.removesuffix('.png')}.csv))")


def speed_figure_points(results: Path) -> List[Dict[str, str]]:
    """The figure's points: every row of the first published corpus in the recipe's norm placement (the one the
    one-process measurement timed; :func:`one_process_speed` checks its parameters) that was measured there, with
    its BLEU (mean, sd over seeds; sacreBLEU where the table has it, else tokenized BLEU, for every row alike) and
    its one-process training-speed ratio (median, interquartile range over the rounds). Empty where either file
    is absent. Formatted as the CSV holds them."""
    table_path = results / CORPORA[0][0] / "table.json"
    if not table_path.is_file():
        return []
    table = json.loads(table_path.read_text(encoding="utf-8"))
    run = one_process_run(results, table)
    if run is None:
        return []
    measured = {r["arch"]: r["train_ratio"] for r in run["records"]}
    norm = table["rows"][0]["norm"]
    metric = "sacrebleu" if any(r.get("sacrebleu") is not None for r in table["rows"]) else "tokenized_bleu"
    speed_file = (Path(results.parent.parent.name) / results.parent.name / ONE_PROCESS_SPEED).as_posix()
    points = []
    for row in table["rows"]:
        if row["norm"] != norm or row["arch"] not in measured or row.get(metric) is None:
            continue
        speed = measured[row["arch"]]
        points.append({"arch": row["arch"], "baseline": table["baseline"], "norm": norm,
                       "seeds": str(len(row["seeds"])), "metric": metric, "bleu": f"{row[metric]:.2f}",
                       "bleu_sd": "" if row.get(metric + "_sd") is None else f"{row[metric + '_sd']:.2f}",
                       "speed_median": f"{speed['median']:.4f}", "speed_q1": f"{speed['q1']:.4f}",
                       "speed_q3": f"{speed['q3']:.4f}", "speed_rounds": str(speed["rounds"]),
                       "speed_file": speed_file, "speed_measured": measured_at(run).split(",")[0]})
    return points


def speed_figure_csv(points: Sequence[Dict[str, str]]) -> str:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SPEED_FIGURE_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(points)
    return buffer.getvalue()


def drawn_from(text: str) -> str:
    """The Description the speed figure's PNG carries: the digest of the CSV it was drawn from."""
    import hashlib

    return f"drawn from {SPEED_FIGURE}.csv, sha256 {hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def png_description(path: Path) -> Optional[str]:
    import logging

    logging.getLogger("PIL").setLevel(logging.WARNING)  # fairseq's logging setup lets its chunk-by-chunk lines through
    from PIL import Image, UnidentifiedImageError  # matplotlib's own dependency

    try:
        with Image.open(path) as image:
            return getattr(image, "text", {}).get("Description")
    except (UnidentifiedImageError, OSError, SyntaxError):  # not a PNG, or a damaged one (PIL: SyntaxError)
        return None


def speed_figure_series(points: Sequence[Dict[str, str]]) -> List[ScatterSeries]:
    """The figure's points as drawn: x the median speed with its interquartile range, y the BLEU with its sd;
    filled markers for the rows with the most seeds, hollow ones for rows with fewer."""
    most = max(int(p["seeds"]) for p in points)

    def point(p: Dict[str, str]) -> ScatterPoint:
        median, q1, q3 = float(p["speed_median"]), float(p["speed_q1"]), float(p["speed_q3"])
        return ScatterPoint(short_name(p["arch"], p["baseline"]), median, float(p["bleu"]),
                            yerr=float(p["bleu_sd"] or 0.0), xerr=(median - q1, q3 - median))

    series = [ScatterSeries(f"{most} seed{'s' if most > 1 else ''}", "o",
                            [point(p) for p in points if int(p["seeds"]) == most])]
    fewer = [point(p) for p in points if int(p["seeds"]) < most]
    if fewer:
        series.append(ScatterSeries(f"fewer seeds so far ({'1' if most == 2 else f'1-{most - 1}'})", "o", fewer,
                                    hollow=True))
    return series


def draw_speed_figure(csv_text: str, path: Path) -> None:
    """The PNG, from the CSV's text alone (its title names the sources the CSV records)."""
    import csv

    points = list(csv.DictReader(csv_text.splitlines()))
    first = points[0]
    metric = "sacreBLEU" if first["metric"] == "sacrebleu" else "tokenized BLEU"
    base = next((float(p["bleu"]) for p in points if p["arch"] == first["baseline"]), None)
    labelled_scatter(speed_figure_series(points), path,
                     f"{CORPORA[0][2]}, {first['norm']}-norm: {metric} against the training speed measured in one "
                     f"process\nBLEU: the published {CORPORA[0][0]} table\nspeed: {first['speed_file']}, measured "
                     f"{first['speed_measured']}",
                     f"training speed relative to {first['baseline']}, one process (median, interquartile range "
                     f"over {first['speed_rounds']} rounds)", f"{metric} (mean ± sd over seeds)",
                     guides=(1.0, base), description=drawn_from(csv_text))


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
        rel = Path(os.path.relpath(results / label, base)).as_posix()
        links = [f"[full table]({rel}/table.md)", f"[figure]({rel}/figure.png)", f"[learning curves]({rel}/curves.png)",
                 f"[every run]({rel}/runs.csv)"]
        if (results / label / "buckets.md").is_file():
            links.append(f"[BLEU by source length]({rel}/buckets.md)")
        lines.append(f"* **{title}**: {table['caption']}; {', '.join(links)}.")
    first = published[0][3]
    order: List[Tuple[str, str]] = []
    cells: Dict[Tuple[str, str], Dict[str, str]] = {}
    for _, _, column, table in published:
        baseline_seeds = {row["norm"]: row["seeds"] for row in table["rows"] if row["arch"] == table["baseline"]}
        for row in table["rows"]:
            key = (row["arch"], row["norm"])
            if key not in cells:
                order.append(key)
                cells[key] = {}
            cells[key][column] = cell(row, table["baseline"], baseline_seeds.get(row["norm"]))
    extras = {(r["arch"], r["norm"]): r for r in first["rows"]}
    name = published[0][2]
    speed_line, one_process = one_process_speed(results, base, first)
    if speed_line:
        lines.append(speed_line)
    header = ["architecture", "norm", *(c for _, _, c, _ in published), f"parameters ({name})",
              f"training speed, grid ({name})", *(["training speed, one process"] if one_process else [])]
    rows = []
    for arch, norm in order:
        extra = extras.get((arch, norm), {})
        params = f"{extra['params'] / 1e6:.2f}M" if extra.get("params") else "-"
        speed = speed_cell(extra, "train_speed_ratio") if extra.get("train_speed_ratio") is not None else "-"
        measured = ([f"{one_process[arch]:.2f}" if arch in one_process else "-"] if one_process else [])
        rows.append([f"`{arch}`", norm, *(cells[(arch, norm)].get(c, "-") for _, _, c, _ in published), params, speed,
                     *measured])
    notes = ("Cells: sacreBLEU (tokenized BLEU where a corpus has no raw reference), mean ± sd over the seeds "
             f"finished, and the seed-pooled BLEU's difference from `{first['baseline']}` with the same norm "
             "placement, on the seeds both have (named where one row has seeds the other lacks); "
             "⇑/⇓ p < 0.01, ↑/↓ p < 0.05 (paired bootstrap over the test sentences, every seed's output of each; "
             "sacreBLEU's p, one-sided in the direction of the difference, with no correction for the many rows: "
             "with no real difference about one row in nine is marked by chance alone); "
             "over two or more seeds, on how many the row's BLEU is above the baseline's of the same seed. "
             "The test resamples sentences, not training seeds: a mark says that the difference holds across these "
             "test sentences for these seeds. Where the seeds disagree (1 of 3 ahead) the mark is not a robust "
             "difference, and where a cell has one seed (no sd) it says nothing of how far another seed would move "
             "it. The seed-pooled difference need not be the difference of the means: the pooled outputs share one "
             "brevity penalty. The full tables give each seed's difference and the outputs' length ratio. "
             "Training speed, grid: a ratio to the baseline's run of the same seed in the same grid, mean over the "
             "seeds both have. It is noisy: CPU runs share the machine, and a grid's runs are spread over machines "
             "of different speed. "
             + ("Training speed, one process: every row timed on one machine in one run (the line above the "
                "table says how; docs/compare.md gives each ratio's spread over the rounds), so the machine cannot "
                "differ between rows; it measured the recipe's norm placement, and the other placement differs by "
                "at most a final layer norm, so the post-norm rows repeat the measurement. " if one_process else "")
             + "The "
             "full tables give every metric, the seeds, the recipe, the test and the layers each method sits in "
             "(each method's default placement, which its paper chose for a 6-layer encoder).")
    return "\n".join(lines) + "\n\n" + markdown(header, rows) + "\n\n" + notes


#: the train-short / test-long page and its generated block (docs/methods/modern.md, "Train short, test long")
EXTRAPOLATION_LABEL = "europarl_len_de_en"
EXTRAPOLATION_PAGE = REPO / "docs" / "methods" / "modern.md"
EXTRAPOLATION_BEGIN, EXTRAPOLATION_END = "<!-- extrapolation-results -->", "<!-- /extrapolation-results -->"


def render_extrapolation(results: Path = RESULTS, page_dir: Path = EXTRAPOLATION_PAGE.parent) -> str:
    """The train-short / test-long block: the Europarl split's BLEU by source-length bucket (its buckets.md, as the
    comparison command wrote it), the figure of it and the grid's caption, from ``results``/europarl_len_de_en."""
    folder = results / EXTRAPOLATION_LABEL
    if not (folder / "table.json").is_file() or not (folder / "buckets.md").is_file():
        return "No run of this split has finished yet, so no number is published here."
    table = json.loads((folder / "table.json").read_text(encoding="utf-8"))
    rel = Path(os.path.relpath(folder, page_dir)).as_posix()
    buckets = (folder / "buckets.md").read_text(encoding="utf-8").strip()
    return (f"Grid: {table['caption']}; [full table]({rel}/table.md), [every run]({rel}/runs.csv), "
            f"[BLEU by length, every run]({rel}/buckets.csv).\n\n{buckets}\n\n"
            f"![tokenized BLEU by source length, one line per architecture]({rel}/buckets.png)\n\n"
            "The training and validation pairs have at most 20 source words as the split counts them, before "
            "tokenisation; the buckets count the tokenised words the models read (punctuation split off), of which "
            "a training source has up to 30. Buckets 1-10 to 21-30 therefore hold lengths the models were trained "
            "on (the longest of them rarely), and every bucket from 31 words on holds only sentences longer than "
            "any training sentence. The cells are "
            "tokenized BLEU of the test sentences in the bucket (their number in the header), and in brackets the "
            "difference from the baseline with its significance on those sentences; the BLEU over the whole test "
            "set, its test and the recipe are in the full table. Nine thousand training pairs make a weak model "
            "of Europarl: compare the rows within a bucket, and trust a difference where its mark says that the "
            "bucket's sentences support it.")


#: the trained-attention block (docs/analyses.md): the per-run analyses the comparison publishes
ATTENTION_PAGE = REPO / "docs" / "analyses.md"
ATTENTION_BEGIN, ATTENTION_END = "<!-- trained-attention -->", "<!-- /trained-attention -->"
MASS_FILE = Path(run_analyses.ANALYSES_DIR) / "attention-mass.csv"


def _mass_cell(values: Sequence[float]) -> str:
    mean, sd = mean_sd(values)
    return f"{mean:.1f}" + (f" ± {sd:.1f}" if sd is not None else "")


def runs_analysed(seeds: Set[int]) -> str:
    """How many runs a row averages, and their seeds: ``1 (seed 3)``, ``2 (seeds 1, 3)``."""
    ordered = sorted(seeds)
    return f"{len(ordered)} (seed{'s' if len(ordered) > 1 else ''} {', '.join(map(str, ordered))})"


def render_trained_attention(results: Path = RESULTS, page_dir: Path = ATTENTION_PAGE.parent) -> str:
    """Per corpus, the attention mass within w tokens (Fan et al. 2021 Eq. 13) of every encoder layer of every
    published run that has its analyses: mean ± sd over those runs' seeds, one row per architecture, norm
    placement and attention kind (a MAN layer has a DMAN or SMAN sub-layer and a SAN)."""
    import csv

    parts = []
    for label, title, _ in CORPORA:
        folder = results / label
        files = sorted(folder.glob(f"*/*/seed*/{MASS_FILE.as_posix()}"))
        if not files or not (folder / "table.json").is_file():
            continue
        table_json = json.loads((folder / "table.json").read_text(encoding="utf-8"))
        cells: Dict[Tuple[str, str, str], Dict[Tuple[int, int], List[float]]] = {}
        seeds: Dict[Tuple[str, str, str], Set[int]] = {}
        for path in files:
            run_dir = path.parent.parent
            norm, arch, seed = run_dir.parent.parent.name, run_dir.parent.name, int(run_dir.name[len("seed"):])
            with open(path, encoding="utf-8", newline="") as f:
                for record in csv.DictReader(f):
                    key = (arch, norm, record["kind"])
                    cells.setdefault(key, {}).setdefault((int(record["layer"]), int(record["w"])), []).append(
                        float(record["attn_s_percent"]))
                    seeds.setdefault(key, set()).add(seed)
        columns = sorted({column for by_column in cells.values() for column in by_column})
        order = [row["arch"] for row in table_json["rows"]]
        rows = sorted(cells, key=lambda k: (k[1], order.index(k[0]) if k[0] in order else len(order), k))
        headers = ("architecture", "norm", "attention", "runs analysed", *(f"layer {l}, w = {w}" for l, w in columns))
        table = markdown(headers,
                         [[f"`{arch}`", norm, kind, runs_analysed(seeds[arch, norm, kind]),
                           *(_mass_cell(cells[arch, norm, kind][c]) if c in cells[arch, norm, kind] else "-"
                             for c in columns)] for arch, norm, kind in rows])
        rel = Path(os.path.relpath(folder, page_dir)).as_posix()
        parts.append(f"**{title}.** Runs: {table_json['caption']}; [full table]({rel}/table.md). Every run's own file: "
                     f"`{rel}/NORM/ARCH/seedS/{MASS_FILE.as_posix()}`.\n\n{table}")
    if not parts:
        return ("No published run has its analyses yet: the comparison writes them as each run finishes "
                "(compare.md, \"Per-run analyses\").")
    return "\n\n".join(parts)


def speed_figure(results: Path, check: bool) -> int:
    """Write the speed figure's CSV where its points differ from the result files, and draw its PNG where the PNG
    was not drawn from that CSV (missing, or another's: its recorded digest); with ``check``, write nothing and
    return 1 where either would be written."""
    points = speed_figure_points(results)
    if not points:
        return 0
    csv_path, png_path = speed_figure_path(results, ".csv"), speed_figure_path(results, ".png")
    wanted = speed_figure_csv(points)
    current = csv_path.read_text(encoding="utf-8") if csv_path.is_file() else None
    drawn = png_description(png_path) == drawn_from(wanted) if png_path.is_file() else False
    if current == wanted and drawn:
        return 0
    if check:
        problem = ("its points differ from " + str(results) if current != wanted
                   else f"{png_path.name} was not drawn from them")
        print(f"{csv_path}: the speed figure's {problem}; run python -m fairseq_localness.experiments.compare_readme",
              file=sys.stderr)
        return 1
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    csv_path.write_text(wanted, encoding="utf-8")
    draw_speed_figure(wanted, png_path)
    print(f"updated {csv_path} and {png_path.name}")
    return 0


def replace_section(readme_text: str, section: str, where: str = "README.md") -> str:
    return replace_block(readme_text, BEGIN, END, section, where)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if README.md, the two other pages or the speed figure differ from "
                             "the result files")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--extrapolation-page", type=Path, default=EXTRAPOLATION_PAGE,
                        help="the page with the train-short / test-long block [docs/methods/modern.md]")
    parser.add_argument("--attention-page", type=Path, default=ATTENTION_PAGE,
                        help="the page with the trained-attention block [docs/analyses.md]")
    args = parser.parse_args(argv)
    for flag, path in (("--readme", args.readme), ("--extrapolation-page", args.extrapolation_page),
                       ("--attention-page", args.attention_page)):
        if not path.is_file():
            parser.error(f"{flag} {path}: no such file")
    if not args.results.is_dir():
        parser.error(f"--results {args.results}: no such directory")
    status = speed_figure(args.results, args.check)  # first: the README links the figure once it is drawn
    readme, page = args.readme.read_text(encoding="utf-8"), args.extrapolation_page.read_text(encoding="utf-8")
    attention = args.attention_page.read_text(encoding="utf-8")
    pages = [(args.readme, readme, replace_section(readme, render(args.results, args.readme.resolve().parent),
                                                   str(args.readme))),
             (args.extrapolation_page, page,
              replace_block(page, EXTRAPOLATION_BEGIN, EXTRAPOLATION_END,
                            render_extrapolation(args.results, args.extrapolation_page.resolve().parent),
                            str(args.extrapolation_page))),
             (args.attention_page, attention,
              replace_block(attention, ATTENTION_BEGIN, ATTENTION_END,
                            render_trained_attention(args.results, args.attention_page.resolve().parent),
                            str(args.attention_page)))]
    for path, current, wanted in pages:
        if wanted == current:
            continue
        if args.check:
            print(f"{path}: the results section differs from {args.results}; run "
                  "python -m fairseq_localness.experiments.compare_readme", file=sys.stderr)
            status = 1
        else:
            path.write_text(wanted, encoding="utf-8")
            print(f"updated {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
