"""Evaluate a trained model: (average checkpoints,) ``fairseq-generate``, score.

``scripts/evaluate.sh CHECKPOINT_DIR DATA_BIN [options]`` runs this module. Steps:

1. pick the checkpoint -- ``--checkpoint NAME`` (default ``checkpoint_best.pt``), or the
   average of the last N epoch (or update) checkpoints with ``--avg-last N`` [``--avg-updates``];
2. ``fairseq-generate --user-dir <fairseq_localness>`` with the decoding settings (through :mod:`.timed_generate`,
   whose log also gives the generation loop's CPU time on a CPU);
3. score (see :mod:`.scoring`): tokenised BLEU (optionally case-insensitive / compound-split),
   sacreBLEU + chrF on detokenised output against ``--detok-ref``, paired bootstrap against
   ``--baseline-hyp``; write ``OUT/scores.json`` and print a summary.

Defaults for the BPE type, the target language, casing, compound splitting and the
references (tokenised and raw) come from ``DATA_BIN/prep-info.json`` when the data was made
by ``data-prep/``.

Files in ``OUT`` (default ``CHECKPOINT_DIR/eval-SUBSET-<checkpoint>``): ``generate-SUBSET.txt``
(fairseq-generate output) and ``.log``, ``hyp.tok.txt``, ``ref.tok.txt``, ``hyp.detok.txt``,
``averaged-lastN.pt`` when averaging, ``scores.json``; ``.evaluation``, written first, marks them as the
evaluation's own (files of those names in a directory without it are refused unless ``--force``).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
from typing import Any, Sequence

from ..cli import int_at_least, user_dir
from ..provenance import directory_problem, write_atomically
from . import scoring
from .average import average_checkpoints, last_checkpoints, save_checkpoint
from .outputs import HYP_DETOK, HYP_TOK, REF_TOK, SCORES, STARTED, generate_log, generate_output


class EvalError(Exception):
    """Bad input; the message says what to fix."""


def read_prep_info(data_bin: str) -> dict[str, Any]:
    path = os.path.join(data_bin, "prep-info.json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    for key in ("detok_ref", "tok_ref"):
        ref = info.get(key)
        if ref and not os.path.isabs(ref):
            info[key] = os.path.normpath(os.path.join(data_bin, ref))
    return info


def subset_reference(test_ref: str | None, subset: str, tgt: str) -> str | None:
    """The reference of ``subset`` beside data-prep's test reference: the test one itself, else
    ``SUBSET.TGT`` in the same directory (tok/ or raw/; e.g. newsdev2017 for the Zh-En tables
    that score the development set), when data-prep wrote it."""
    if not test_ref or subset == "test":
        return test_ref
    sibling = os.path.join(os.path.dirname(test_ref), f"{subset}.{tgt}")
    return sibling if os.path.isfile(sibling) else None


def language_pair(data_bin: str, subset: str, src: str | None, tgt: str | None) -> tuple[str, str]:
    """(source, target) language: given, or read from ``DATA_BIN/SUBSET.S-T.S.bin``."""
    pairs = sorted({os.path.basename(p).split(".")[1] for p in glob.glob(os.path.join(data_bin, f"{subset}.*-*.*.bin"))})
    if src and tgt:
        if f"{src}-{tgt}" not in pairs and f"{tgt}-{src}" not in pairs:
            raise EvalError(f"{data_bin} has no binarised '{subset}' split for {src}-{tgt} "
                            f"(found: {', '.join(pairs) or 'nothing'}); run fairseq-preprocess with --testpref")
        return src, tgt
    if len(pairs) != 1:
        raise EvalError(f"{data_bin}: cannot tell the language pair of split '{subset}' "
                        f"(found: {', '.join(pairs) or 'no {subset}.*.bin files'}); pass --source-lang/--target-lang")
    s, t = pairs[0].split("-")
    return src or s, tgt or t


def subset_size(data_bin: str, subset: str, src: str, tgt: str) -> int:
    """Number of sentences of the binarised split (read from its index)."""
    from fairseq.data import data_utils

    for pair in (f"{src}-{tgt}", f"{tgt}-{src}"):
        dataset = data_utils.load_indexed_dataset(os.path.join(data_bin, f"{subset}.{pair}.{tgt}"), None)
        if dataset is not None:
            return len(dataset)
    raise EvalError(f"{data_bin}: cannot read the '{subset}' split for {src}-{tgt}")


def parse_generate(path: str) -> tuple[list[str], list[str]]:
    """(hypotheses, references) of a ``fairseq-generate`` output, in sentence-id order."""
    hyps: dict[int, str] = {}
    refs: dict[int, str] = {}
    with open(path, encoding="utf-8", newline="\n") as f:
        for line in f:
            line = line.rstrip("\n")
            tag, _, rest = line.partition("-")
            if tag not in ("H", "T") or "\t" not in rest:
                continue
            sid, _, text = rest.partition("\t")
            if not sid.isdigit():
                continue
            if tag == "H":
                idx = int(sid)
                if idx not in hyps:  # with --nbest > 1 the first one is the best
                    hyps[idx] = text.partition("\t")[2]
            else:
                refs[int(sid)] = text
    if not hyps:
        raise EvalError(f"{path} holds no hypotheses (H- lines); see the log next to it")
    if sorted(hyps) != list(range(len(hyps))) or hyps.keys() != refs.keys():
        raise EvalError(f"{path} is incomplete: {len(hyps)} hypotheses, {len(refs)} references, "
                        f"ids {min(hyps)}..{max(hyps)}")
    return [hyps[i] for i in range(len(hyps))], [refs[i] for i in range(len(refs))]


def write_lines(path: str, lines: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(x + "\n" for x in lines))


def _generate_args(text: str) -> str:
    """One quoted string of fairseq-generate options, split as the command will split it."""
    try:
        shlex.split(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evaluate.sh", usage="bash scripts/evaluate.sh CHECKPOINT_DIR DATA_BIN [options]",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint_dir")
    p.add_argument("data_bin")
    g = p.add_argument_group("checkpoint")
    g.add_argument("--checkpoint", default="checkpoint_best.pt", help="file in CHECKPOINT_DIR [%(default)s]")
    g.add_argument("--avg-last", type=int, default=0, metavar="N", help="average the last N epoch checkpoints")
    g.add_argument("--avg-updates", action="store_true", help="with --avg-last: use update checkpoints")
    g = p.add_argument_group("decoding (fairseq-generate)")
    g.add_argument("--subset", default="test")
    g.add_argument("--source-lang")
    g.add_argument("--target-lang")
    g.add_argument("--beam", type=int_at_least(1), default=5)
    g.add_argument("--lenpen", type=float, default=1.0)
    g.add_argument("--max-len-a", type=float, default=0)
    g.add_argument("--max-len-b", type=int, default=200)
    g.add_argument("--remove-bpe", choices=["subword_nmt", "sentencepiece", "none"],
                   help="BPE to undo [from DATA_BIN/prep-info.json, else subword_nmt]")
    g.add_argument("--max-tokens", type=int_at_least(1), default=8000)
    g.add_argument("--batch-size", type=int_at_least(1))
    g.add_argument("--cpu", action="store_true")
    g.add_argument("--generate-args", type=_generate_args, default="",
                   help="more fairseq-generate options, one quoted string")
    g = p.add_argument_group("scoring")
    g.add_argument("--lowercase", action=argparse.BooleanOptionalAction,
                   help="case-insensitive BLEU/chrF [yes for lowercased data-prep output]")
    g.add_argument("--compound-split", action=argparse.BooleanOptionalAction,
                   help="En-De compound splitting for tokenised BLEU [yes for prepare-wmt14en2de.sh output]")
    g.add_argument("--ref", help="tokenised references [DATA_BIN/../tok/test.TGT when present, else "
                                 "fairseq-generate's T- lines, where words outside the vocabulary are <<unk>>]")
    g.add_argument("--detok-ref", help="raw references for sacreBLEU/chrF [DATA_BIN/../raw/test.TGT when present]")
    g.add_argument("--no-sacrebleu", action="store_true", help="tokenised BLEU only")
    g.add_argument("--sacrebleu-tokenize", type=scoring.tokenizer_argument,
                   help="sacreBLEU tokenizer [13a; zh for Chinese, ja-mecab for Japanese]")
    g.add_argument("--baseline-hyp", help="baseline for paired bootstrap: its tokenised hypotheses, "
                                          "or its evaluation directory (then sacreBLEU is tested too)")
    g.add_argument("--bootstrap-samples", type=int_at_least(0), default=1000,
                   help="paired bootstrap resamples of the test against --baseline-hyp [1000]")
    g = p.add_argument_group("output")
    g.add_argument("--out", help="output directory [CHECKPOINT_DIR/eval-SUBSET-<checkpoint>]")
    g.add_argument("--force", action="store_true", help="overwrite an earlier evaluation in OUT")
    return p


def option_error(options: Sequence[str]) -> str | None:
    """What evaluate.sh would say of OPTIONS (the options after CHECKPOINT_DIR DATA_BIN), or None: a command that
    decodes after hours of training (the comparison, reproduce.sh) checks its decoding options before it trains."""
    parser = build_parser()

    def refuse(message: str):
        raise EvalError(message)

    parser.error = refuse  # type: ignore[method-assign]  (argparse exits; the caller names its own flag)
    try:
        given = parser.parse_args(["CHECKPOINT_DIR", "DATA_BIN", *options])
    except EvalError as err:
        return str(err)
    for flag, path in (("--ref", given.ref), ("--detok-ref", None if given.no_sacrebleu else given.detok_ref)):
        if path and not os.path.isfile(path):  # evaluate.sh reads it only once the training is over
            return f"{flag} {path}: no such file (a relative path is read from the directory the command runs in)"
    return None


def resolve_checkpoint(a: argparse.Namespace, out: str) -> tuple[str, list[str]]:
    """(checkpoint to decode with, checkpoints it was averaged from)."""
    if a.avg_last:
        paths = last_checkpoints(a.checkpoint_dir, a.avg_last, a.avg_updates)
        if len(paths) == 1:
            return paths[0], paths
        averaged = os.path.join(out, f"averaged-last{a.avg_last}.pt")
        print(f"averaging {', '.join(os.path.basename(x) for x in paths)}", file=sys.stderr)
        save_checkpoint(average_checkpoints(paths), averaged)
        return averaged, paths
    path = os.path.join(a.checkpoint_dir, a.checkpoint)
    if not os.path.isfile(path):
        have = sorted(os.path.basename(x) for x in glob.glob(os.path.join(a.checkpoint_dir, "*.pt")))
        raise EvalError(f"{path} does not exist (checkpoints there: {', '.join(have) or 'none'}); "
                        "pick one with --checkpoint NAME or average with --avg-last N")
    return path, []


#: fairseq-generate, timed by the CPU clock too. With -P and :func:`package_first_env`, the decoder imports this very
#: package, the one --user-dir names, not another checkout in the directory the command runs in (fairseq refuses a
#: --user-dir other than the package of that name it imported)
GENERATE = [sys.executable, "-P", "-m", "fairseq_localness.evaluation.timed_generate"]


def package_first_env() -> dict[str, str]:
    """The environment with the directory that holds this package first on PYTHONPATH (see :data:`GENERATE`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(user_dir()), env.get("PYTHONPATH")) if p)
    return env


