"""The docs' measured tables, generated from their result files under docs/results/.

    python -m fairseq_localness.experiments.doc_tables [--check] [--list]

A measured table lives in its page between ``<!-- table: NAME -->`` and ``<!-- /table -->``: a caption that says
when, on which machine, under which load and with which command it was measured (and links the result file), then
the table, both made from the result file. ``--check`` writes nothing and exits 1 when a page differs from its
files (``tests/test_doc_tables.py`` runs it); without it the pages are rewritten.

A result file holds one run (one command)::

    {"date": "YYYY-MM-DD", "time": "HH:MM-HH:MM UTC", "machine": "...", "torch": "...", "load_average": "...",
     "command": "...", "note": "...", "source": "how the values got into this file", "records": [...]}

``time``, ``torch``, ``load_average`` and ``note`` are optional; a run whose command was not kept has a
``procedure`` (how it was measured) instead of ``command``; ``records`` are in the format of the tool that
measured them.
``scripts/benchmark.py --run-json PATH`` writes exactly this for a benchmark run (``records`` as its ``--json``),
so a rerun of a benchmark table's command replaces its file as it is. The tables, their pages, result files and
renderers are :data:`TABLES`. :func:`replace_block` is the one marker-based rewrite of generated text in a
markdown file; :mod:`.compare_readme` uses it for the README's results section.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..paths import REPO

RESULTS = REPO / "docs" / "results"
REQUIRED = ("date", "machine", "source", "records")
#: the end marker every generated table shares (the begin marker names the table)
END = "<!-- /table -->"

Run = Dict


def begin_marker(name: str) -> str:
    return f"<!-- table: {name} -->"


def replace_block(text: str, begin: str, end: str, body: str, where: str = "the page") -> str:
    """``text`` with what lies between the markers ``begin`` and the first ``end`` after it replaced by ``body``."""
    if begin not in text:
        raise SystemExit(f"{where} has no {begin} marker")
    head, rest = text.split(begin, 1)
    if end not in rest:
        raise SystemExit(f"{where}: {begin} has no {end} after it")
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def block_of(text: str, begin: str, end: str) -> Optional[str]:
    """What lies between the markers (without the newlines next to them), or None without them."""
    if begin not in text:
        return None
    rest = text.split(begin, 1)[1]
    if end not in rest:
        return None
    return rest.split(end, 1)[0].strip("\n")


# ---------------------------------------------------------------------------------------------------- result files


def load_run(path: Path) -> Run:
    """One result file; every required field present."""
    run = json.loads(path.read_text(encoding="utf-8"))
    missing = [key for key in REQUIRED if not run.get(key)] + ([] if run.get("command") or run.get("procedure")
                                                                else ["command (or, where none was kept, procedure)"])
    if missing:
        raise ValueError(f"{path}: result file without {', '.join(missing)}")
    return run


def _link(path: Path, page: Path) -> str:
    target = os.path.relpath(path, page.parent).replace(os.sep, "/")
    return f"[{path.relative_to(RESULTS).as_posix()}]({target})"


def measured_at(run: Run) -> str:
    """'DATE, TIME, on MACHINE, torch T, load average L': when and where a result file was measured."""
    when = f"{run['date']}, {run['time']}," if run.get("time") else run["date"]
    torch = f", torch {run['torch']}" if run.get("torch") else ""
    load = f", load average {run['load_average']}" if run.get("load_average") else ""
    return f"{when} on {run['machine']}{torch}{load}"


def _command(run: Run, multi_line: List[str], label: bool = True) -> str:
    """The command inline, or (a multi-line command) a pointer to the block below the caption; a run without a
    kept command says how it was measured instead."""
    if not run.get("command"):
        return f"No command kept: {run['procedure']}"
    if "\n" in run["command"]:
        multi_line.append(run["command"])
        return "Commands below" if label else "the commands below"
    return f"Command: `{run['command']}`" if label else f"`{run['command']}`"


def caption(runs: Sequence[Run], paths: Sequence[Path], page: Path, also: Sequence[Path] = ()) -> str:
    """The caption: date, time, machine, load, command(s), notes and result file(s), from the files' metadata."""
    multi_line: List[str] = []
    keys = ("date", "time", "machine", "torch", "load_average")
    heads = {(run.get("command") or "").partition(" --archs ")[0] for run in runs}
    if len({tuple(run.get(k) for k in keys) for run in runs}) == 1:
        last_archs = all(" --archs " in (run.get("command") or "") and " --" not in run["command"].partition(" --archs ")[2]
                         for run in runs)
        if len(runs) > 1 and len(heads) == 1 and last_archs:
            # runs of one benchmark command that differ in their models only: the command once, then each --archs
            archs = [f"`{run['command'].partition(' --archs ')[2]}` ({_link(path, page)})" for run, path in zip(runs, paths)]
            text = (f"Measured {measured_at(runs[0])}. {len(runs)} runs of `{heads.pop()} --archs ARCHS`, ARCHS: "
                    + "; ".join(archs) + ".")
        else:
            commands = [f"{_command(run, multi_line, len(runs) == 1)} ({_link(path, page)})"
                        for run, path in zip(runs, paths)]
            text = f"Measured {measured_at(runs[0])}. " + ("" if len(runs) == 1 else f"{len(runs)} runs: ") + "; ".join(commands) + "."
    else:
        text = " ".join(f"{_link(path, page)}: measured {measured_at(run)}; {_command(run, multi_line, False)}."
                        for run, path in zip(runs, paths))
    notes = list(dict.fromkeys(run["note"] for run in runs if run.get("note")))
    if notes:
        text += " " + " ".join(note.rstrip(".") + "." for note in notes)
    if also:
        text += (" Values also from " + ", ".join(_link(path, page) for path in also)
                 + " (their tables' captions give their dates, machines and commands).")
    for command in multi_line:
        text += f"\n\n<details><summary>commands</summary>\n\n```bash\n{command}\n```\n\n</details>"
    return text


# ---------------------------------------------------------------------------------------------------- helpers


def markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def records(runs: Sequence[Run]) -> List[Dict]:
    return [record for run in runs for record in run["records"]]


def find(runs: Sequence[Run], **match) -> Dict:
    """The one record whose fields equal ``match``."""
    found = [r for r in records(runs) if all(r.get(k) == v for k, v in match.items())]
    if len(found) != 1:
        raise KeyError(f"{len(found)} records match {match}")
    return found[0]


def relabel(items: Sequence[Dict], labels: Dict[str, str]) -> List[Dict]:
    return [{**r, "arch": labels.get(r["arch"], r["arch"])} for r in items]


def minutes(value) -> str:
    """Whole minutes as written (23 min), others to one decimal (7.0 min)."""
    return f"{value} min" if isinstance(value, int) else f"{value:.1f} min"


def paper_rows(paper: str, table: str) -> List:
    from .tables import load_tables, table_rows

    return table_rows(load_tables(), paper, table)


def published(paper: str, table: str, arch: str, key: str, id_suffix: str = ""):
    """A number a paper printed for the row trained with ``arch`` (configs/paper_tables.yaml)."""
    rows = [r for r in paper_rows(paper, table) if r.arch == arch and r.id.endswith(id_suffix)]
    if len(rows) != 1:
        raise KeyError(f"{paper} Table {table}: {len(rows)} rows of {arch}{id_suffix}")
    return rows[0].published[key]


# ---------------------------------------------------------------------------------------------------- benchmark


