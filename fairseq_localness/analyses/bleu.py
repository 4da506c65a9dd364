"""Analyses of translations (no checkpoint needed): n-gram gaps, length buckets, and BLEU sweeps.

* n-gram gap -- Yang et al. (2018) Figure 4 and Yang et al. (2019) Figure 3 plot a
  "gap of BLEU" per n-gram order (1..8) between a model and the baseline. The papers
  do not define the per-order score; we use the BLEU component of order n, the corpus
  modified n-gram precision p_n of sacreBLEU (``BLEU(max_ngram_order=8)``), in BLEU
  points (percent), and the gap system minus baseline. A system given several files (the
  seeds of one architecture) is scored on their concatenation against the references
  repeated as often: seed-pooled counts, as the comparison's significance test pools seeds.
* BLEU by source-length bucket -- every paper discusses length; corpus sacreBLEU per bucket.
* sweeps -- Yang et al. (2019) Figure 2 (BLEU against the 1D window M and the number of
  2D heads N) and Xu et al. (2019) Figure 2 (BLEU against the hybrid window m, with the
  mean gate as a second axis): one point per run directory, BLEU from its ``scores.json``
  (``scripts/evaluate.sh``).

Translation files are plain text, one sentence per line, or fairseq-generate output
(its ``H-``/``T-``/``S-`` lines are read back in sentence order).
"""

from __future__ import annotations

import glob
import json
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple, Union

from sacrebleu.metrics import BLEU

from ..evaluation.outputs import SCORES
from .loading import AnalysisError
from .output import SYSTEM_COLOURS, Table, figure

GENERATE_LINE = re.compile(r"^([HTS])-(\d+)\t(.*)$")


def read_translations(path: str, field: str = "H") -> List[str]:
    """Lines of a plain text file, or the ``field`` lines (H, T or S) of fairseq-generate output, by sentence id."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as exc:
        raise AnalysisError(f"{path}: cannot read it ({exc})") from exc
    if lines and lines[-1] == "":
        lines.pop()
    found: Dict[int, str] = {}
    generate = False
    for line in lines:
        match = GENERATE_LINE.match(line)
        if match:
            generate = True
            if match.group(1) == field:
                text = match.group(3)
                found[int(match.group(2))] = text.split("\t", 1)[1] if field == "H" and "\t" in text else text
    if not generate:
        return lines
    return [found[i] for i in sorted(found)]


def ngram_scores(hypotheses: Sequence[str], references: Sequence[str], max_order: int = 8,
                 tokenize: str = "13a", lowercase: bool = False) -> Tuple[List[float], float]:
    """(p_1..p_max_order in percent, corpus BLEU of order max_order) from sacreBLEU's statistics.

    p_n is 100 * matches / total n-grams, unsmoothed: sacreBLEU's ``precisions`` replace a zero count
    by its smoothing value, which is right for the BLEU score but not for a per-order comparison.
    """
    metric = BLEU(max_ngram_order=max_order, tokenize=tokenize, lowercase=lowercase)
    score = metric.corpus_score(list(hypotheses), [list(references)])
    precisions = [100.0 * c / t if t else 0.0 for c, t in zip(score.counts, score.totals)]
    return precisions, score.score


def _same_length(named: Dict[str, Sequence[str]], references: Sequence[str], ref_path: str) -> None:
    if not references:
        raise AnalysisError(f"--ref {ref_path}: no sentences")
    for name, lines in named.items():
        if len(lines) != len(references):
            raise AnalysisError(f"{name}: {len(lines)} sentences but --ref {ref_path} has {len(references)}")


Files = Union[str, Sequence[str]]


def _pooled(paths: Files, references: Sequence[str], ref_path: str, name: str) -> Tuple[List[str], List[str]]:
    """One system's translations over all its files, and the references repeated once per file."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    hypotheses: List[str] = []
    for path in paths:
        lines = read_translations(path)
        _same_length({f"{name} {path}": lines}, references, ref_path)
        hypotheses += lines
    return hypotheses, list(references) * len(paths)


