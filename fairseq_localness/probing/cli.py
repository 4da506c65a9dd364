"""``fairseq-localness-probe`` (= ``python scripts/probe.py``): linguistic probing of a translation encoder.

    fairseq-localness-probe evaluate --checkpoint CKPT --tasks DIR_OR_FILE [...] [--out-dir DIR]
        [--bpe-codes CODES | --spm-model MODEL | --prep-dir DIR] [--tokenizer moses|none] [--lowercase]
    fairseq-localness-probe generate --text ENGLISH.txt --out-dir DIR [--tasks sentence_length,...]
        [--scale 0.01] [--seed 1]

See docs/probing.md.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from typing import List, Optional, Sequence

from localness_prep.checks import CheckError
from localness_prep.senteval import read_task, summary, write_task

from ..cli import device_argument
from ..provenance import directory_problem
from . import generators as gen
from .classifier import ClassifierConfig
from .encode import Preprocessing, ProbingError, load_encoder, preprocessing_from_prep_dir


def _device(text: str) -> str:
    """The encoder's device: a torch device, checked before the checkpoint loads (no ``auto`` here)."""
    if text == "auto":
        raise argparse.ArgumentTypeError("auto: give the device, cpu or cuda")
    return device_argument(text)


def _numbers(kind):
    def parse(value: str) -> List:
        try:
            return [kind(v) for v in value.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__}s, got {value!r}") from None
    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fairseq-localness-probe", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = ClassifierConfig()

    e = sub.add_parser("evaluate", help="probe a checkpoint's frozen encoder on SentEval-format task files")
    e.add_argument("--checkpoint", required=True, help="a translation checkpoint (fairseq-train output)")
    e.add_argument("--tasks", nargs="+", required=True, help="SentEval-format files, or directories of them")
    e.add_argument("--data", help="the data directory with the dictionaries, if it moved since training")
    e.add_argument("--out-dir", help="write results.json and <task>.predictions.tsv here")
    e.add_argument("--force", action="store_true", help="replace an earlier results.json in --out-dir")
    g = e.add_argument_group("preprocessing (the model's training source side)")
    g.add_argument("--prep-dir", help="a data-prep/prepare-*.sh --out directory: its BPE model and casing")
    g.add_argument("--src-lang", default="en", help="source language, for --tokenizer moses and --prep-dir [en]")
    g.add_argument("--tokenizer", choices=("none", "moses"), default="none",
                   help="none: the text is already Moses-tokenised, as SentEval's is [none]")
    g.add_argument("--aggressive-dash", action="store_true", help="Moses -a (with --tokenizer moses)")
    g.add_argument("--lowercase", action="store_true", help="lower-case (the model's data was lower-cased)")
    g.add_argument("--bpe-codes", help="subword-nmt codes the training data was segmented with")
    g.add_argument("--spm-model", help="sentencepiece model the training data was segmented with")
    c = e.add_argument_group("classifier (defaults: SentEval's probing setting, Xu et al. 2019 Sec. 5.1)")
    c.add_argument("--hidden", type=_numbers(int), default=list(d.hidden), help="hidden sizes to search [50,100,200]")
    c.add_argument("--dropout", type=_numbers(float), default=list(d.dropout), help="dropouts to search [0,0.1,0.2]")
    c.add_argument("--l2", type=_numbers(float), default=list(d.l2), help="L2 penalties to search [1e-5,...,1e-2]")
    c.add_argument("--batch-size", type=int, default=d.batch_size, help="classifier mini-batch [1000, Xu et al.]")
    c.add_argument("--epoch-size", type=int, default=d.epoch_size, help="passes between dev checks [4]")
    c.add_argument("--tenacity", type=int, default=d.tenacity, help="dev checks without a new best before stopping [5]")
    c.add_argument("--max-epoch", type=int, default=d.max_epoch, help="at most this many passes [200]")
    c.add_argument("--seed", type=int, default=d.seed, help="classifier seed [1111, SentEval's]")
    e.add_argument("--encode-batch-size", type=int, default=128, help="sentences per encoder batch [128]")
    e.add_argument("--device", type=_device, default="cpu", help="cpu, cuda, cuda:1, ... [cpu]")
    e.add_argument("--limit", type=int, help="use only the first N lines of every partition (a quick look)")

    s = sub.add_parser("generate", help="build the parser-free probing tasks from English text (one sentence a line)")
    s.add_argument("--text", required=True, help="tokenised English text, one sentence a line")
    s.add_argument("--out-dir", required=True, help="writes <task>.txt here")
    s.add_argument("--tasks", default=",".join(gen.GENERATORS), help=f"comma-separated, of {', '.join(gen.GENERATORS)}")
    s.add_argument("--scale", type=float, default=0.01, help="tr/va/te = SentEval's 100k/10k/10k times this [0.01]")
    s.add_argument("--seed", type=int, default=1, help="sampling seed [1]")
    s.add_argument("--wc-words", type=int, default=gen.WC_WORDS, help=f"WC target words [{gen.WC_WORDS}]")
    s.add_argument("--wc-skip", type=int, default=gen.WC_SKIP, help=f"WC: skip this many most frequent words [{gen.WC_SKIP}]")
    s.add_argument("--force", action="store_true", help="replace existing <task>.txt files in --out-dir")
    return p