def rounds_table(labels: Dict[str, str] = {}) -> Callable:
    """The benchmark's --interleaved table, as it prints it."""
    def render(runs, also):
        from ..benchmark.interleaved import format_rounds  # the benchmark's modules import fairseq: only when used

        return format_rounds(relabel(records(runs), labels))
    return render


def benchmark_options(run: Run):
    """The options a benchmark run was called with, read back from its command by the benchmark's own parser."""
    import shlex

    from ..benchmark.cli import build_parser

    words = shlex.split(run["command"])
    return build_parser().parse_args(words[words.index("scripts/benchmark.py") + 1:])


def decode_flop_parts_table(runs, also):
    """Decoding FLOPs per model part (``--count-flops``) in GFLOP, one row per model and ``--max-len``; where the
    runs hold two lengths, one more row per model gives the FLOPs of each step between them."""
    from ..benchmark.interleaved import FLOP_PARTS, OTHER_PART

    by_length = {benchmark_options(run).max_len: run["records"] for run in runs}
    parts = [part for part, _pattern in FLOP_PARTS]
    if any(r["decode_flops_by_part"][OTHER_PART] for items in by_length.values() for r in items):
        parts.append(OTHER_PART)

    def cells(total: float, ratio: float, split: Dict[str, float]) -> List[str]:
        return [f"{total / 1e9:.3f}", f"{ratio:.3f}"] + [f"{split[part] / 1e9:.3f}" for part in parts]

    rows = []
    for length, items in sorted(by_length.items()):
        rows += [[r["arch"], str(length), *cells(r["decode_flops"], r["decode_flops_ratio"], r["decode_flops_by_part"])]
                 for r in items]
    short, long = sorted(by_length)[-2:] if len(by_length) > 1 else (None, None)
    if short is not None:
        steps = long - short
        reference = {r["arch"]: r for r in by_length[short]}
        per_step = []
        for r in by_length[long]:
            split = {part: (r["decode_flops_by_part"][part] - reference[r["arch"]]["decode_flops_by_part"][part]) / steps
                     for part in parts}
            per_step.append((r, sum(split.values()), split))
        baseline = {r["arch"]: total for r, total, _split in per_step}
        rows += [[r["arch"], f"each step {short + 1}-{long}", *cells(total, baseline[r["baseline"]] / total, split)]
                 for r, total, split in per_step]
    return markdown(("arch", "--max-len", "decode GFLOP", "FLOP ratio", *parts), rows)


def printed_table(models: bool) -> Callable:
    """The benchmark's subprocess-mode output as it prints it (the model sizes too with ``models``)."""
    def render(runs, also):
        from ..benchmark.report import format_models, format_table

        items = records(runs)
        text = (format_models(items) + "\n\n" if models else "") + format_table(items, items[0].get("device", "cpu"))
        return f"```\n{text}\n```"
    return render


def subprocess_markdown(labels: Dict[str, str]) -> Callable:
    """The subprocess mode's columns as a markdown table; ``labels`` name rows (else the architecture, as code)."""
    def render(runs, also):
        from ..benchmark.report import _fmt

        rows = [[labels.get(r["arch"], f"`{r['arch']}`"), r["seq_len"], f"{r['params'] / 1e6:.1f}M",
                 _fmt(r["train_tokens_per_s"]), _fmt(r["train_ratio_vs_baseline"], "{:.3f}"), _fmt(r["peak_mem_mb"]),
                 _fmt(r["mem_ratio_vs_baseline"], "{:.3f}"), _fmt(r["decode_tokens_per_s"]),
                 _fmt(r["decode_ratio_vs_baseline"], "{:.3f}")] for r in records(runs)]
        return markdown(("arch", "L", "params", "train tok/s", "ratio", "peak MB", "mem ratio", "decode tok/s", "ratio"),
                        rows)
    return render


BLOSAN = "transformer_block (blosan form)"


def memory_table(runs, also):
    from ..benchmark.report import _fmt

    rows = [[BLOSAN if r["arch"] == "transformer_block" else r["arch"], f"{r['params'] / 1e6:.1f}M",
             _fmt(r["peak_mem_mb"]), f"{r['mem_ratio_vs_baseline']:.3f}"] for r in records(runs)]
    return markdown(("arch", "parameters", "peak MB", "ratio to `transformer`"), rows)


def quiet_table(runs, also):
    """Decode ratios of run A beside run B or C (fewer models per process), with the FLOP ratio of ``also``."""
    def cell(r):
        ratio = r["decode_ratio"]
        return f"{ratio['median']:.2f} [{ratio['q1']:.2f}-{ratio['q3']:.2f}]"

    first, *others = runs
    rows = []
    for r in first["records"]:
        if r["arch"] == r["baseline"]:
            continue
        other = ""
        for letter, run in zip("BCDEFG", others):
            match = [o for o in run["records"] if o["arch"] == r["arch"]]
            if match:
                other = f"{cell(match[0])} ({letter})"
        rows.append([r["arch"], cell(r), other, f"{find(also, arch=r['arch'])['decode_flops_ratio']:.3f}"])
    return markdown(("arch", "decode ratio, run A (8 models) [IQR]", "decode ratio, run B or C (3-4 models) [IQR]",
                     "decode FLOP ratio"), rows)


def baselines_table(runs, also):
    """Training and memory ratios beside Yang et al. (2019) Table 1's steps per second."""
    labels = {"transformer": "transformer (reference)",
              "transformer_block": "transformer_block, blosan form (see the caption)",
              "transformer_hybrid_local@hybrid_combine=concat": "transformer_hybrid_local, `--hybrid-combine concat`"}
    paper = {r.arch: r for r in paper_rows("yang2019", "1")}
    base_speed = float(paper["transformer_wmt_en_de"].published["speed"])
    rows = []
    for r in records(runs):
        ratio = f"{r['train_ratio_vs_baseline']:.3f}"
        if r["role"] == "baseline":
            ratio += f" ({r['train_tokens_per_s']:.1f} tok/s)"
        row = paper.get(f"{r['arch']}_wmt_en_de")
        if row is None:
            printed = "not printed (Xu 2019 T1 has no speed)"
        else:
            speed = float(row.published.get("speed", base_speed + float(row.published.get("speed_delta", 0))))
            printed = f"{speed:.2f} ({speed / base_speed:.3f})"
        rows.append([labels.get(r["arch"], r["arch"]), ratio, f"{r['mem_ratio_vs_baseline']:.3f}", printed])
    return markdown(("arch (base size)", "ours: train tok/s ratio (CPU, busy)", "peak memory ratio",
                     "Yang 2019 T1 steps/s (ratio to 1.28)"), rows)


# ---------------------------------------------------------------------------------------------------- CSAN layers


#: the whole-model benchmark's models (its ``--archs`` labels), in the table's column order
CSAN_MODELS = (("transformer_csan1d", "1D-CSAN"), ("transformer_csan2d", "2D-CSAN"),
               ("transformer_csan1d@csan1d_implementation=dense", "1D forced dense"),
               ("transformer_csan2d@csan2d_implementation=dense", "2D forced dense"))


