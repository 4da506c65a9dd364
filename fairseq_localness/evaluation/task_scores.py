"""Score a trained classifier (accuracy), language model (perplexity), translation encoder (probing) or summarizer.

``scripts/score_task.sh CHECKPOINT_DIR DATA_BIN --task classification|language_modeling|probing|summarization
[options]`` runs this module; ``scripts/reproduce.sh`` calls it for the rows of Nguyen et al. (2020) Tables 5
and 6, Xu et al. (2019) Tables 3 and 4 and Fan et al. (2021) Table 2. Like ``scripts/evaluate.sh`` for
translation it writes ``OUT/scores.json``, keyed by the metric (``{"accuracy": {"score": 82.13, ...}}``,
``{"ppl": {"score": 44.0, ...}}``), so that the paper tables read every task the same way.

- **classification**: the checkpoint's own ``sentence_prediction`` task and criterion over every
  sentence of the split (nothing skipped: a sentence longer than the model takes is an error,
  not a silent drop), summing the criterion's ``ncorrect`` and ``nsentences``. The accuracy is
  exact: ``fairseq-validate`` logs the same quantity rounded to one decimal
  (``sentence_prediction.reduce_metrics``), the papers print two.
- **language_modeling**: ``fairseq-eval-lm`` on the split with the stated sample break mode,
  tokens per sample and context window; its log line ``Loss (base 2): L, Perplexity: P`` is read
  back (P = 2 ** L, L the mean base-2 loss per scored token, ``</s>`` included).
- **probing**: ``fairseq-localness-probe evaluate`` (:mod:`fairseq_localness.probing`, docs/probing.md) on
  the frozen encoder of a translation checkpoint with SentEval's probing files; its ``results.json``
  becomes ``{"probing_accuracy": {"SeLn": ..., ..., "surf": ..., "sync": ..., "semc": ...}}`` in
  percent, named as Xu et al. (2019) Tables 3-4 name them.
- **summarization**: ``fairseq-generate`` with Fan et al. (2021)'s decoding settings for ``--dataset`` and
  files2rouge's ROUGE-1/2/L F1 (:mod:`fairseq_localness.summarization.evaluation`), written as
  ``{"rouge": {"score": R-1, "rouge1": ..., "rouge2": ..., "rougeL": ..., "rouge_avg": ...}}`` (x 100).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..paths import USER_DIR
from ..provenance import directory_problem, write_atomically
from .outputs import SCORES

#: the scores.json entry of each task
TASK_METRIC = {"classification": "accuracy", "language_modeling": "ppl", "probing": "probing_accuracy",
               "summarization": "rouge"}
TASKS = tuple(TASK_METRIC)
#: SentEval's probing files -> Xu et al. (2019) Table 4's column names; Conneau et al. (2018)'s groups -> Table 3's
PROBING_COLUMNS = {"sentence_length": "SeLn", "word_content": "WC", "tree_depth": "TDep", "top_constituents": "ToCo",
                   "bigram_shift": "BShif", "past_present": "Tense", "subj_number": "SubN", "obj_number": "ObjN",
                   "odd_man_out": "SoMo", "coordination_inversion": "CoIn"}
PROBING_GROUPS = {"surface": "surf", "syntactic": "sync", "semantic": "semc"}
EVAL_LM_RESULT = re.compile(r"Loss \(base 2\): (?P<loss>[0-9.]+), Perplexity: (?P<ppl>[0-9.]+|inf)")


class ScoreError(Exception):
    """Bad input; the message says what to fix."""


def accuracy_record(correct: int, total: int) -> Dict[str, float]:
    """The ``accuracy`` entry of scores.json: percent of correctly classified sentences, exact."""
    if total <= 0:
        raise ScoreError("no sentence was scored: the split is empty")
    if not 0 <= correct <= total:
        raise ScoreError(f"{correct} correct out of {total} sentences is impossible")
    return {"score": 100.0 * correct / total, "correct": int(correct), "total": int(total)}


def parse_eval_lm(log: str) -> Dict[str, float]:
    """The ``ppl`` entry of scores.json from fairseq-eval-lm's output (its last result line).

    eval-lm prints the mean base-2 loss to 4 decimals and 2 ** loss to 2; the two must agree to that
    rounding, so that a line from some other run pasted into the log cannot be read as this one."""
    matches = list(EVAL_LM_RESULT.finditer(log))
    if not matches:
        raise ScoreError("fairseq-eval-lm printed no 'Loss (base 2): ..., Perplexity: ...' line")
    loss, ppl = float(matches[-1].group("loss")), float(matches[-1].group("ppl"))
    bound = 2 ** (loss + 5e-5) + 5e-3
    if not 2 ** (loss - 5e-5) - 5e-3 <= ppl <= bound:
        raise ScoreError(f"fairseq-eval-lm printed perplexity {ppl} for base-2 loss {loss} (2 ** loss = {2 ** loss:.4f})")
    return {"score": ppl, "loss_base2": loss}


def probing_record(results: Dict) -> Dict[str, float]:
    """The ``probing_accuracy`` entry of scores.json from the probe's results.json (accuracies as fractions):
    percent per task and per group, under Xu et al. (2019)'s names; ``score`` is the surface group's mean
    (Table 3's first column), or the first task's where the groups were not all probed."""
    tasks = results.get("tasks") or {}
    unknown = sorted(set(tasks) - set(PROBING_COLUMNS))
    if not tasks or unknown:
        raise ScoreError(f"results.json holds no SentEval probing task{': unknown ' + ', '.join(unknown) if unknown else ''}")
    record = {PROBING_COLUMNS[name]: 100.0 * float(task["test_accuracy"]) for name, task in tasks.items()}
    record.update({PROBING_GROUPS[g]: 100.0 * float(v) for g, v in (results.get("group_averages") or {}).items()})
    first = next(column for name, column in PROBING_COLUMNS.items() if name in tasks)
    return {"score": record.get("surf", record[first]), **record}


def probing_accuracy(checkpoint: Path, data_bin: Path, subset: str, tasks_dir: Optional[Path], prep_dir: Optional[Path],
                     out: Path, cpu: bool = False) -> Dict[str, float]:
    """Probe the checkpoint's frozen encoder (``fairseq-localness-probe evaluate``, in this process) and read its
    results back."""
    if subset != "test":
        raise ScoreError(f"--subset {subset}: the probes report accuracy on SentEval's test partition (te) only")
    if tasks_dir is None or prep_dir is None:
        raise ScoreError("--task probing needs --probing-tasks (the SentEval probing files) and --prep-dir (the "
                         "data-prep output the encoder was trained on: its BPE model and casing)")
    import torch

    from ..probing.cli import main as probe_main  # torch and the probes: loaded only for this task

    device = "cuda" if torch.cuda.is_available() and not cpu else "cpu"
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--tasks", str(tasks_dir), "--prep-dir", str(prep_dir),
            "--data", str(data_bin), "--out-dir", str(out / "probing"), "--force", "--device", device]
    print("+ fairseq-localness-probe " + " ".join(argv), flush=True)
    if probe_main(argv) != 0:
        raise ScoreError("fairseq-localness-probe evaluate failed (its error is above)")
    return probing_record(json.loads((out / "probing" / "results.json").read_text(encoding="utf-8")))


def classification_accuracy(checkpoint: Path, data_bin: Path, subset: str, max_tokens: int = 4096,
                            cpu: bool = False) -> Dict[str, float]:
    """Exact accuracy (%) of a sentence_prediction checkpoint on ``subset`` of ``data_bin``."""
    import torch
    from fairseq import checkpoint_utils, utils

    import fairseq_localness  # noqa: F401  (registers the models)

    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)],
                                                                        arg_overrides={"data": str(data_bin)})
    model = models[0]
    use_cuda = torch.cuda.is_available() and not cpu
    if use_cuda:
        model.cuda()
    model.eval()
    try:
        task.load_dataset(subset, combine=False, epoch=1)
    except FileNotFoundError as err:
        raise ScoreError(f"{data_bin} has no split {subset!r} ({err})") from err
    criterion = task.build_criterion(_cfg.criterion)
    batches = task.get_batch_iterator(
        dataset=task.dataset(subset), max_tokens=max_tokens,
        max_positions=utils.resolve_max_positions(task.max_positions(), model.max_positions()),
        ignore_invalid_inputs=False, seed=1, num_workers=0,
    ).next_epoch_itr(shuffle=False)
    correct = total = 0
    with torch.no_grad():
        for sample in batches:
            if not sample:
                continue
            if use_cuda:
                sample = utils.move_to_cuda(sample)
            _loss, _size, logging = task.valid_step(sample, model, criterion)
            if "ncorrect" not in logging:
                raise ScoreError(f"{checkpoint} is not a classifier: its criterion reports no accuracy")
            correct += int(logging["ncorrect"])
            total += int(logging["nsentences"])
    return accuracy_record(correct, total)


def eval_lm_command(checkpoint: Path, data_bin: Path, subset: str, tokens_per_sample: int, sample_break_mode: str,
                    context_window: int, max_tokens: int = 4096, cpu: bool = False) -> List[str]:
    return [sys.executable, "-m", "fairseq_cli.eval_lm", str(data_bin), "--user-dir", str(USER_DIR),
            "--path", str(checkpoint), "--gen-subset", subset, "--tokens-per-sample", str(tokens_per_sample),
            "--sample-break-mode", sample_break_mode, "--context-window", str(context_window),
            "--max-tokens", str(max_tokens), "--num-workers", "0"] + (["--cpu"] if cpu else [])


def language_model_perplexity(checkpoint: Path, data_bin: Path, subset: str, out: Path, tokens_per_sample: int,
                              sample_break_mode: str, context_window: int, max_tokens: int = 4096,
                              cpu: bool = False) -> Dict[str, float]:
    command = eval_lm_command(checkpoint, data_bin, subset, tokens_per_sample, sample_break_mode, context_window,
                              max_tokens, cpu)
    print("+ " + " ".join(command), flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    (out / f"eval-lm-{subset}.log").write_text(done.stdout, encoding="utf-8")
    if done.returncode != 0:
        raise ScoreError(f"fairseq-eval-lm failed (exit {done.returncode}); see {out / f'eval-lm-{subset}.log'}")
    record = parse_eval_lm(done.stdout)
    record.update(tokens_per_sample=tokens_per_sample, sample_break_mode=sample_break_mode,
                  context_window=context_window)
    return record


def summarization_rouge(checkpoint: Path, args: argparse.Namespace, out: Path) -> Dict[str, object]:
    """Decode with Fan et al.'s settings for ``--dataset``, score with files2rouge's ROUGE (docs/summarization.md)."""
    from ..evaluation.evaluate import EvalError
    from ..summarization.evaluation import decode_and_score

    if args.dataset is None:
        raise ScoreError("--task summarization needs --dataset cnndm or gigaword (whose decoding settings to use)")
    try:
        return decode_and_score(checkpoint, args.data_bin, args.subset, args.dataset, args.variant, out,
                                args.max_tokens, args.cpu, args.scorer)
    except (EvalError, ValueError, RuntimeError) as err:  # RuntimeError: ROUGE-1.5.5.pl failed or is missing
        raise ScoreError(str(err)) from err


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scripts/score_task.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint_dir", type=Path, help="the run's checkpoint directory")
    parser.add_argument("data_bin", type=Path, help="the binarized data the model was trained on")
    parser.add_argument("--task", required=True, choices=TASKS, help="what the model is")
    parser.add_argument("--subset", default="test", help="split to score [test]")
    parser.add_argument("--checkpoint", default="checkpoint_best.pt", help="file in CHECKPOINT_DIR [checkpoint_best.pt]")
    parser.add_argument("--out", type=Path, help="where scores.json goes [CHECKPOINT_DIR/eval-SUBSET]")
    parser.add_argument("--max-tokens", type=int, default=4096, help="tokens per scoring batch [4096]")
    parser.add_argument("--cpu", action="store_true", help="score on the CPU even when a GPU is there")
    parser.add_argument("--force", action="store_true",
                        help="score again into an --out that holds an earlier scores.json (its files are replaced)")
    lm = parser.add_argument_group("language_modeling (fairseq-eval-lm)")
    lm.add_argument("--tokens-per-sample", type=int, default=512, help="longest sample [512]")
    lm.add_argument("--sample-break-mode", default="eos", choices=("none", "complete", "complete_doc", "eos"),
                    help="how the text is cut into samples [eos: one sentence each]")
    lm.add_argument("--context-window", type=int, default=0,
                    help="tokens of the previous sample each sample sees without scoring them [0]")
    probe = parser.add_argument_group("probing (fairseq-localness-probe evaluate)")
    probe.add_argument("--probing-tasks", type=Path, help="directory of SentEval probing files "
                       "(data-prep/prepare-senteval-probing.sh --out)")
    probe.add_argument("--prep-dir", type=Path, help="the data-prep --out directory of the encoder's training data")
    from ..summarization.evaluation import SCORERS
    from ..summarization.settings import DATASETS, VARIANTS

    summarize = parser.add_argument_group("summarization (fairseq-generate, then files2rouge's ROUGE)")
    summarize.add_argument("--dataset", choices=DATASETS, help="whose decoding settings (Fan et al. 2021, Sec. 3.1.2)")
    summarize.add_argument("--variant", choices=VARIANTS, default="released",
                           help="released: the authors' test scripts; paper: Sec. 3.1.2 read literally [released]")
    summarize.add_argument("--scorer", choices=SCORERS, default="auto",
                           help="ROUGE-1.5.5.pl (perl), the pure-Python equal (python), or perl where it runs [auto]")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    checkpoint = args.checkpoint_dir / args.checkpoint
    if not checkpoint.is_file():
        parser.error(f"no checkpoint {checkpoint} (train first, or name another with --checkpoint)")
    if not args.data_bin.is_dir():
        parser.error(f"DATA_BIN {args.data_bin} is not a directory")
    out = args.out or args.checkpoint_dir / f"eval-{args.subset}"
    if (out / SCORES).exists() and not args.force:  # before any scoring: an earlier result is never replaced unasked
        parser.error(f"{out} already holds scores ({out / SCORES}); pass --force to score again and replace them, "
                     "or give another --out")
    problem = directory_problem(out, "--out")
    if problem:
        parser.error(problem)
    out.mkdir(parents=True, exist_ok=True)
    try:
        if args.task == "classification":
            record = classification_accuracy(checkpoint, args.data_bin, args.subset, args.max_tokens, args.cpu)
        elif args.task == "probing":
            record = probing_accuracy(checkpoint, args.data_bin, args.subset, args.probing_tasks, args.prep_dir, out,
                                      args.cpu)
        elif args.task == "summarization":
            record = summarization_rouge(checkpoint, args, out)
        else:
            record = language_model_perplexity(checkpoint, args.data_bin, args.subset, out, args.tokens_per_sample,
                                               args.sample_break_mode, args.context_window, args.max_tokens, args.cpu)
    except ScoreError as err:
        print(f"score_task.sh: error: {err}", file=sys.stderr)
        return 2
    metric = TASK_METRIC[args.task]
    scores = {metric: record, "task": args.task, "subset": args.subset, "checkpoint": str(checkpoint)}
    # written last, and whole: reproduce treats a row whose scores.json exists as finished
    write_atomically(out / SCORES, json.dumps(scores, indent=1) + "\n")
    print(f"{args.subset}: {metric} {scores[metric]['score']:.2f} -> {out / SCORES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