def evaluate(args: argparse.Namespace) -> int:
    from .probe import find_task_files, format_table, load_tasks, run_probing

    positive = {"--batch-size": args.batch_size, "--epoch-size": args.epoch_size, "--max-epoch": args.max_epoch,
                "--encode-batch-size": args.encode_batch_size}
    for flag, value in positive.items():
        if value < 1:
            raise ProbingError(f"{flag} must be a positive integer, got {value}")
    if args.limit is not None and args.limit < 1:
        raise ProbingError(f"--limit must be a positive integer, got {args.limit}")
    if args.tenacity < 0:
        raise ProbingError(f"--tenacity must be 0 or more, got {args.tenacity}")
    for flag, values, ok in (("--hidden", args.hidden, lambda v: v >= 0), ("--dropout", args.dropout, lambda v: 0 <= v < 1),
                             ("--l2", args.l2, lambda v: v >= 0)):
        if not values:
            raise ProbingError(f"{flag} needs at least one value")
        if not all(ok(v) for v in values):
            raise ProbingError(f"{flag} {','.join(map(str, values))}: out of range (hidden >= 0, 0 <= dropout < 1, l2 >= 0)")
    require_directory(args.out_dir)
    if args.out_dir and os.path.exists(os.path.join(args.out_dir, "results.json")) and not args.force:
        raise ProbingError(f"--out-dir {args.out_dir} already holds results.json; nothing was changed. "
                           "Pass --force to replace it, or choose another --out-dir")
    tasks = load_tasks(find_task_files(args.tasks), args.limit)
    if args.prep_dir:
        if args.bpe_codes or args.spm_model:
            raise ProbingError("--prep-dir brings its own BPE model: drop --bpe-codes/--spm-model, or --prep-dir")
        prep = preprocessing_from_prep_dir(args.prep_dir, args.src_lang)
        prep.lowercase = prep.lowercase or args.lowercase
    else:
        prep = Preprocessing(lang=args.src_lang, lowercase=args.lowercase, bpe_codes=args.bpe_codes, spm_model=args.spm_model)
    prep.tokenizer, prep.aggressive_dash = args.tokenizer, args.aggressive_dash
    cfg = ClassifierConfig(hidden=args.hidden, dropout=args.dropout, l2=args.l2, batch_size=args.batch_size,
                           epoch_size=args.epoch_size, tenacity=args.tenacity, max_epoch=args.max_epoch, seed=args.seed)
    prep.build()  # a missing BPE file is reported before the checkpoint is loaded
    frozen = load_encoder(args.checkpoint, args.data, args.device)
    results = run_probing(frozen, tasks, prep, cfg, args.out_dir, args.encode_batch_size)
    print(format_table(results, {t.name: t.counts() for t in tasks}))
    if args.out_dir:
        print(f"results: {os.path.join(args.out_dir, 'results.json')}")
    return 0


def require_directory(out_dir: Optional[str]) -> None:
    """--out-dir may be new or a directory; a file there is refused before any work."""
    problem = directory_problem(out_dir, "--out-dir") if out_dir else None
    if problem:
        raise ProbingError(f"{problem}: choose another --out-dir")


def generate(args: argparse.Namespace) -> int:
    names = [t for t in args.tasks.split(",") if t]
    for name in names:
        if name in gen.NEEDS_PARSER:
            raise ProbingError(f"--tasks {name}: needs a {gen.NEEDS_PARSER[name]}; use SentEval's own {name}.txt "
                               "(data-prep/prepare-senteval-probing.sh)")
        if name not in gen.GENERATORS:
            raise ProbingError(f"--tasks {name}: unknown; the generators are {', '.join(gen.GENERATORS)}")
    if not os.path.isfile(args.text):
        raise ProbingError(f"--text {args.text}: no such file")
    require_directory(args.out_dir)
    existing = [n for n in names if os.path.exists(os.path.join(args.out_dir, f"{n}.txt"))]
    if existing and not args.force:
        raise ProbingError(f"--out-dir {args.out_dir} already holds {', '.join(n + '.txt' for n in existing)}; "
                           "nothing was changed. Pass --force to replace them")
    try:
        with open(args.text, encoding="utf-8") as f:
            sentences = gen.read_sentences(f)
    except UnicodeDecodeError as exc:
        raise ProbingError(f"--text {args.text}: not valid UTF-8 ({exc.reason})") from None
    sizes = gen.split_sizes(args.scale)
    print(f"{len(sentences)} distinct sentences of {gen.MIN_LENGTH}-{gen.MAX_LENGTH} tokens in {args.text}; "
          f"tr/va/te {sizes['tr']}/{sizes['va']}/{sizes['te']}")
    built = {}
    for name in names:  # everything is built before anything is written
        options = {"skip": args.wc_skip, "count": args.wc_words} if name == "word_content" else {}
        built[name] = gen.GENERATORS[name](sentences, sizes, random.Random(f"{args.seed}:{name}"), **options)
    for name, splits in built.items():
        path = os.path.join(args.out_dir, f"{name}.txt")
        write_task(path, splits)
        print(summary(read_task(path)), f"-> {path}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return evaluate(args) if args.command == "evaluate" else generate(args)
    except (ProbingError, CheckError) as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2


def console_main() -> None:
    sys.exit(main())