def csan_model_table(runs, also):
    """The benchmark's interleaved rounds: the baseline's CPU seconds per training step, then each model's
    median throughput ratio to it with the interquartile range of the rounds."""
    def speed(arch):
        return published_speed(paper_rows("yang2019", "1"), arch)

    def ratio(summary):
        return f"{summary['median']:.3f} [{summary['q1']:.3f}-{summary['q3']:.3f}]"

    rows = []
    for length in sorted({r["seq_len"] for r in records(runs)}):
        baseline = find(runs, arch="transformer", seq_len=length)
        rows.append([length, f"{baseline['train_seconds_median']:.2f}",
                     *(ratio(find(runs, arch=arch, seq_len=length)["train_ratio"]) for arch, _ in CSAN_MODELS)])
    rows.append(["paper (WMT14 En-De, base)", "", f"{speed('transformer_csan1d_wmt_en_de'):.2f}",
                 f"{speed('transformer_csan2d_wmt_en_de'):.2f}", "", ""])
    return markdown(("length", "transformer: CPU s per step", *(label for _, label in CSAN_MODELS)), rows)


def published_speed(rows: List, arch: str) -> float:
    from .tables import published_speed_ratio

    by_id = {r.id: r for r in rows}
    return published_speed_ratio(next(r for r in rows if r.arch == arch), by_id)


def csan_layer_time_table(runs, also):
    """CPU milliseconds per case (python -m fairseq_localness.benchmark.layer); the faster of dense and banded in
    bold, for 1D and for 2D."""
    (run,) = runs
    names = [v["name"] for v in run["variants"]]
    rows = []
    for r in run["records"]:
        times = r["milliseconds"]
        faster = {min((f"{dims}_dense", f"{dims}_banded"), key=times.get) for dims in ("1d", "2d")}
        rows.append([r["length"], *(f"**{times[n]:,.0f}**" if n in faster else f"{times[n]:,.0f}" for n in names)])
    return markdown(("length", *(v["label"] for v in run["variants"])), rows)


def csan_layer_memory_table(runs, also):
    """MiB autograd keeps for backward per case (python -m fairseq_localness.benchmark.layer)."""
    (run,) = runs
    rows = [[r["length"], *(f"{r['mib'][v['name']]:.1f}" for v in run["variants"])] for r in run["records"]]
    return markdown(("length", *(v["label"] for v in run["variants"])), rows)


# ---------------------------------------------------------------------------------------------------- tasks, probing


def sst2_table(best_checkpoint: bool, sizes: bool) -> Callable:
    def render(runs, also):
        rows = []
        for r in records(runs):
            row = [r["row"], f"`{r['arch']}`", f"{published('nguyen2020', '5', r['arch'], 'accuracy', '-sst'):.2f}",
                   f"{r['valid']:.1f}", f"{r['test']:.1f}"]
            if best_checkpoint:
                row.append(f"{r['best_update']:,} updates")
            rows.append(row + [minutes(r["train_minutes"])])
        valid, test = ("ours: valid (872)", "ours: test (1,821)") if sizes else ("ours: valid", "ours: test")
        return markdown(("Table 5 row", "`--arch`", "paper", valid, test)
                        + (("best checkpoint",) if best_checkpoint else ()) + ("train time",), rows)
    return render


def lm_table(runs, also):
    rows = [[r["row"], f"`{r['arch']}`", f"{published('nguyen2020', '6', r['arch'], 'ppl'):.2f}", f"{r['ppl']:.2f}",
             minutes(r["train_minutes"])] for r in records(runs)]
    return markdown(("Table 6 row", "`--arch`", "paper (1B Word)", "ours: test perplexity (stand-in)", "train time"), rows)


def corpus_sizes_table(runs, also):
    rows = [[r["split"], f"{r['sentences']:,}", f"{r['words']:,}", f"{r['tokens']:,}", f"{r['unk_percent']:.2f}%"]
            for r in records(runs)]
    return markdown(("split", "sentences", "words", "tokens with `</s>`", "`<unk>`"), rows)


def corpus_sources_table(runs, also):
    """Lines read and unique sentences kept per source file, and the vocabulary the splits share."""
    (run,) = runs
    rows = [[f"`{r['source']}`", f"{r['lines']:,}", f"{r['kept']:,}"] for r in records(runs)]
    rows.append(["all sources", f"{sum(r['lines'] for r in run['records']):,}", f"{sum(r['kept'] for r in run['records']):,}"])
    return (markdown(("source (under `--shared-data`)", "lines read", "unique sentences kept"), rows)
            + f"\n\nVocabulary (words seen at least 3 times in train): {run['vocabulary']:,}.")


def ngram_gap_table(runs, also):
    """One row per system: p_n(system) - p_n(baseline) for each order n, and the baseline's p_n as the first row."""
    gaps: Dict[str, Dict[int, float]] = {}
    baseline: Dict[int, float] = {}
    for r in records(runs):
        gaps.setdefault(r["system"], {})[r["n"]] = r["gap"]
        baseline[r["n"]] = r["baseline_precision"]
    orders = sorted(baseline)
    (run,) = runs
    rows = [[f"`{run['baseline']}` (p_n)", *(f"{baseline[n]:.2f}" for n in orders)]]
    rows += [[f"`{system}` (gap)", *(f"{gap[n]:+.2f}" for n in orders)] for system, gap in gaps.items()]
    return markdown(("system", *(f"n = {n}" for n in orders)), rows)


def _analysis(runs, name: str) -> List[Dict]:
    """The records of one ``scripts/analyze.py`` analysis in a result file that holds several."""
    return [r for r in records(runs) if r["analysis"] == name]


def analyses_tables(parts: Sequence[Tuple[str, Callable]]) -> Callable:
    """Several analyses of one result file under one caption: a titled table each."""
    def render(runs, also):
        return "\n\n".join(f"**{title}**\n\n{table(runs, also)}" for title, table in parts)
    return render


def gaussian_scopes_table(runs, also):
    rows = [[r["model"], r["layer"], f"{r['query_heads']:,}", f"{r['mean_D']:.2f}", f"{r['median_D']:.2f}",
             f"{r['mean_D_over_I']:.2f}"] for r in _analysis(runs, "gaussian-scopes")]
    return markdown(("model", "encoder layer", "query-heads", "mean D", "median D", "mean D / I"), rows)


def head_windows_table(runs, also):
    """One row per layer, one column per head: the learned window D_m (Yang 2018 Eq. 11)."""
    found = _analysis(runs, "head-windows")
    heads = sorted({r["head"] for r in found})
    rows = [[layer, *(f"{next(r['window_D'] for r in found if r['layer'] == layer and r['head'] == h):.2f}" for h in heads)]
            for layer in sorted({r["layer"] for r in found})]
    return markdown(("encoder layer", *(f"head {h}: D_m" for h in heads)), rows)


def attention_mass_table(name: str) -> Callable:
    """Fan 2021 Eq. 13 per model, attention kind and layer: ours (%) for each w, and the paper's Table 5 value where
    it has one for that layer."""
    def render(runs, also):
        found = _analysis(runs, name)
        widths = sorted({r["w"] for r in found})
        rows = []
        for key in dict.fromkeys((r["model"], r["kind"], r["layer"]) for r in found):
            cells = []
            for w in widths:
                (r,) = [r for r in found if (r["model"], r["kind"], r["layer"], r["w"]) == (*key, w)]
                paper = r.get("published_percent")
                cells.append(f"{r['attn_s_percent']:.1f}" + (f" ({paper:.2f})" if paper is not None else ""))
            rows.append([*key, *cells])
        return markdown(("model", "attention", "layer", *(f"w = {w}: ours (paper)" for w in widths)), rows)
    return render