def run_generate(a: argparse.Namespace, checkpoint: str, src: str, tgt: str, remove_bpe: str,
                 out_txt: str) -> list[str]:
    cmd = [*GENERATE, a.data_bin, "--user-dir", user_dir(),
           "--path", checkpoint, "--gen-subset", a.subset, "--source-lang", src, "--target-lang", tgt,
           "--beam", str(a.beam), "--lenpen", str(a.lenpen), "--max-len-a", str(a.max_len_a),
           "--max-len-b", str(a.max_len_b), "--max-tokens", str(a.max_tokens),
           # ve-fairseq's batch_by_size drops a last batch whose size is not a multiple of this
           # (default 8): without it up to 7 test sentences would silently go untranslated
           "--required-batch-size-multiple", "1"]
    if a.batch_size:
        cmd += ["--batch-size", str(a.batch_size)]
    if remove_bpe != "none":
        cmd += ["--remove-bpe", remove_bpe]
    if a.cpu:
        cmd.append("--cpu")
    cmd += shlex.split(a.generate_args)
    log = os.path.splitext(out_txt)[0] + ".log"
    print("running: " + shlex.join(cmd), file=sys.stderr)
    with open(out_txt, "w", encoding="utf-8") as fout, open(log, "w", encoding="utf-8") as ferr:
        rc = subprocess.run(cmd, stdout=fout, stderr=ferr, env=package_first_env()).returncode
    if rc != 0:
        with open(log, encoding="utf-8", errors="replace") as f:
            tail = "".join(f.readlines()[-15:])
        raise EvalError(f"fairseq-generate failed (exit {rc}); end of {log}:\n{tail}")
    return cmd


