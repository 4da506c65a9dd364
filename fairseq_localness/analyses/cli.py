"""``fairseq-localness-analyze NAME [options]``: the papers' analyses, regenerated from checkpoints or translations.

Each analysis writes OUT/NAME.png (the figure), OUT/NAME.csv (the numbers behind it)
and OUT/NAME.md (a markdown table); ``--overwrite`` replaces earlier outputs.
``--json PATH`` also writes the table as a result file for docs/results/: its rows, with the
date, machine, load and command that made them (the docs' generated tables read it).
``fairseq-localness-analyze list`` prints the analyses with the figure or table each reproduces.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..cli import device_argument, int_at_least
from ..evaluation.scoring import tokenizer_argument
from ..paths import USER_DIR
from ..provenance import (command_line, load_average, machine_description, result_file_problem, run_header, utc_now,
                          write_result_file)
from .loading import (AnalysisError, LoadedModel, PassOptions, load_checkpoint, parse_labelled, pick_device,
                      require_method, require_sentences)
from .output import Outputs


@dataclass(frozen=True)
class Analysis:
    help: str
    paper: str
    needs_checkpoint: bool
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Outputs], Dict[str, str]]
    extra_tables: Tuple[str, ...] = ()  # the keys of the NAME-KEY.csv tables it writes beside NAME.csv
    # what a --json result file records beside the rows, from the arguments (the inputs a reader needs to know)
    result_fields: Callable[[argparse.Namespace], Dict[str, object]] = lambda args: {}


_one_based = int_at_least(1, "heads and layers are counted from 1")


def _ints(text: str) -> List[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _matching_files(path: str, flag: str, value: str) -> List[str]:
    """``path``, or the files a pattern in it matches (``seed*``: a system's seeds), sorted."""
    if not glob.has_magic(path):
        return [path]
    matches = sorted(glob.glob(path))
    if not matches:
        raise AnalysisError(f"{flag} {value}: no file matches {path}")
    return matches


def _pooled_files(values: Sequence[str], flag: str) -> Dict[str, List[str]]:
    """NAME=FILE values, the files of a repeated NAME kept together (its seeds); a FILE pattern gives its matches."""
    named: Dict[str, List[str]] = {}
    for value in values:
        label, pattern = parse_labelled(value)
        if label is None:
            raise AnalysisError(f"{flag} {value}: give NAME=FILE")
        for path in _matching_files(pattern, flag, value):
            if path in named.get(label, []):
                raise AnalysisError(f"{flag} {value}: {path} is given twice for {label}")
            named.setdefault(label, []).append(path)
    return named


def _baseline_files(values: Sequence[str]) -> List[str]:
    """The --baseline files, patterns expanded, none given twice."""
    files: List[str] = []
    for value in values:
        for path in _matching_files(value, "--baseline", value):
            if path in files:
                raise AnalysisError(f"--baseline {value}: {path} is given twice")
            files.append(path)
    return files


def _labelled_files(values: Sequence[str], flag: str) -> Dict[str, str]:
    """NAME=FILE values, one file per NAME."""
    named = _pooled_files(values, flag)
    for label, paths in named.items():
        if len(paths) > 1:
            raise AnalysisError(f"{flag} {label}={paths[1]}: {label} is already {paths[0]}; give each system its own NAME")
    return {label: paths[0] for label, paths in named.items()}


def _models(args: argparse.Namespace, data_needed: bool = True) -> List[LoadedModel]:
    if data_needed and not args.data:
        raise AnalysisError(f"{args.analysis}: --data DATA_BIN (the binarised data directory) is required")
    models = []
    for value in args.checkpoint:
        label, path = parse_labelled(value)
        models.append(load_checkpoint(path, args.data, label, args.device, args.user_dir))
    labels = [m.label for m in models]
    if len(set(labels)) != len(labels):
        raise AnalysisError(f"--checkpoint: two checkpoints are both labelled {labels}; name them LABEL=PATH")
    return models


def _pass(args: argparse.Namespace) -> PassOptions:
    return PassOptions(split=args.split, max_tokens=args.max_tokens, batch_size=args.batch_size,
                       max_sentences=args.max_sentences, quiet=args.quiet)


# --- each analysis: arguments and run ----------------------------------------------------------------------------


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def _run_head_windows(args, out: Outputs):
    from .windows import head_windows

    table, fig = head_windows(_models(args, data_needed=False))
    return out.write(args.name, table, fig)


def _args_scopes(parser):
    parser.add_argument("--attention", default="encoder", choices=("encoder", "decoder", "cross"), help="attention type")
    parser.add_argument("--samples", type=int, default=2000, help="queries per layer in the scatter (all go to the histogram)")


def _run_scopes(args, out: Outputs):
    from .windows import collect_scopes, scopes_figure, scopes_tables

    models = _models(args)
    collected = {m.label: collect_scopes(m, _pass(args), args.attention, args.samples) for m in models}
    summary, samples = scopes_tables(collected, args.attention)
    return out.write(args.name, summary, scopes_figure(collected), extra_tables={"samples": samples})


def _args_gate_layers(parser):
    parser.add_argument("--attention", default="encoder", choices=("encoder", "decoder"), help="attention type")


def _run_gate_layers(args, out: Outputs):
    from .gates import gate_layers

    table, fig = gate_layers(_models(args), _pass(args), args.attention)
    return out.write(args.name, table, fig)


def _args_gate_pos(parser):
    parser.add_argument("--tags", help="file of POS tags: one line per source sentence of --split, one tag per word")
    parser.add_argument("--tagger", help="spacy:MODEL -- tag --source-text with spaCy instead (written to OUT/NAME-tags.txt)")
    parser.add_argument("--source-text", help="with --tagger: the tokenised source of --split before BPE, one line per sentence")
    parser.add_argument("--layer", type=int, default=1, help="encoder layer (paper: 1)")
    parser.add_argument("--bpe", default="auto", choices=("auto", "subword_nmt", "sentencepiece", "none"),
                        help="how pieces join into words")


def _run_gate_pos(args, out: Outputs):
    from .gates import gate_pos, spacy_tags
    from .bleu import read_translations

    tags = args.tags
    if tags and not os.path.isfile(tags):
        raise AnalysisError(f"--tags {tags}: no such file")
    if args.tagger:
        kind, _, model = args.tagger.partition(":")
        if kind != "spacy" or not model or not args.source_text:
            raise AnalysisError("--tagger spacy:MODEL with --source-text FILE (e.g. --tagger spacy:en_core_web_sm)")
        for checkpoint in args.checkpoint:  # before spaCy tags the whole source and writes NAME-tags.txt
            path = parse_labelled(checkpoint)[1]
            if not os.path.isfile(path):
                raise AnalysisError(f"--checkpoint {path}: no such file")
        tags = os.path.join(out.directory, f"{args.name}-tags.txt")
        out.check(args.name, [f"{args.name}-tags.txt"])
        os.makedirs(out.directory, exist_ok=True)
        with open(tags, "w", encoding="utf-8") as f:
            f.writelines(" ".join(line) + "\n" for line in spacy_tags(read_translations(args.source_text), model))
    if not tags:
        raise AnalysisError("gate-pos: give --tags FILE (or --tagger spacy:MODEL --source-text FILE)")
    table, fig = gate_pos(_models(args), _pass(args), tags, args.layer, args.bpe)
    return out.write(args.name, table, fig)


def _args_mass(parser):
    parser.add_argument("--windows", type=_ints, default=[1, 2, 4], help="window sizes w (paper: 1,2,4)")
    parser.add_argument("--layers", type=_ints, default=None, help="encoder layers (default: all; paper: 1,3,6)")


def _run_mass(args, out: Outputs):
    from .attention import mass_figure, mass_table, published_values

    paper = published_values()  # the paper's values come from the checkout: a missing one fails before any model loads
    models = _models(args)
    for loaded in models:  # before the passes over the split
        count = len(getattr(getattr(loaded.model, "encoder", None), "layers", None) or [])
        outside = [layer for layer in args.layers or [] if not 1 <= layer <= count]
        if count and outside:
            raise AnalysisError(f"--layers {','.join(map(str, outside))}: {loaded.path} has encoder layers 1-{count}")
    table = mass_table(models, _pass(args), args.windows, args.layers, paper)
    return out.write(args.name, table, mass_figure(table))


def _args_diffwin(parser):
    parser.add_argument("--method", default="diffwin_enc", choices=("diffwin_enc", "diffwin_dec", "diffwin_cross"))
    parser.add_argument("--sentences", type=_ints, default=[0], help="sentence ids of --split to draw (default: 0)")
    parser.add_argument("--head", type=_one_based, default=None, help="draw this head's mask (default: the mean over heads)")


def _run_diffwin(args, out: Outputs):
    from .windows import collect_soft_windows, soft_window_outputs

    if len(args.checkpoint) != 1:  # before any checkpoint is loaded
        raise AnalysisError("diffwin-windows: give one --checkpoint")
    models = _models(args)
    require_sentences(models[0], args.split, args.sentences, "--sentences")
    if args.head is not None:  # before the pass over the split
        heads = require_method(models[0], "diffwin-windows", args.method)[0][0].spec.num_heads
        if args.head > heads:
            raise AnalysisError(f"--head {args.head}: {args.method} has {heads} heads")
    windows = collect_soft_windows(models[0], _pass(args), args.method, args.sentences)
    table, fig = soft_window_outputs(models[0].label, args.method, windows, args.head)
    return out.write(args.name, table, fig)


def _args_heatmap(parser):
    parser.add_argument("--attention", default="encoder", choices=("encoder", "decoder", "cross"))
    parser.add_argument("--layer", type=_one_based, default=1, help="1-based layer")
    parser.add_argument("--head", type=_one_based, default=None, help="1-based head (default: the mean over heads)")
    parser.add_argument("--sentence", type=int, default=0, help="sentence id in --split")


def _run_heatmap(args, out: Outputs):
    from .attention import attention_heatmap, heatmap_outputs

    if len(args.checkpoint) != 1:  # before any checkpoint is loaded
        raise AnalysisError("attention-heatmap: give one --checkpoint")
    models = _models(args)
    require_sentences(models[0], args.split, [args.sentence], "--sentence")
    found = attention_heatmap(models[0], _pass(args), args.attention, args.layer, args.sentence, args.head)
    table, fig = heatmap_outputs(models[0].label, found, args.attention, args.layer, args.sentence, args.head)
    return out.write(args.name, table, fig)


def _args_ngram(parser):
    parser.add_argument("--hyp", action="append", required=True, metavar="NAME=FILE",
                        help="a system's translations (repeatable; a NAME given several times, or a FILE pattern such "
                             "as 'csan=runs/csan/seed*/hyp.txt', is scored seed-pooled over its files)")
    parser.add_argument("--baseline", action="append", required=True, metavar="FILE",
                        help="the baseline's translations (repeatable, or a pattern: several files are scored "
                             "seed-pooled)")
    parser.add_argument("--baseline-name", default="baseline", metavar="NAME",
                        help="the baseline's name in the caption and the --json result file (default: baseline)")
    parser.add_argument("--ref", required=True, help="references (plain text or fairseq-generate output's T- lines)")
    parser.add_argument("--max-order", type=int_at_least(1), default=8,
                        help="highest n-gram order (papers: 8)")
    parser.add_argument("--tokenize", type=tokenizer_argument, default="13a",
                        help="sacreBLEU tokenizer (13a, zh, intl, none for tokenised text, ...)")
    parser.add_argument("--lowercase", action="store_true",
                        help="compare lowercased (for systems trained on lowercased text, scored against cased references)")


def _run_ngram(args, out: Outputs):
    from .bleu import ngram_gap

    systems, baseline = _pooled_files(args.hyp, "--hyp"), _baseline_files(args.baseline)
    args.scored_files = {args.baseline_name: baseline, **systems}  # patterns expanded once: what --json records
    table, fig = ngram_gap(systems, baseline, args.ref, args.max_order, args.tokenize, args.lowercase,
                           args.baseline_name)
    return out.write(args.name, table, fig)


def _ngram_fields(args) -> Dict[str, object]:
    """The baseline's name (the docs' table labels its row with it) and every file scored, patterns expanded."""
    return {"baseline": args.baseline_name, "reference": args.ref, "files": args.scored_files}


def _length_fields(args) -> Dict[str, object]:
    return {"reference": args.ref, "source": args.source, "files": args.scored_files}


def _sweep_fields(args) -> Dict[str, object]:
    return {"runs": list(args.run)}


def _args_length(parser):
    parser.add_argument("--hyp", action="append", required=True, metavar="NAME=FILE", help="a system's translations (repeatable)")
    parser.add_argument("--ref", required=True)
    parser.add_argument("--source", help="source sentences, for source-length buckets (default: reference length)")
    parser.add_argument("--buckets", type=_ints, default=[10, 20, 30, 40, 50], help="upper bucket edges in words")
    parser.add_argument("--tokenize", type=tokenizer_argument, default="13a", help="sacreBLEU tokenizer")


def _run_length(args, out: Outputs):
    from .bleu import length_buckets

    args.scored_files = _labelled_files(args.hyp, "--hyp")  # what --json records
    table, fig = length_buckets(args.scored_files, args.ref, args.source, args.buckets, args.tokenize)
    return out.write(args.name, table, fig)


def _args_sweep(parser):
    parser.add_argument("--run", action="append", required=True, metavar="[SERIES:]X=RUN",
                        help="a run's swept value X and its directory (or scores.json), e.g. 'M:11=runs/csan1d-m11' (repeatable)")
    parser.add_argument("--x-label", default="window size M", help="x axis label")
    parser.add_argument("--metric", default="sacrebleu", choices=("sacrebleu", "tokenized_bleu"))


def _sweep_points(args) -> List[Tuple[str, float, str]]:
    points = []
    for value in args.run:
        key, sep, path = value.partition("=")
        series, _, x = key.rpartition(":")
        try:
            points.append((series or "sweep", float(x), path))
        except ValueError:
            raise AnalysisError(f"--run {value}: give [SERIES:]X=RUN with a number X") from None
        if not sep:
            raise AnalysisError(f"--run {value}: give [SERIES:]X=RUN")
    return points


def _run_sweep(args, out: Outputs):
    from .bleu import sweep

    table, fig = sweep(_sweep_points(args), args.x_label, args.metric,
                       caption="Yang et al. (2019) Figure 2: BLEU against the 1D window M and the number of 2D heads N.")
    return out.write(args.name, table, fig)


def _args_hybrid_sweep(parser):
    _args_sweep(parser)
    parser.set_defaults(x_label="local window m")
    parser.add_argument("--checkpoint-name", default="checkpoint_best.pt", help="the checkpoint in each run directory for the gate")


def _run_hybrid_sweep(args, out: Outputs):
    from .bleu import run_bleu, sweep
    from .gates import mean_gate_by_layer

    points = _sweep_points(args)
    for _, _, path in points:  # every run's score and checkpoint, before the first pass over the split
        run_bleu(path, args.metric)
        if not os.path.isfile(os.path.join(path, args.checkpoint_name)):
            raise AnalysisError(f"--run {path}: no {args.checkpoint_name} (see --checkpoint-name)")
    gates = {}
    for _, x, path in points:
        checkpoint = os.path.join(path, args.checkpoint_name)
        loaded = load_checkpoint(checkpoint, args.data, f"m={x:g}", args.device, args.user_dir)
        by_layer = mean_gate_by_layer(loaded, _pass(args))
        total = sum(count for _, count in by_layer.values())
        gates[path] = sum(mean * count for mean, count in by_layer.values()) / max(total, 1)
    table, fig = sweep(points, args.x_label, args.metric, gates,
                       caption="Xu et al. (2019) Figure 2: BLEU against the local window m, with the mean gate (Eq. 5) "
                               "over every gated layer and token.")
    return out.write(args.name, table, fig)


ANALYSES: Dict[str, Analysis] = {
    "head-windows": Analysis("learned window D_m = N sigmoid(z_m) of every head and layer", "Yang 2018 Fig. 2", True,
                             _no_arguments, _run_head_windows),
    "gaussian-scopes": Analysis("predicted centre P and window D per layer: scatter and histogram", "Yang 2018 Fig. 3", True,
                                _args_scopes, _run_scopes, extra_tables=("samples",)),
    "ngram-gap": Analysis("n-gram precision gap over a baseline, n = 1..8 (text files)", "Yang 2018 Fig. 4, Yang 2019 Fig. 3",
                          False, _args_ngram, _run_ngram, result_fields=_ngram_fields),
    "window-sweep": Analysis("BLEU against the CSAN window M / 2D heads N over run directories", "Yang 2019 Fig. 2", False,
                             _args_sweep, _run_sweep, result_fields=_sweep_fields),
    "hybrid-sweep": Analysis("BLEU and mean gate against the hybrid window m over run directories", "Xu 2019 Fig. 2", True,
                             _args_hybrid_sweep, _run_hybrid_sweep, result_fields=_sweep_fields),
    "gate-layers": Analysis("mean hybrid gate per layer", "Xu 2019 Fig. 3", True, _args_gate_layers, _run_gate_layers),
    "gate-pos": Analysis("mean hybrid gate per POS tag", "Xu 2019 Fig. 4", True, _args_gate_pos, _run_gate_pos),
    "attention-mass": Analysis("attention mass within w tokens, DMAN vs SAN, with the published values", "Fan 2021 Table 5 (Eq. 13)",
                               True, _args_mass, _run_mass),
    "diffwin-windows": Analysis("learned soft windows (heatmaps) and mean window width per layer", "Nguyen 2020", True,
                                _args_diffwin, _run_diffwin),
    "length-bleu": Analysis("BLEU by source-length bucket (text files)", "all papers' length analyses", False,
                            _args_length, _run_length, result_fields=_length_fields),
    "attention-heatmap": Analysis("attention weights of any head for one sentence", "-", True, _args_heatmap, _run_heatmap),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairseq-localness-analyze", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="analysis", metavar="NAME")
    commands.add_parser("list", help="the analyses and the paper figure each reproduces")
    for name, analysis in ANALYSES.items():
        sub = commands.add_parser(name, help=f"{analysis.help} ({analysis.paper})")
        sub.add_argument("--out", default="runs/analyses", help="output directory (default: runs/analyses, which git ignores)")
        sub.add_argument("--name", default=name, help=f"output file stem (default: {name})")
        sub.add_argument("--overwrite", action="store_true",
                         help="replace existing outputs (and an existing --json file)")
        sub.add_argument("--json", metavar="PATH",
                         help="also write the table as a docs/results/ result file: its rows, with the date, machine, "
                              "load and command")
        sub.add_argument("--note", help="with --json: a sentence on the inputs, recorded in the result file")
        if analysis.needs_checkpoint:
            if name != "hybrid-sweep":
                sub.add_argument("--checkpoint", action="append", required=True, metavar="[LABEL=]PATH",
                                 help="a fairseq checkpoint (repeatable; LABEL names it in the figure)")
            sub.add_argument("--data", help="binarised data directory (fairseq-preprocess output) holding --split")
            sub.add_argument("--split", default="valid", help="split to run over (default: valid, the papers' development set)")
            sub.add_argument("--max-tokens", type=int, default=4096, help="tokens per batch")
            sub.add_argument("--batch-size", type=int, default=None, help="sentences per batch")
            sub.add_argument("--max-sentences", type=int, default=None, help="read only this many sentences")
            sub.add_argument("--device", type=device_argument, default="auto", help="auto (GPU when available), cpu, cuda, cuda:1, ...")
            sub.add_argument("--user-dir", default=str(USER_DIR), help="the plugin directory, as fairseq's --user-dir")
            sub.add_argument("--quiet", action="store_true", help="no progress output")
        analysis.add_arguments(sub)
    return parser


def _json_value(value: object) -> object:
    """A table cell as JSON: numpy and torch scalars become Python numbers."""
    return value.item() if hasattr(value, "item") else value


def result_file(args: argparse.Namespace, analysis: Analysis, table, csv_path: str, header: dict) -> dict:
    """What ``--json`` writes: the provenance ``header``, the analysis, its caption and inputs, and the table's rows."""
    content = {**header, "source": f"written by the command, the rows of the table it wrote to {csv_path}"}
    if args.note:
        content["note"] = args.note
    read: Dict[str, object] = {}
    if getattr(args, "checkpoint", None):  # the checkpoints as given (LABEL=PATH)
        read["checkpoints"] = list(args.checkpoint)
    if analysis.needs_checkpoint:  # and the split they were run over
        read.update(data=args.data, split=args.split)
    content.update({"analysis": args.analysis, "paper": analysis.paper, "caption": table.caption, **read,
                    **analysis.result_fields(args),
                    "records": [{c: _json_value(row.get(c)) for c in table.columns} for row in table.rows]})
    return content


def measured_by(started, command: str, gpus: int = 0) -> str:
    """The markdown caption's provenance: the date and start time, the machine (its GPU where the analysis runs on
    one) and the command."""
    return f"Measured {started:%Y-%m-%d %H:%M} UTC on {machine_description(gpus)}; command: `{command}`."


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, str]:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.analysis in (None, "list"):
        for name, analysis in ANALYSES.items():
            print(f"{name:18s} {analysis.paper:34s} {analysis.help}")
        return {}
    if args.note and not args.json:
        raise AnalysisError("--note is recorded in the --json result file: give --json PATH too")
    problem = args.json and result_file_problem(args.json, "--json", args.overwrite)
    if problem:
        raise AnalysisError(problem)
    started, load_before = utc_now(), load_average()
    command = command_line("python scripts/analyze.py", sys.argv[1:] if argv is None else argv)
    gpus = 1 if pick_device(getattr(args, "device", "cpu")).type == "cuda" else 0  # the analysis's own device
    out = Outputs(args.out, overwrite=args.overwrite, provenance=measured_by(started, command, gpus))
    analysis = ANALYSES[args.analysis]
    out.check(args.name, [out.extra_table_name(args.name, key) for key in analysis.extra_tables])  # before any long pass
    written = analysis.run(args, out)
    if args.json:
        header = run_header(started, load_before, load_average(), command, gpus=gpus)
        write_result_file(args.json, result_file(args, analysis, out.tables[args.name], written["csv"], header))
    for kind, path in written.items():
        print(f"{kind:12s} {path}")
    if args.json:
        written["json"] = args.json
    return written


def console_main() -> None:
    try:
        main()
    except AnalysisError as exc:
        print(f"fairseq-localness-analyze: error: {exc}", file=sys.stderr)
        sys.exit(2)