def gate_layers_table(runs, also):
    rows = [[r["model"], r["attention"], r["layer"], f"{r['tokens']:,}", f"{r['mean_gate']:.3f}"]
            for r in _analysis(runs, "gate-layers")]
    return markdown(("model", "attention", "layer", "tokens", "mean gate g"), rows)


def diffwin_windows_table(runs, also):
    """One row per method and layer: the mean soft-window width E|r - l| + 1 over all heads, then per head."""
    found = _analysis(runs, "diffwin-windows")
    heads = [h for h in dict.fromkeys(str(r["head"]) for r in found) if h != "all"]
    rows = []
    for method, layer in dict.fromkeys((r["method"], r["layer"]) for r in found):
        width = {str(r["head"]): r["mean_width"] for r in found if (r["method"], r["layer"]) == (method, layer)}
        rows.append([method, layer, f"{width['all']:.2f}", *(f"{width[h]:.2f}" for h in heads)])
    return markdown(("method", "layer", "all heads", *(f"head {h}" for h in heads)), rows)


def rouge_scorers_table(runs, also):
    """``python -m fairseq_localness.summarization.scorer_comparison --json``'s records: F1 and wall time, or, for a
    scorer that could not run where it was measured, why (its reason in place of the scores)."""
    rows = [[r["scorer"], "not run: " + r["missing"].replace("|", "\\|"), "", "", ""] if r.get("missing") else
            [r["scorer"], *(f"{r[k]:.5f}" for k in ("rouge1", "rouge2", "rougeL")),
             f"{r['seconds']} s" if r.get("seconds") is not None else ""] for r in records(runs)]
    return markdown(("scorer", "ROUGE-1", "ROUGE-2", "ROUGE-L", "time"), rows)


def probing_mechanics_table(runs, also):
    rows = [[r["task"], f"{r['test']:.2f}", f"{r['dev']:.2f}", f"{r['chance']:.2f}", r["test_sentences"]]
            for r in records(runs)]
    return markdown(("task", "test accuracy", "dev accuracy", "chance", "test sentences"), rows)


def probing_encoders_table(runs, also):
    rows = [[r["model"], f"{r['SentLen']:.2f}", f"{r['WC']:.2f}", f"{r['BShift']:.2f}", minutes(r["train_minutes"]),
             minutes(r["probe_minutes"])] for r in records(runs)]
    return markdown(("model", "SentLen (chance 16.7)", "WC (chance 3.3)", "BShift (chance 50)", "training", "probe"), rows)


# ---------------------------------------------------------------------------------------------------- DMAN


def read_curves(path: Path) -> Dict[Tuple[str, int], float]:
    """The validation losses of ``fairseq_localness.evaluation.curves --csv``: (model, updates) -> loss."""
    with path.open(encoding="utf-8") as handle:
        return {(row["model"], int(row["updates"])): float(row["valid_loss"]) for row in csv.DictReader(handle)}


DMAN_UPDATES = (100, 200, 300, 400, 500, 600)


def dman_norm_table(runs, also):
    """Validation loss per 100 updates (from the curves CSV the run file names) and test BLEU, per run."""
    rows = []
    for run in runs:
        curves = read_curves(REPO / run["curves"])
        for r in run["records"]:
            losses = [f"{curves[(r['curve'], n)]:.3f}" if (r["curve"], n) in curves else "-" for n in DMAN_UPDATES]
            rows.append([r["run"], f"{r['params_m']:.2f}M", *losses, "not run" if r["bleu"] is None else f"{r['bleu']:.2f}"])
    return markdown(("run", "params", *map(str, DMAN_UPDATES), "BLEU (test2016)"), rows)


def dman_init_table(runs, also):
    """DMAN and the Transformer at initialisation: the first encoder layer's mask statistics (DMAN) and every
    encoder layer's gradient norm after one backward pass, per norm placement."""
    rows = []
    for r in records(runs):
        mask = "dman" in r["arch"]
        rows.append([f"`{r['arch']}`", r["norm"],
                     f"{r['mask_min']:.4f}-{r['mask_max']:.4f}" if mask else "-",
                     f"{r['mask_mean']:.2f}" if mask else "-",
                     f"{r['row_entropy_over_max']:.3f}" if mask else "-",
                     f"{r['row_weight_within_1']:.3f} ({r['uniform_row_weight_within_1']:.3f})" if mask else "-",
                     " / ".join(f"{norm / 1000:.2f}k" for norm in r["encoder_layer_grad_norms"])])
    return markdown(("model", "norm", "mask M, min-max", "mean M", "row entropy / maximum",
                     "row weight within one position of the diagonal (uniform row)", "encoder layers' gradient norms"), rows)


def update_time_table(runs, also):
    """Updates per second of one training in each setting (fairseq's per-interval ``ups``) and the seconds an
    update takes at their median."""
    import statistics

    rows = [[r["setting"], ", ".join(f"{ups:.2f}" for ups in r["updates_per_s"]),
             f"{1 / statistics.median(r['updates_per_s']):.1f} s"] for r in records(runs)]
    return markdown(("setting", "updates/s, per 10 updates", "seconds per update (median)"), rows)


def dman_slow_table(runs, also):
    rows = [[f"{r['model']} (`{r['arch']}`)", f"**{r['bleu']:.2f}**", f"{r['length_ratio']:.3f}",
             " / ".join(f"{v:.3f}" for v in r["valid_loss"])] for r in records(runs)]
    epochs = " / ".join(str(n) for n in runs[0]["epoch_updates"])
    return markdown(("model", "test2016 BLEU (beam 5)", "length ratio", f"validation loss after each epoch ({epochs} updates)"),
                    rows)


# ---------------------------------------------------------------------------------------------------- GPU


def _some(params: List[str], shown: int = 8) -> str:
    listed = ", ".join(f"`{p}`" for p in params[:shown])
    return listed + (f" and {len(params) - shown} more" if len(params) > shown else "")


def gpu_tests_table(runs, also):
    """Per test function: how many cases passed, failed or did not finish, and which did not pass."""
    by_test: Dict[str, Dict[str, List[str]]] = {}
    for r in records(runs):
        by_test.setdefault(r["test"].split("::")[-1], {}).setdefault(r["outcome"], []).append(r["params"] or "(one case)")
    rows = []
    for test, outcomes in sorted(by_test.items()):
        others = "; ".join(f"{outcome}: " + _some(sorted(params))
                           for outcome, params in sorted(outcomes.items()) if outcome != "passed")
        rows.append([f"`{test}`", len(outcomes.get("passed", [])), len(outcomes.get("failed", [])),
                     len(outcomes.get("not finished", [])), others])
    total = Counter(r["outcome"] for r in records(runs))
    rows.append(["**all**", total["passed"], total["failed"], total["not finished"], ""])
    return markdown(("test", "passed", "failed", "not finished", "cases that did not pass"), rows)


def gpu_train_table(runs, also):
    """The suite's short trainings: loss from first to last logged value and fp16 overflows, or the error."""
    runs_by_arch: Dict[str, Dict[str, Dict]] = {}
    for r in records(runs):
        runs_by_arch.setdefault(r["arch"], {})[r["dtype"]] = r

    def cell(r: Optional[Dict]) -> str:
        if r is None:
            return "not run"
        if "error" in r:
            return f"failed: `{r['error'][:90]}`"
        return f"{r['first_loss']:.2f} -> {r['last_loss']:.2f} ({r['updates']} updates, {r['overflows']} overflows)"

    return markdown(("architecture", "fp16", "bf16"),
                    [[f"`{arch}`", cell(d.get("fp16")), cell(d.get("bf16"))] for arch, d in sorted(runs_by_arch.items())])