def evaluate(a: argparse.Namespace) -> dict[str, Any]:
    for path, what in ((a.checkpoint_dir, "checkpoint directory"), (a.data_bin, "data-bin directory")):
        if os.path.exists(path) and not os.path.isdir(path):
            raise EvalError(f"{what} {path} is a file: give the directory that holds it")
        if not os.path.isdir(path):
            raise EvalError(f"{what} {path} does not exist")
    if not glob.glob(os.path.join(a.data_bin, "dict.*.txt")):
        raise EvalError(f"{a.data_bin} has no dict.*.txt: not a fairseq-preprocess output directory")
    info = read_prep_info(a.data_bin)
    src, tgt = language_pair(a.data_bin, a.subset, a.source_lang or info.get("src"), a.target_lang or info.get("tgt"))
    lowercase = info.get("lowercased", False) if a.lowercase is None else a.lowercase
    compound = info.get("compound_split", False) if a.compound_split is None else a.compound_split
    remove_bpe = a.remove_bpe or info.get("bpe", "subword_nmt")
    detok_ref = None if a.no_sacrebleu else (a.detok_ref or subset_reference(info.get("detok_ref"), a.subset, tgt))
    tok_ref = a.ref or subset_reference(info.get("tok_ref"), a.subset, tgt)
    for path, flag in ((tok_ref, "--ref"), (detok_ref, "--detok-ref")):
        if path and not os.path.isfile(path):
            raise EvalError(f"{flag} {path}: no such file")
    base_tok = base_detok = None
    if a.baseline_hyp:
        if a.bootstrap_samples == 0:
            raise EvalError(scoring.NO_RESAMPLES)
        base_tok, base_detok = scoring.baseline_files(a.baseline_hyp)
    n = subset_size(a.data_bin, a.subset, src, tgt)
    texts: dict[str, list[str] | None] = {}  # the files' lines, each checked against the split size
    for key, path in (("detok_ref", detok_ref), ("tok_ref", tok_ref), ("base_tok", base_tok),
                      ("base_detok", base_detok if detok_ref else None)):
        texts[key] = scoring.read_lines(path) if path else None
        if texts[key] is not None and len(texts[key]) != n:
            raise EvalError(f"{path} has {len(texts[key])} lines but the '{a.subset}' split has {n} sentences")

    tag = f"avg{a.avg_last}{'u' if a.avg_updates else ''}" if a.avg_last else os.path.splitext(a.checkpoint)[0]
    out = a.out or os.path.join(a.checkpoint_dir, f"eval-{a.subset}-{tag}")
    if os.path.exists(os.path.join(out, SCORES)) and not a.force:
        raise EvalError(f"{out} already holds an evaluation ({SCORES}); pass --force to redo it, "
                        "or choose another --out")
    # files of the names this evaluation writes, in a directory no evaluation started (no STARTED mark), are someone
    # else's: refused. An evaluation of ours that stopped before its scores.json is redone in place.
    ours = [SCORES, generate_output(a.subset), generate_log(a.subset), HYP_TOK, REF_TOK, HYP_DETOK]
    ours += [f"averaged-last{a.avg_last}.pt"] if a.avg_last else []
    problem = directory_problem(out, "--out")
    if problem:
        raise EvalError(problem)
    foreign = [name for name in ours if os.path.exists(os.path.join(out, name))]
    if foreign and not os.path.exists(os.path.join(out, STARTED)) and not a.force:
        raise EvalError(f"{os.path.join(out, foreign[0])} exists and no evaluation wrote it; pass --force to replace "
                        "it, or choose another --out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, STARTED), "w", encoding="utf-8") as f:
        f.write("fairseq_localness.evaluation.evaluate writes the evaluation files of this directory\n")
    checkpoint, averaged = resolve_checkpoint(a, out)
    gen_txt = os.path.join(out, generate_output(a.subset))
    cmd = run_generate(a, checkpoint, src, tgt, remove_bpe, gen_txt)
    hyps, refs = parse_generate(gen_txt)
    if len(hyps) != n:
        raise EvalError(f"{gen_txt} has {len(hyps)} hypotheses for {n} sentences")
    refs = texts["tok_ref"] or refs
    write_lines(os.path.join(out, HYP_TOK), hyps)
    write_lines(os.path.join(out, REF_TOK), refs)
    hyp_detok = None
    if texts["detok_ref"] is not None:
        from localness_prep.tokenize import make_detokenizer

        detok = make_detokenizer(tgt)
        hyp_detok = [detok(h) for h in hyps]
        write_lines(os.path.join(out, HYP_DETOK), hyp_detok)
    scores = scoring.score_all(hyps, refs, lowercase=lowercase, compound=compound, hyp_detok=hyp_detok,
                               ref_detok=texts["detok_ref"], lang=tgt, sacrebleu_tokenize=a.sacrebleu_tokenize,
                               baseline_tok=texts["base_tok"], baseline_detok=texts["base_detok"],
                               bootstrap_samples=a.bootstrap_samples)
    scores = {"checkpoint": os.path.abspath(checkpoint), "averaged": [os.path.abspath(p) for p in averaged],
              "data_bin": os.path.abspath(a.data_bin), "subset": a.subset, "source_lang": src,
              "target_lang": tgt, "tok_ref": os.path.abspath(tok_ref) if tok_ref else "fairseq-generate T- lines",
              "detok_ref": detok_ref and os.path.abspath(detok_ref),
              "baseline_hyp": a.baseline_hyp and os.path.abspath(a.baseline_hyp),
              "generate": {"beam": a.beam, "lenpen": a.lenpen, "max_len_a": a.max_len_a, "max_len_b": a.max_len_b,
                           "remove_bpe": remove_bpe, "command": shlex.join(cmd)},
              **scores, "out": os.path.abspath(out)}
    # written whole or not at all: a scores.json is what marks an evaluation (and a comparison's run) finished
    write_atomically(os.path.join(out, SCORES), json.dumps(scores, indent=1, ensure_ascii=False))
    return scores


def main(argv: Sequence[str] | None = None) -> None:
    a = build_parser().parse_args(argv)
    if a.avg_last < 0:
        sys.exit("ERROR: --avg-last must be positive")
    try:
        scores = evaluate(a)
    except (EvalError, OSError, ValueError) as e:
        sys.exit(f"ERROR: {e}")
    what = scores["checkpoint"]
    if scores["averaged"]:
        what = "average of " + ", ".join(os.path.basename(p) for p in scores["averaged"])
    print(f"{scores['subset']} ({scores['sentences']} sentences, {scores['source_lang']}->{scores['target_lang']}), "
          f"{what}, beam {a.beam}, lenpen {a.lenpen}")
    print(scoring.summary(scores))
    print(f"scores: {os.path.join(scores['out'], 'scores.json')}")


if __name__ == "__main__":
    main()