def ngram_gap(systems: Dict[str, Files], baseline: Files, reference: str, max_order: int = 8, tokenize: str = "13a",
              lowercase: bool = False, baseline_name: str = "baseline"):
    """Table and figure of p_n(system) - p_n(baseline) for n = 1..max_order; ``baseline_name`` names the baseline
    in the caption.

    A system (or the baseline) given as several files is scored seed-pooled: its files concatenated, the
    references repeated once per file.
    """
    refs = read_translations(reference, "T")
    _same_length({}, refs, reference)
    hyps = {name: _pooled(paths, refs, reference, name) for name, paths in systems.items()}
    base = _pooled(baseline, refs, reference, "--baseline")
    base_p, base_bleu = ngram_scores(*base, max_order, tokenize, lowercase)
    # the files of each system: its references are repeated once per file
    files = {**{name: len(repeated) // len(refs) for name, (_, repeated) in hyps.items()},
             baseline_name: len(base[1]) // len(refs)}
    pooled = (" Seed-pooled: " + ", ".join(f"{name} {count} files" for name, count in files.items())
              + "." if max(files.values()) > 1 else "")
    table = Table(["system", "n", "precision", "baseline_precision", "gap"],
                  caption=f"Yang et al. (2018) Figure 4 / Yang et al. (2019) Figure 3: gap in n-gram precision p_n "
                          f"(sacreBLEU counts, tokenize={tokenize}{', lowercased' if lowercase else ''}, points) "
                          f"over the baseline {baseline_name} (its BLEU with n-grams up to {max_order}: "
                          f"{base_bleu:.2f}).{pooled}")
    fig, axes = figure(1, 1, width=5.6, height=2.4)  # room for the legend beside the axes
    ax = axes[0][0]
    for colour, (name, (lines, repeated_refs)) in zip(SYSTEM_COLOURS, hyps.items()):
        precisions, _ = ngram_scores(lines, repeated_refs, max_order, tokenize, lowercase)
        gaps = [p - b for p, b in zip(precisions, base_p)]
        for n, (p, b, g) in enumerate(zip(precisions, base_p, gaps), start=1):
            table.add(system=name, n=n, precision=p, baseline_precision=b, gap=g)
        ax.plot(range(1, max_order + 1), gaps, marker="o", color=colour, label=name)
    ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_xticks(range(1, max_order + 1))
    ax.set_xlabel("n-gram")
    ax.set_ylabel("gap of BLEU ($p_n$, points)")
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the axes: never over a line
    return table, fig


Bucket = Tuple[int, Optional[int]]


def buckets_of(edges: Sequence[int]) -> List[Bucket]:
    """(low, high] buckets from upper edges: 10,20 -> (0, 10], (10, 20], (20, None)."""
    bounds = sorted(set(int(e) for e in edges))
    return [(low, high) for low, high in zip([0] + bounds, bounds + [None])]


def bucket_name(bucket: Bucket) -> str:
    low, high = bucket
    return f"{low + 1}-{high}" if high is not None else f">{low}"


def bucket_members(lengths: Sequence[int], buckets: Sequence[Bucket]) -> Dict[Bucket, List[int]]:
    """The sentence indices whose length falls in each bucket."""
    return {b: [i for i, n in enumerate(lengths) if n > b[0] and (b[1] is None or n <= b[1])] for b in buckets}


def length_buckets(systems: Dict[str, str], reference: str, source: Optional[str], edges: Sequence[int],
                   tokenize: str = "13a"):
    """Corpus sacreBLEU per bucket of source length (words; reference length without --source)."""
    refs = read_translations(reference, "T")
    hyps = {name: read_translations(path) for name, path in systems.items()}
    _same_length(hyps, refs, reference)
    lengths_from = read_translations(source, "S") if source else refs
    if len(lengths_from) != len(refs):
        raise AnalysisError(f"--source {source}: {len(lengths_from)} sentences but --ref {reference} has {len(refs)}")
    lengths = [len(line.split()) for line in lengths_from]
    buckets = buckets_of(edges)
    name = bucket_name
    members = bucket_members(lengths, buckets)
    table = Table(["system", "bucket", "sentences", "bleu"],
                  caption=f"sacreBLEU (tokenize={tokenize}) by {'source' if source else 'reference'} length in words.")
    fig, axes = figure(1, 1, width=3.6, height=2.4)
    ax = axes[0][0]
    used = [b for b in buckets if members[b]]
    metric = BLEU(tokenize=tokenize)
    for colour, (system, lines) in zip(SYSTEM_COLOURS, hyps.items()):
        scores = []
        for bucket in used:
            rows = members[bucket]
            score = metric.corpus_score([lines[i] for i in rows], [[refs[i] for i in rows]]).score
            scores.append(score)
            table.add(system=system, bucket=name(bucket), sentences=len(rows), bleu=score)
        ax.plot(range(len(used)), scores, marker="o", color=colour, label=system)
    ax.set_xticks(range(len(used)), [name(b) for b in used])
    ax.set_xlabel(f"{'source' if source else 'reference'} length (words)")
    ax.set_ylabel("BLEU")
    ax.legend(frameon=False)
    return table, fig


# --- sweeps -------------------------------------------------------------------------------------------------------


def run_bleu(path: str, metric: str = "sacrebleu") -> Tuple[float, str]:
    """(BLEU, scores.json path) of a run: ``path`` is a scores.json or a directory holding exactly one."""
    if os.path.isfile(path):
        found = [path]
    else:
        found = sorted(glob.glob(os.path.join(path, SCORES)) or glob.glob(os.path.join(path, "**", SCORES), recursive=True))
    if len(found) != 1:
        what = "no scores.json" if not found else f"{len(found)} scores.json files ({', '.join(found[:3])}...)"
        raise AnalysisError(f"--run {path}: {what}; evaluate it with scripts/evaluate.sh, or name the scores.json file")
    try:
        with open(found[0], encoding="utf-8") as f:
            scores = json.load(f)
    except (OSError, ValueError) as err:
        raise AnalysisError(f"--run {path}: {found[0]} cannot be read as scores.json ({err})") from None
    if metric not in scores:
        raise AnalysisError(f"{found[0]}: no '{metric}' score (has: {', '.join(k for k in scores if isinstance(scores[k], dict))}); "
                            "use --metric tokenized_bleu or evaluate with references")
    return float(scores[metric]["score"]), found[0]


def sweep(points: Sequence[Tuple[str, float, str]], x_label: str, metric: str = "sacrebleu",
          gates: Optional[Dict[str, float]] = None, caption: str = ""):
    """BLEU against a swept value; ``points`` are (series, x, run path); ``gates`` {run path: mean gate}."""
    table = Table(["series", "x", "bleu", "mean_gate", "scores"], caption=caption)
    for series, x, path in points:
        bleu, scores = run_bleu(path, metric)
        table.add(series=series, x=x, bleu=bleu, mean_gate=(gates or {}).get(path), scores=scores)
    series_names = list(dict.fromkeys(row["series"] for row in table.rows))
    fig, axes = figure(1, len(series_names), width=3.0, height=2.4)
    for ax, name in zip(axes[0], series_names):
        rows = sorted((r for r in table.rows if r["series"] == name), key=lambda r: r["x"])
        ax.plot([r["x"] for r in rows], [r["bleu"] for r in rows], marker="o", color="tab:blue", label="BLEU")
        ax.set_xlabel(x_label if len(series_names) == 1 else name)
        ax.set_ylabel("BLEU")
        ax.set_xticks([r["x"] for r in rows])
        if gates:
            twin = ax.twinx()
            gated = [r for r in rows if r["mean_gate"] is not None]
            twin.plot([r["x"] for r in gated], [r["mean_gate"] for r in gated], marker="s", linestyle="--", color="tab:red", label="mean gate")
            twin.set_ylabel("mean gate", color="tab:red")
            twin.grid(False)
    return table, fig