def gpu_curve_table(runs, also):
    """Validation loss per epoch on the GPU (fp16) beside the CPU run of the same recipe and seed (fp32)."""
    arch = runs[0].get("arch", "transformer")
    cpu = {}
    with open(RESULTS / "compare" / "multi30k_de_en" / "curves.csv", newline="") as f:
        for row in csv.DictReader(f):
            if (row["arch"], row["norm"], row["seed"]) == (arch, "pre", "1"):
                cpu[int(row["epoch"])] = float(row["valid_loss"])
    rows = [[r["epoch"], r["updates"], f"{r['valid_loss']:.3f}", f"{cpu[r['epoch']]:.3f}" if r["epoch"] in cpu else "-"]
            for r in records(runs)]
    table = markdown(("epoch", "updates (GPU)", "validation loss, H200 fp16", "validation loss, CPU fp32"), rows)
    close = [abs(r["valid_loss"] - cpu[r["epoch"]]) for r in records(runs) if r["epoch"] in cpu]
    table += (f"\n\nLargest difference per epoch: {max(close):.3f} over {len(close)} epochs." if close else "")
    speed = runs[0].get("train_wps_median")
    return table + (f"\n\nMedian training speed on the GPU: {speed:,.0f} target words/s." if speed else "")


def backend_ratio(run: Dict[str, Any], record: Dict[str, Any], value: str, stored: str) -> Optional[float]:
    """``record[value]`` over that of the run's baseline row (its ``baseline`` architecture with no options, at the
    record's length), from the columns a backends table prints; the file's ``stored`` ratio where that row or value
    is missing. The files keep ratios to three decimals, and rounding one again to two can land a unit low
    (109,318 / 129,302 = 0.8455, stored 0.845, printed 0.84)."""
    bases = [r.get(value) for r in run["records"] if r["arch"] == run["baseline"] and not r["options"]
             and r["seq_len"] == record["seq_len"]]
    if len(bases) > 1:
        raise ValueError(f"{len(bases)} baseline rows of {run['baseline']} at length {record['seq_len']}: "
                         "the ratios would depend on which one is taken")
    base = bases[0] if bases else None
    return record[value] / base if record.get(value) is not None and base else record.get(stored)


def gpu_backends_table(runs, also):
    """Training speed and peak memory per model and attention backend, as ratios to the run's own baseline, and
    the decoding speed where the run decoded."""
    from ..benchmark.report import _fmt

    decoded = any("decode_tokens_per_s" in r for r in records(runs))
    rows = []
    for run in runs:  # each record against the baseline of its own run
        for r in run["records"]:
            row = [f"`{r['arch']}`", r["options"].partition("locality_attention_backend=")[2].split(",")[0] or "-",
                   r["seq_len"], _fmt(r["train_tokens_per_s"], "{:,.0f}"),
                   _fmt(backend_ratio(run, r, "train_tokens_per_s", "train_ratio"), "{:.2f}"),
                   _fmt(r["peak_mem_mb"], "{:,.0f}"), _fmt(backend_ratio(run, r, "peak_mem_mb", "memory_ratio"), "{:.2f}")]
            if decoded:
                row += [_fmt(r.get("decode_tokens_per_s"), "{:,.0f}"),
                        _fmt(backend_ratio(run, r, "decode_tokens_per_s", "decode_ratio"), "{:.2f}")]
            rows.append(row)
    header = ("model", "backend", "length", "training tokens/s", f"ratio to `{runs[0]['baseline']}`", "peak MB",
              "memory ratio") + (("decoding tokens/s", "decoding ratio") if decoded else ())
    return markdown(header, rows)


# ---------------------------------------------------------------------------------------------------- testing


SLOW_SUITE = RESULTS / "testing" / "slow-suite-bleu.json"


def slow_suite_floors(path: Path = SLOW_SUITE) -> Dict[str, float]:
    """The slow suite's BLEU floor per architecture: the measured BLEU minus the file's margin, to one decimal
    (``tests/test_slow_multi30k.py`` requires them, docs/testing.md shows them)."""
    run = load_run(path)
    return {r["arch"]: round(r["bleu"] - run["floor_margin"], 1) for r in run["records"]}


def slow_suite_table(runs, also):
    floors = slow_suite_floors()
    rows = []
    for r in records(runs):
        time = minutes(r["train_minutes"]) + (f" ({r['note']})" if r.get("note") else "")
        rows.append([f"{r['family']} (`{r['arch']}`)", f"{r['bleu']:.2f}", f"{floors[r['arch']]:.1f}", time])
    return markdown(("family (architecture)", "measured", "floor", "training time (wall, busy machine)"), rows)


def suite_time_table(runs, also):
    """The default test run's wall time: in one process, and in the README's two pytest-xdist workers."""
    rows = []
    for r in records(runs):
        outcome = f"{r['passed']:,} passed, {r['failed']} failed, {r['skipped']} skipped"
        if r["failed"]:
            outcome += f" ({r['failures']})"
        rows.append([r["run"], f"`{r['commit']}`", wall_time(r["seconds"]), outcome])
    return markdown(("run", "commit", "wall time", "tests"), rows)


def wall_time(seconds: float) -> str:
    """'7 min 05 s' (or '40 s' under a minute)."""
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def quickstart_seconds(items: Sequence[Dict], options: str = "") -> float:
    """The summed wall time of the quickstart's steps run with these options ('' for the default)."""
    return sum(r["seconds"] for r in items if r["options"] == options)


def quickstart_minutes(run: Run, options: str = "") -> int:
    """The whole quickstart's wall time in whole minutes: the figure the README, docs/training.md and the
    quickstart's help give."""
    return round(quickstart_seconds(run["records"], options) / 60)


def quickstart_time_table(runs, also):
    """scripts/quickstart.sh's steps, each with its wall time as the script printed it, one column per run of it
    (its options), and each run's total."""
    items = records(runs)
    options = list(dict.fromkeys(r["options"] for r in items))
    seconds = {(r["options"], r["step"]): r["seconds"] for r in items}
    rows = [[step, *(wall_time(seconds[o, step]) if (o, step) in seconds else "-" for o in options)]
            for step in dict.fromkeys(r["step"] for r in items)]
    rows.append(["**the whole quickstart**", *(f"**{wall_time(quickstart_seconds(items, o))}**" for o in options)])
    return markdown(("step", *(f"`quickstart.sh{' ' + o if o else ''}`" for o in options)), rows)


def prep_time_table(runs, also):
    """Per data-prep script: wall time and CPU time (user + system, the script and its children)."""
    rows = [[r["corpus"], f"`{r['script']}`", f"{r['wall_s']:.0f} s", f"{r['user_s'] + r['system_s']:.0f} s"]
            for r in records(runs)]
    return markdown(("corpus", "script", "wall time", "CPU time"), rows)


def corpus_statistics_table(runs, also):
    """Per prepared corpus (experiments.corpus_statistics): split sizes, dictionary, source lengths against train,
    test and valid sentences that occur in train, the longest reference against fairseq-generate's length caps."""
    def overlap(split):
        return f"{split['sources_in_train']:,} ({split['pairs_in_train']:,})"

    items = records(runs)
    rows = [[f"`{r['corpus']}`", " / ".join(f"{r['pairs'][s]:,}" for s in ("train", "valid", "test")),
             f"{r['dictionary_words'][r['src']]:,}" + (" joined" if r["joined_dictionary"] else
                                                       f" / {r['dictionary_words'][r['tgt']]:,}"),
             " / ".join(f"{r['source_bpe_tokens_mean'][s]:.2f}" for s in ("train", "valid", "test")),  # as stored: rounded once
             r["train_source_words_max"],
             f"{r['test_sources_longer_than_train']:,} ({r['test_source_words_max']})",
             overlap(r["test"]), overlap(r["valid"]), r["test_reference_bpe_max"],
             " / ".join(str(n) for n in r["test_references_over_cap"].values()),
             r.get("test_references_with_clock_time", "no raw reference")]
            for r in items if r["kind"] == "translation"]
    table = markdown(("corpus", "pairs: train / valid / test", "dictionary words",
                      "mean source length (BPE tokens): train / valid / test",
                      "longest training source (tokenised words)",
                      "test sources longer (the longest)", "test sources in train (pairs)",
                      "valid sources in train (pairs)", "longest test reference (BPE tokens)",
                      "test references over the cap: default / `--max-len-a 2 --max-len-b 10`",
                      "test references with a clock time"), rows)
    classification = [[f"`{r['corpus']}`", " / ".join(f"{r['examples'][s]:,}" for s in ("train", "valid", "test")),
                       f"{r['dictionary_words']:,}"] for r in items if r["kind"] == "classification"]
    if classification:
        table += "\n\n" + markdown(("corpus", "examples: train / valid / test", "dictionary words"), classification)
    return table


def allocator_table(runs, also):
    """Side-by-side pairs of one CPU training under glibc's allocator defaults and under the launcher's settings:
    words/s with its ratio to the pair's defaults run, CPU seconds, the training loss."""
    items = records(runs)
    baseline = {r["pair"]: r["words_per_s"] for r in items if r["settings"].startswith("glibc's defaults")}
    rows = [[r["pair"], r["settings"], f"{r['words_per_s']:,.0f}", f"{r['words_per_s'] / baseline[r['pair']]:.2f}",
             f"{r['user_s']:.0f}", f"{r['system_s']:.0f}", f"{r['wall_s']:.0f}", f"{r['train_loss']:.3f}"]
            for r in items]
    return markdown(("pair", "allocator settings", "words/s", "ratio to glibc's defaults", "user CPU s",
                     "system CPU s", "wall s", f"training loss after {items[0]['updates']} updates"), rows)


def flex_margins_table(runs, also):
    """Per precision: how many Flex-against-reference comparisons, the largest difference (its case) and the
    tolerance the tests allow."""
    rows, measured = [], records(runs)
    for dtype in dict.fromkeys(r["dtype"] for r in measured):
        items = [r for r in measured if r["dtype"] == dtype]
        worst = max(items, key=lambda r: r["largest_difference"])
        rows.append([dtype, worst["measure"], len(items), f"{worst['largest_difference']:.1e} (`{worst['case']}`)",
                     f"{worst['tolerance']:.0e}", f"{worst['largest_difference'] / worst['tolerance']:.2f}"])
    return markdown(("precision", "difference", "cases", "largest (case)", "tolerance", "largest / tolerance"), rows)


def mutation_table(runs, also):
    (r,) = records(runs)
    killed, later, equivalent = r["killed"], r["killed_by_later_tests"], r["equivalent"]
    scored = r["generated"] - equivalent
    assert killed + later["count"] == scored, "the score's mutants do not add up"
    rows = [["generated in these functions", r["generated"]],
            ["killed by the run", f"{killed} ({round(100 * killed / r['generated'])} %)"],
            ["survived, then killed by tests added after the run (checked with one-line edits, see above)",
             f"{later['count']}: {later['which']}"],
            ["equivalent (left)", f"{equivalent}, below"],
            ["**score over the non-equivalent mutants**", f"**{killed + later['count']} / {scored}**"]]
    return markdown(("", "mutants"), rows)


# ---------------------------------------------------------------------------------------------------- summaries


def _ratio_at(runs, arch, key, digits, **match):
    value = find(runs, arch=arch, **match)[key]
    return f"{(value['median'] if isinstance(value, dict) else value):.{digits}f}"


def parameters_and_speed_table(runs, also):
    """measurements.md: each method's added parameters and training speed beside the paper's.

    The parameter column is computed by ``scripts/param_counts.py`` (linked); the speed column is read from the
    benchmark result files of ``also``."""
    group1, group2, group3, csan, dman = ([run] for run in also)
    link = {"benchmark": "benchmark.md#every-family-cpu-time", "csan": "methods/yang2019-csan.md#whole-model-base-size",
            "dman": "methods/fan2021-man.md#speed-and-memory"}
    rows = [
        ("`transformer_gaussian_local`", "[+0.81M](methods/yang2018-gaussian.md#parameter-counts)", "+0.8M (Yang 2018, T4)",
         f"[{_ratio_at(group1, 'transformer_gaussian_local', 'train_ratio', 2)}]({link['benchmark']})",
         "0.96 (Yang 2018: 1.15 in T2, lower three layers / the baseline's 1.20 in T1)"),
        ("`transformer_relpos`", "[+0.05M](methods/yang2018-gaussian.md#parameter-counts)", "+0.1M (Yang 2018, T4)",
         f"[{_ratio_at(group2, 'transformer_relpos', 'train_ratio', 2)}]({link['benchmark']})", ""),
        ("`transformer_csan1d`", "[0](methods/yang2019-csan.md#parameter-counts)", "+0.0M (Yang 2019, T1)",
         f"[{_ratio_at(csan, 'transformer_csan1d', 'train_ratio', 2, seq_len=64)}]({link['csan']})", "1.00 (Yang 2019, T1)"),
        ("`transformer_csan2d`", "[0](methods/yang2019-csan.md#parameter-counts)", "+0.0M (Yang 2019, T1)",
         f"[{_ratio_at(csan, 'transformer_csan2d', 'train_ratio', 2, seq_len=64)}]({link['csan']})", "0.95 (Yang 2019, T1)"),
        ("`transformer_hybrid_local`", "[+1,024](methods/xu2019-hybrid.md#parameter-counts)", "+0.0M (Xu 2019, T1)",
         f"[{_ratio_at(group2, 'transformer_hybrid_local', 'train_ratio', 2)}]({link['benchmark']})", ""),
        ("`transformer_diffwin`", "[+12.6M](methods/nguyen2020-diffwin.md#parameter-counts)",
         "+10M (Nguyen 2020, T1: 63M -> 73M)",
         f"[{_ratio_at(group3, 'transformer_diffwin', 'train_ratio', 2)}]({link['benchmark']})",
         "0.87 (Nguyen 2020, T4)"),
        ("`transformer_dman_wmt_en_de`", "[+0.05M](methods/fan2021-man.md#parameter-counts)",
         "+1M (Fan 2021, T1: 62M -> 63M)",
         f"[{_ratio_at(dman, 'transformer_dman_wmt_en_de', 'train_ratio_vs_baseline', 3, seq_len=64)}]({link['dman']})",
         ""),
    ]
    return markdown(("architecture", "parameters added (ours)", "paper", "training speed ratio (ours, CPU)", "paper (GPU)"),
                    rows)


def real_data_table(runs, also):
    """measurements.md: the small real-data runs, one line each, from their result files (``also``)."""
    dman_slow, lm, probing, sst2, dman_norm, slow_suite = ([run] for run in also)

    def joined(items, key, digits):
        return " / ".join(f"{r[key]:.{digits}f}" for r in items)

    dman_curves = read_curves(REPO / dman_norm[0]["curves"])
    curve = {r["run"]: r["curve"] for r in records(dman_norm)}
    loss = lambda run, n: f"{dman_curves[(curve[run], n)]:.3f}"  # noqa: E731
    # in the table's order: the post-norm Transformer, post-norm DMAN, pre-norm DMAN
    transformer, post, pre = (r["run"] for r in records(dman_norm)
                              if r["run"].startswith(("Transformer (post", "DMAN, `--man-norm post", "DMAN, `--man-norm pre")))
    lm_rows, sst_rows = records(lm), records(sst2)
    rows = [
        ("[Multi30k de-en, 256-dim 3+3, 1,500 updates (the DMAN study's recipe)](dman.md#the-slow-test): Transformer / "
         "DMAN test2016 BLEU", joined(records(dman_slow), "bleu", 2), "-"),
        ("[News-English LM stand-in, 6 x 128-dim, 600 updates](tasks.md#language-models-nguyen-et-al-2020-table-6): "
         "test perplexity of Vaswani / Shaw / Dec(MW) / Dec(AW)", joined(lm_rows, "ppl", 2),
         " / ".join(f"{published('nguyen2020', '6', r['arch'], 'ppl'):.2f}" for r in lm_rows) + " (T6, 1B Word)"),
        ("[Probing, Multi30k En-De 64-dim encoders, held-out English](probing.md#measured-here-small-multi30k-ende-encoders): "
         "SentLen / WC / BShift of Transformer / Local / Hybrid",
         "; ".join(f"{r['SentLen']:.1f} / {r['WC']:.1f} / {r['BShift']:.1f}" for r in records(probing)),
         "- (generated tasks)"),
        ("[SST-2, Nguyen 2020 tiny encoder, 3,000 updates](tasks.md#our-numbers): test accuracy of Vaswani / Shaw / Yang / "
         "Enc(MW) / Enc(AW)", joined(sst_rows, "test", 1),
         " / ".join(f"{published('nguyen2020', '5', r['arch'], 'accuracy', '-sst'):.2f}" for r in sst_rows) + " (T5)"),
        ("[Multi30k de-en, 128-dim, 600 updates](dman.md): validation loss, Transformer / DMAN post-norm (300 upd.) / DMAN "
         "pre-norm", f"{loss(transformer, 600)} / {loss(post, 300)} at 300 / {loss(pre, 600)}", ""),
        ("[Multi30k de-en, 64-dim 3+3, 300 updates (slow-suite floors)](testing.md): test2016 BLEU of Transformer / "
         "Gaussian / 2D-CSAN / relpos / hybrid / Local_Hard / DiffWin / DMAN / SMAN", joined(records(slow_suite), "bleu", 2), ""),
    ]
    return markdown(("what", "ours", "paper"), rows)


# ---------------------------------------------------------------------------------------------------- the tables


@dataclass(frozen=True)
class DocTable:
    """One generated table: its marker name, its page, its result files (the caption's) and how it is rendered;
    ``also`` are result files it reads values from whose own tables carry their captions."""

    name: str
    page: str
    files: Tuple[str, ...]
    render: Callable[[List[Run], List[Run]], str]
    also: Tuple[str, ...] = ()

    def paths(self) -> List[Path]:
        return [RESULTS / f for f in self.files]

    def also_paths(self) -> List[Path]:
        return [RESULTS / f for f in self.also]

    def generate(self) -> str:
        runs = [load_run(p) for p in self.paths()]
        also = [load_run(p) for p in self.also_paths()]
        page = REPO / self.page
        return caption(runs, self.paths(), page, self.also_paths()) + "\n\n" + self.render(runs, also)


EVERY_FAMILY = ("benchmark/every-family/group1.json", "benchmark/every-family/group2.json",
                "benchmark/every-family/group3.json")

TABLES: Tuple[DocTable, ...] = (
    DocTable("benchmark/cpu-wall-decoder-families", "docs/benchmark.md", ("benchmark/cpu-wall-decoder-families.json",),
             rounds_table()),
    DocTable("benchmark/cpu-wall-diffwin", "docs/benchmark.md", ("benchmark/cpu-wall-diffwin.json",), rounds_table()),
    DocTable("benchmark/cpu-time-diffwin", "docs/benchmark.md", ("benchmark/cpu-time-diffwin.json",), rounds_table()),
    DocTable("benchmark/diffwin-decode-flops", "docs/benchmark.md",
             tuple(f"benchmark/diffwin-flops-max-len-{length}.json" for length in (1, 2, 32, 64)), decode_flop_parts_table),
    DocTable("benchmark/every-family", "docs/benchmark.md", EVERY_FAMILY, rounds_table({"transformer_block": BLOSAN})),
    DocTable("benchmark/quiet", "docs/benchmark.md",
             ("benchmark/quiet/run-a.json", "benchmark/quiet/run-b.json", "benchmark/quiet/run-c.json"), quiet_table,
             also=EVERY_FAMILY),
    DocTable("benchmark/compare-size-cpu-time", "docs/compare.md", ("benchmark/compare-size-cpu-time.json",),
             rounds_table()),
    DocTable("benchmark/cpu-allocator", "docs/training.md", ("benchmark/cpu-allocator.json",), allocator_table),
    DocTable("benchmark/cpu-flex-decoding", "docs/gpu.md", ("benchmark/cpu-flex-decoding.json",), rounds_table()),
    DocTable("benchmark/memory-every-family", "docs/benchmark.md", ("benchmark/memory-every-family.json",), memory_table),
    DocTable("benchmark/gaussian-iwslt-loaded", "docs/benchmark.md", ("benchmark/gaussian-iwslt-loaded.json",),
             printed_table(models=True)),
    DocTable("benchmark/baselines-busy", "docs/baselines.md", ("benchmark/baselines-busy.json",), baselines_table),
    DocTable("benchmark/diffwin-base", "docs/methods/nguyen2020-diffwin.md",
             ("benchmark/diffwin-base-len64.json", "benchmark/diffwin-base-len256.json"), printed_table(models=False)),
    DocTable("benchmark/dman-base", "docs/methods/fan2021-man.md", ("benchmark/dman-base.json",),
             subprocess_markdown({"transformer_wmt_en_de": "Transformer base",
                                  "transformer_wmt_en_de@encoder_layers=9,decoder_layers=8": "same number of sub-layers"})),
    DocTable("csan/whole-model", "docs/methods/yang2019-csan.md", ("csan/whole-model.json",), csan_model_table),
    DocTable("csan/layer-time", "docs/methods/yang2019-csan.md", ("csan/layer.json",), csan_layer_time_table),
    DocTable("csan/layer-memory", "docs/methods/yang2019-csan.md", ("csan/layer.json",), csan_layer_memory_table),
    DocTable("tasks/sst2-500-updates", "docs/tasks.md", ("tasks/sst2-500-updates.json",), sst2_table(False, True)),
    DocTable("tasks/sst2-3000-updates", "docs/tasks.md", ("tasks/sst2-3000-updates.json",), sst2_table(True, False)),
    DocTable("tasks/lm-news-standin", "docs/tasks.md", ("tasks/lm-news-standin.json",), lm_table),
    DocTable("tasks/news-en-standin-sizes", "docs/tasks.md", ("tasks/news-en-standin-sizes.json",), corpus_sizes_table),
    DocTable("analyses/ngram-gap-multi30k", "docs/analyses.md", ("analyses/ngram-gap-multi30k.json",), ngram_gap_table),
    DocTable("analyses/tiny-zh-en", "docs/analyses.md", ("analyses/tiny-zh-en.json",),
             analyses_tables((("Yang 2018 Fig. 3: the Gaussian's windows D per layer, validation set", gaussian_scopes_table),
                              ("Yang 2018 Fig. 2: the head-specific windows D_m (Eq. 11)", head_windows_table),
                              ("Fan 2021 Table 5 (Eq. 13): attention mass within w tokens, %, test set",
                               attention_mass_table("attention-mass"))))),
    DocTable("analyses/tiny-zh-en-200-updates", "docs/analyses.md", ("analyses/tiny-zh-en-200-updates.json",),
             analyses_tables((("Xu 2019 Fig. 3: the gate g (Eq. 5) per layer, validation set", gate_layers_table),
                              ("Fan 2021 Table 5 (Eq. 13), DMAN and the Transformer: attention mass within w tokens, %, "
                               "test set", attention_mass_table("attention-mass-dman")),
                              ("Nguyen 2020 Eq. 7-9: the soft windows' mean width E|r - l| + 1, validation set",
                               diffwin_windows_table)))),
    DocTable("tasks/news-en-standin-sources", "docs/tasks.md", ("tasks/news-en-standin-sources.json",),
             corpus_sources_table),
    DocTable("summarization/rouge-scorers", "docs/summarization.md", ("summarization/rouge-scorers.json",),
             rouge_scorers_table),
    DocTable("probing/mechanics", "docs/probing.md", ("probing/mechanics.json",), probing_mechanics_table),
    DocTable("probing/multi30k-encoders", "docs/probing.md", ("probing/multi30k-encoders.json",), probing_encoders_table),
    DocTable("dman/norm-placement", "docs/dman.md", ("dman/norm-placement.json",), dman_norm_table),
    DocTable("dman/initial-mask", "docs/dman.md", ("dman/initial-mask.json",), dman_init_table),
    DocTable("dman/update-time", "docs/dman.md", ("dman/update-time.json",), update_time_table),
    DocTable("dman/slow-test", "docs/dman.md", ("dman/slow-test.json",), dman_slow_table),
    DocTable("gpu/h200-tests-first-run", "docs/gpu.md", ("gpu/h200-tests-first-run.json",), gpu_tests_table),
    DocTable("gpu/h200-tests-flex", "docs/gpu.md", ("gpu/h200-tests-flex.json",), gpu_tests_table),
    DocTable("gpu/h200-train-first-run", "docs/gpu.md", ("gpu/h200-train-first-run.json",), gpu_train_table),
    DocTable("gpu/h200-compare-transformer-fp16", "docs/gpu.md", ("gpu/h200-compare-transformer-fp16.json",),
             gpu_curve_table),
    DocTable("gpu/h200-tests-relpos", "docs/gpu.md", ("gpu/h200-tests-relpos.json",), gpu_tests_table),
    DocTable("gpu/h200-train-second-run", "docs/gpu.md", ("gpu/h200-train-second-run.json",), gpu_train_table),
    DocTable("gpu/h200-backends-fp16-1024", "docs/gpu.md", ("gpu/h200-backends-fp16-1024.json",), gpu_backends_table),
    DocTable("gpu/h200-backends-fp16-1024-shared", "docs/gpu.md", ("gpu/h200-backends-fp16-1024-shared.json",),
             gpu_backends_table),
    DocTable("gpu/h200-compare-dman-fp16", "docs/gpu.md", ("gpu/h200-compare-dman-fp16.json",), gpu_curve_table),
    DocTable("prep/corpus-time", "docs/data.md", ("prep/corpus-time.json",), prep_time_table),
    DocTable("prep/corpus-statistics", "docs/data.md", ("prep/corpus-statistics.json",), corpus_statistics_table),
    DocTable("testing/slow-suite-bleu", "docs/testing.md", ("testing/slow-suite-bleu.json",), slow_suite_table),
    DocTable("testing/default-run-time", "docs/testing.md", ("testing/default-run-time.json",), suite_time_table),
    DocTable("testing/quickstart-time", "docs/training.md", ("testing/quickstart-time.json",), quickstart_time_table),
    DocTable("testing/flex-cpu-margins", "docs/gpu.md", ("testing/flex-cpu-margins.json",), flex_margins_table),
    DocTable("testing/mutation-score", "docs/testing.md", ("testing/mutation-score.json",), mutation_table),
    DocTable("measurements/parameters-and-speed", "docs/measurements.md", (), parameters_and_speed_table,
             also=(*EVERY_FAMILY, "csan/whole-model.json", "benchmark/dman-base.json")),
    DocTable("measurements/real-data", "docs/measurements.md", (), real_data_table,
             also=("dman/slow-test.json", "tasks/lm-news-standin.json", "probing/multi30k-encoders.json",
                   "tasks/sst2-3000-updates.json", "dman/norm-placement.json", "testing/slow-suite-bleu.json")),
)


def summary_caption(table: DocTable) -> str:
    """A table made only of other tables' values: the files it reads, their dates and machines."""
    runs = [load_run(p) for p in table.also_paths()]
    dates = sorted({run["date"] for run in runs})
    machines = sorted({run["machine"] for run in runs})
    page = REPO / table.page
    return (f"Collected from the result files {', '.join(_link(p, page) for p in table.also_paths())}: measured "
            f"{dates[0] if len(dates) == 1 else dates[0] + ' to ' + dates[-1]} on {'; '.join(machines)}; the linked "
            f"tables give each one's command.")


def generate(table: DocTable) -> str:
    if table.files:
        return table.generate()
    return summary_caption(table) + "\n\n" + table.render([], [load_run(p) for p in table.also_paths()])


def stale(pages: Optional[Sequence[str]] = None) -> Dict[Path, str]:
    """The pages whose generated blocks differ from their result files: page -> its text as it should be."""
    wanted: Dict[Path, str] = {}
    for table in TABLES:
        if pages and table.page not in pages:
            continue
        page = REPO / table.page
        current = wanted.get(page, page.read_text(encoding="utf-8"))
        wanted[page] = replace_block(current, begin_marker(table.name), END, generate(table), table.page)
    return {page: text for page, text in wanted.items() if text != page.read_text(encoding="utf-8")}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page differs from its result files")
    parser.add_argument("--list", action="store_true", help="print each table's name, page and result files")
    args = parser.parse_args(argv)
    if args.list:
        for table in TABLES:
            print(f"{table.name}\t{table.page}\t{' '.join(table.files + table.also)}")
        return 0
    changed = stale()
    if args.check:
        for page in changed:
            print(f"{page.relative_to(REPO)}: a measured table differs from its result file; run "
                  "python -m fairseq_localness.experiments.doc_tables", file=sys.stderr)
        return 1 if changed else 0
    for page, text in changed.items():
        page.write_text(text, encoding="utf-8")
        print(f"updated {page.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
