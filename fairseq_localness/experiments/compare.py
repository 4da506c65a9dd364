"""One controlled comparison of locality architectures: one recipe, several seeds, significance.

    fairseq-localness-compare CORPUS [--archs families|papers|A,B,...] [--seeds 3] [--norm pre[,post]]
                              [--work runs/compare] [--data-root runs/data] [--jobs 1] [--gpus N] [--fp16]
    fairseq-localness-compare --data DATA_BIN --recipe BENCHMARK_OR_YAML --archs A,B ... (your own corpus)

Every (architecture, norm placement, seed) trains with **one** recipe -- the corpus's
``configs/benchmark/compare_*.yaml``, or ``--recipe`` -- through the launcher that ``scripts/train.sh`` and
``reproduce.sh`` use (:class:`.launch.Launch`), with ``common.seed`` and the norm placement as the only
overrides; the checkpoint with the lowest validation loss is decoded on the test split by
``scripts/evaluate.sh``'s module. Results (``WORK/LABEL/``):

* ``NORM/ARCH/seedS/`` per run: ``checkpoints/`` (with ``hydra_train.log``), ``eval-test/scores.json``,
  ``result.json`` (what the table reads);
* ``runs.csv`` / ``runs.json``: every finished run; ``table.md`` / ``table.json``: mean ± sd over seeds,
  parameters, speed ratios and significance against the baseline; ``figure.png``: BLEU against
  training-speed ratio with error bars.

A run whose ``eval-test/scores.json`` exists is finished and never retrained; an interrupted run resumes
from its ``checkpoint_last.pt``. Significance: paired bootstrap resampling (Koehn 2004; sacreBLEU's) of
the **seed-pooled** test outputs: the hypotheses of seeds 1..n of an architecture against those of the
same seeds of the baseline, the references repeated n times, so every resample draws sentences of every
seed. Library logic only; ``scripts/compare.sh`` and the ``fairseq-localness-compare`` entry point call
:func:`main`.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import fcntl
import io
import json
import math
import os
import re
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..cli import int_at_least
from ..evaluation.outputs import (GENERATION_CPU, HYP_DETOK, HYP_TOK, REF_TOK, SCORES, TRANSLATED, generate_log,
                                  generate_output)
from ..paths import CONFIG_DIR, REPO, SCRIPTS_DIR, CheckoutError, require_checkout
from ..provenance import checkout_of, directory_problem, machine_description, portable_paths, write_atomically
from . import run_analyses
from .launch import (LaunchError, Launch, arch_configs, benchmark_values, benchmarks, max_tokens_override, model_keys,
                     precision_overrides, tokens_per_update)
from .plans import RowPlan
from .processes import CPU_ALLOCATOR_ENV, allocator_line, cpu_training_env, stream
from .rundir import RunDirBusy, read_config_record, restore_cut_short_checkpoint, training_lock
from .runlog import VALID_LINE, placement, resume_deviations, stats, validation_points
from .tables import Row

COMPARE_FILE = CONFIG_DIR / "compare.yaml"
NORMS = ("pre", "post")
EVAL_DIR = "eval-test"
GENERATED, GENERATE_LOG = generate_output("test"), generate_log("test")  # fairseq-generate's, in EVAL_DIR
# fairseq's "simple" log format ("| valid | epoch 001 | ...") and fairseq-hydra-train's ("[valid][INFO] - epoch 001 | ...")
_INNER = re.compile(r"train_inner.*? epoch (\d+):.*?num_updates=(\d+)")
_STOP = re.compile(r"early stop since valid performance hasn't improved for last (\d+) runs")
# fairseq's stop at the learning-rate floor (optimization.stop_min_lr: the plateau schedule's last halving)
_FLOOR = re.compile(r"current learning rate \(([\d.e-]+)\) is smaller than or equal to minimum learning rate "
                    r"\(--stop-min-lr=([\d.e-]+)\)")


class CompareError(RuntimeError):
    """Bad input; printed without a traceback, exit code 2."""


# --- the grid -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """One training of the grid."""

    arch: str
    norm: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.arch} ({self.norm}-norm, seed {self.seed})"


@dataclass
class Grid:
    """Everything a comparison trains, where, and how it is scored."""

    label: str                      # WORK/<label>/
    recipe: str                     # a benchmark of configs/benchmark/, or a name in recipe_dir
    data_bin: Path
    archs: List[str]
    seeds: List[int]
    norms: List[str]
    baseline: str
    work: Path
    evaluate_flags: List[str] = field(default_factory=list)
    train_overrides: List[str] = field(default_factory=list)
    recipe_file: Optional[Path] = None  # --recipe FILE.yaml (its copy in WORK/<label>/recipe/ is what trains)
    gpus: int = 0
    fp16: bool = False
    prepare: Optional[str] = None  # the corpus's data-prep command, for the error when its data-bin is missing
    length_buckets: List[int] = field(default_factory=list)  # upper edges of the source-length buckets of buckets.md

    @property
    def root(self) -> Path:
        return self.work / self.label

    def runs(self) -> List[RunSpec]:
        """Seed-major order, baseline first: the first seed of every row finishes before any second seed."""
        archs = [self.baseline] + [a for a in self.archs if a != self.baseline]
        return [RunSpec(arch, norm, seed) for seed in self.seeds for norm in self.norms for arch in archs]

    def run_dir(self, spec: RunSpec) -> Path:
        return self.root / spec.norm / spec.arch / f"seed{spec.seed}"

    def scores_path(self, spec: RunSpec) -> Path:
        return self.run_dir(spec) / EVAL_DIR / SCORES

    def finished(self, spec: RunSpec) -> bool:
        return self.scores_path(spec).is_file()


def load_compare_config(path: Path = COMPARE_FILE) -> Dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def shipped_corpora() -> str:
    """The corpora of configs/compare.yaml, comma-separated (for the help and the errors); outside a checkout,
    where the command stops with its own message, a pointer to the file."""
    if not COMPARE_FILE.is_file():
        return "listed in configs/compare.yaml"
    return ", ".join(load_compare_config()["corpora"])


def resolve_archs(text: str, groups: Dict[str, List[str]]) -> List[str]:
    """``families``/``papers``/... (a group of configs/compare.yaml) or a comma-separated list, in order."""
    archs: List[str] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        for arch in groups.get(item, [item]):
            if arch not in archs:
                archs.append(arch)
    known = set(arch_configs())
    unknown = [a for a in archs if a not in known]
    if unknown:
        raise CompareError(f"--archs: unknown architecture(s) {', '.join(unknown)}; give a group "
                           f"({', '.join(groups)}) or names of configs/arch/ (bare names such as transformer_dman)")
    if not archs:
        raise CompareError("--archs is empty")
    return archs


def parse_seeds(text: str) -> List[int]:
    """``3`` -> seeds 1, 2, 3; ``1,5,9`` -> those seeds."""
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CompareError(f"--seeds {text!r}: give a count (3) or a list of seeds (1,2,3)") from None
    if len(seeds) == 1 and "," not in text:
        seeds = list(range(1, seeds[0] + 1))
    if not seeds or any(s < 1 for s in seeds) or len(set(seeds)) != len(seeds):
        raise CompareError(f"--seeds {text!r}: seeds must be distinct positive integers")
    return seeds


def parse_edges(text: str) -> List[int]:
    try:
        edges = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CompareError(f"--length-buckets {text!r}: give increasing word counts, e.g. 10,20,30") from None
    if not edges or edges != sorted(set(edges)) or edges[0] < 1:
        raise CompareError(f"--length-buckets {text!r}: give increasing positive word counts, e.g. 10,20,30")
    return edges


def norm_overrides(arch: str, norm: str) -> List[str]:
    """The norm placement of every architecture alike: fairseq's --encoder/decoder-normalize-before, and for
    the MAN layers (whose models take --man-norm) their own switch, which sets the same two flags."""
    pre = "true" if norm == "pre" else "false"
    overrides = [f"model.encoder_normalize_before={pre}", f"model.decoder_normalize_before={pre}"]
    import fairseq_localness  # noqa: F401  (registers the architectures whose options model_keys lists)

    if "model.man_norm" in model_keys(arch):
        overrides.append(f"model.man_norm={norm}")
    return overrides


def launch_of(grid: Grid, spec: RunSpec) -> Launch:
    """One run's training: the label's recipe with the run's seed and norm placement (not yet validated)."""
    recipe_dir = grid.root / "recipe" if grid.recipe_file else None
    return Launch(benchmark=grid.recipe, arch=spec.arch, data=str(grid.data_bin),
                  save_dir=str(grid.run_dir(spec) / "checkpoints"), gpus=grid.gpus, cpu_procs=1,
                  max_tokens=per_gpu_tokens(grid, recipe_dir),
                  overrides=[f"common.seed={spec.seed}", *norm_overrides(spec.arch, spec.norm),
                             *(["common.fp16=true"] if grid.fp16 else []), *precision_overrides(grid.train_overrides)],
                  recipe_dir=recipe_dir,
                  accept_cut_short=True)  # run_one restores a checkpoint_last.pt cut short by a killed grid


def per_gpu_tokens(grid: Grid, recipe_dir: Optional[Path]) -> Optional[int]:
    """With ``--gpus N`` (N > 1), each GPU's share of the recipe's tokens per update, so that N GPUs train on the
    recipe's batch, not N times it. None on the CPU, on one GPU, and where ``--train-args`` sets
    ``dataset.max_tokens`` (the user's per-device batch, which the launcher then splits the same way)."""
    if grid.gpus <= 1 or max_tokens_override(grid.train_overrides) is not None:
        return None
    per_update = tokens_per_update(benchmark_values(grid.recipe, recipe_dir))
    if per_update % grid.gpus:
        raise LaunchError(f"--gpus {grid.gpus}: the recipe's {per_update} tokens per update do not split evenly "
                          f"over {grid.gpus} GPUs; use a number of GPUs that divides {per_update}")
    return per_update // grid.gpus


def train_argv(grid: Grid, spec: RunSpec) -> List[str]:
    """scripts/train.sh's arguments for one run (what its dry run prints)."""
    return launch_of(grid, spec).train_sh_args()


def evaluate_argv(grid: Grid, spec: RunSpec) -> List[str]:
    run_dir = grid.run_dir(spec)
    # --force: EVAL_DIR is the grid's own, and a run is evaluated only while it has no scores.json, so what an
    # interrupted evaluation left there (before evaluations marked their directories) is replaced
    return [str(run_dir / "checkpoints"), str(grid.data_bin), "--checkpoint", "checkpoint_best.pt",
            *grid.evaluate_flags, *([] if grid.gpus else ["--cpu"]), "--out", str(run_dir / EVAL_DIR), "--force"]


def effective_flags(flags: Sequence[str]) -> List[str]:
    """The decoding flags as evaluate.sh's parser reads them, for the table's caption: an option given twice (the
    corpus's default, then ``--eval-args``) keeps only its last value, as argparse does, so the caption names
    the beam that decoded, not both."""
    groups: List[Tuple[str, List[str]]] = []
    i = 0
    while i < len(flags):
        token = flags[i]
        if not token.startswith("--"):  # a value without an option: keep it where it is
            groups.append((f"#{i}", [token]))
            i += 1
        elif "=" not in token and i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            groups.append((token, [token, flags[i + 1]]))
            i += 2
        else:
            groups.append((token.split("=", 1)[0], [token]))
            i += 1
    last = {name: k for k, (name, _) in enumerate(groups)}
    return [token for k, (name, tokens) in enumerate(groups) if last[name] == k for token in tokens]


def has_test_split(data_bin: Path) -> bool:
    return any(data_bin.glob("dict.*.txt")) and any(data_bin.glob("test.*.idx"))


def validate(grid: Grid) -> None:
    """Everything that can be checked before training: data, the recipe's keys, every architecture's flags and
    method options (:meth:`.launch.Launch.validate` composes each run's config as fairseq-hydra-train would), and
    the run directories (the guard of :mod:`.rundir`)."""
    if not grid.data_bin.is_dir():
        hint = f"; prepare it with: {grid.prepare}" if grid.prepare else " (prepare it with data-prep/, see docs/compare.md)"
        raise CompareError(f"--data {grid.data_bin}: no such directory{hint}")
    if not has_test_split(grid.data_bin):
        raise CompareError(f"--data {grid.data_bin}: not a fairseq-preprocess output with a test split "
                           "(dict.*.txt and test.*.idx)")
    if grid.baseline not in grid.archs:
        raise CompareError(f"--baseline {grid.baseline} is not one of --archs ({', '.join(grid.archs)})")
    from ..evaluation.evaluate import option_error  # (imports torch: only where runs are about to train)

    problem = option_error(grid.evaluate_flags)
    if problem:  # else every run would train for hours, then fail to decode
        raise CompareError(f"--eval-args: evaluate.sh refuses the decoding options "
                           f"{shlex.join(grid.evaluate_flags)}: {problem}")
    for spec in grid.runs():
        try:
            launch = launch_of(grid, spec)
            launch.validate()
            launch.check_data()  # a model that shares all embeddings needs a joined dictionary
            launch.plan()  # the batch split over --gpus, refused here rather than when the run starts
        except LaunchError as err:
            raise CompareError(f"recipe {grid.recipe} with {spec.arch}: {err}") from None


def reference_note(grid: Grid) -> Optional[str]:
    """What the table will lack, said before anything trains: with no raw test reference (neither
    ``prep-info.json``'s ``detok_ref``, written by data-prep/, nor ``--detok-ref`` in --eval-args), every run is
    scored by tokenized BLEU only, against fairseq-generate's ``T-`` lines unless ``tok_ref`` names a file."""
    flags = grid.evaluate_flags
    if "--detok-ref" in flags or any(f.startswith("--detok-ref=") for f in flags) or "--no-sacrebleu" in flags:
        return None
    try:
        if data_bin_detok_ref(grid.data_bin):
            return None
    except (OSError, ValueError) as err:
        raise CompareError(f"--data {grid.data_bin}: prep-info.json does not parse ({err})") from None
    return (f"note: --data {grid.data_bin} has no raw test reference (no detok_ref in its prep-info.json), and "
            "--eval-args give no --detok-ref: the table scores tokenized BLEU only, with no sacreBLEU or chrF. "
            "Give --eval-args '--detok-ref RAW_TEST_TARGET_FILE' (docs/compare.md, your own corpus)")


# --- running ------------------------------------------------------------------------------------------------


class Progress:
    """Progress lines of the grid: which run, epoch and update, validation loss, and an ETA.

    The ETA averages the runs this process trained from their first update. A run resumed from its checkpoint
    (a killed grid restarted) took only its last part here, so counting it would promise the remaining runs in a
    fraction of their time; it counts as done, without a duration.
    """

    def __init__(self, total: int, done: int, jobs: int):
        self.total, self.done, self.jobs = total, done, jobs
        self.durations: List[float] = []
        self.lock = threading.Lock()

    def say(self, text: str) -> None:
        with self.lock:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    def eta(self) -> str:
        remaining = self.total - self.done
        if remaining <= 0:
            return "no run left"
        if not self.durations:
            return f"{remaining} run(s) left, ETA after the first run trained from its start"
        seconds = sum(self.durations) / len(self.durations) * remaining / self.jobs
        return f"ETA for the {remaining} remaining run(s): {_duration(seconds)}"

    def finished(self, seconds: float, whole: bool = True) -> None:
        """One more run done; SECONDS enter the ETA only for a WHOLE run (trained from its first update)."""
        with self.lock:
            if whole:
                self.durations.append(seconds)
            self.done += 1


def _duration(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def read_json(path: Path) -> Any:
    """A JSON file the comparison wrote (scores.json, grid.json); one that does not parse (cut short by a crash of
    the machine, or edited) is named, with what to do, instead of ending the grid with a traceback."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        undo = ("its run is decoded again" if Path(path).name == SCORES else "the next call writes it again"
                if Path(path).name == "grid.json" else "")
        raise CompareError(f"{path} is not the JSON the comparison writes ({err}): cut short or edited. Move it "
                           f"away{f' ({undo})' if undo else ''} and run the command again") from None


def update_rate(first: Tuple[int, float], updates: int, now: float) -> Optional[float]:
    """Updates per second since ``first``, the (updates, time) of the run's first log line in this process; None
    at that line itself (a resumed run's first line can fall on a reporting step: it has no rate yet)."""
    first_updates, first_time = first
    if updates <= first_updates:
        return None
    return (updates - first_updates) / max(now - first_time, 1e-6)


def run_env(grid: Grid) -> Dict[str, str]:
    """A run's environment: on the CPU one core per run (--jobs runs share the machine) and the launcher's
    allocator settings."""
    return dict(os.environ) if grid.gpus else {**cpu_training_env(os.environ, one_thread=True), "MKL_NUM_THREADS": "1"}


def run_one(grid: Grid, spec: RunSpec, index: int, progress: Progress) -> Optional[str]:
    """Train (or resume) and evaluate one run, holding its directory's training lock; the failure text, or None.
    Another process that holds the lock (a second comparison of this label, train.sh) is waited for; a run it
    finished meanwhile (or since this process listed its runs to do) is counted, not trained again."""
    tag = f"[{index}/{progress.total}] {spec.name}"
    waited: List[str] = []

    def wait(holder: str) -> None:
        waited.append(holder)
        progress.say(f"{tag}: another process is training it ({holder}); waiting for it")

    with training_lock(grid.run_dir(spec) / "checkpoints", wait) as lock:
        # also without a wait: another process may have finished it after this one listed its runs to do, and
        # decoding it again would rewrite the outputs of a run that already counts as finished
        if grid.finished(spec):
            progress.finished(0, whole=False)
            progress.say(f"{tag}: finished by {'the other' if waited else 'another'} process, not retrained; "
                         f"{progress.eta()}")
            return None
        return train_and_evaluate(grid, spec, tag, progress, lock)


def train_and_evaluate(grid: Grid, spec: RunSpec, tag: str, progress: Progress, lock: int) -> Optional[str]:
    """:func:`run_one`'s work, under the run's lock (``lock``: its descriptor, held by the training process too)."""
    start = time.time()
    env = run_env(grid)
    run_dir = grid.run_dir(spec)
    trained = run_dir / "trained"
    whole = False  # trained here from its first update: its time is a whole run's, for the ETA
    cut_short = restore_cut_short(run_dir)
    if cut_short:  # its files are a published run's, in part: neither trained nor finished
        return cut_short
    if not trained.exists():
        try:
            launch = launch_of(grid, spec)
            launch.validate()
            commands = launch.commands(launch.plan())
        except LaunchError as err:
            return str(err)
        restored = restore_cut_short_checkpoint(run_dir / "checkpoints")
        if restored:
            progress.say(f"{tag}: {restored}")
        resumed = (run_dir / "checkpoints" / "checkpoint_last.pt").exists()
        whole = not resumed and not launch.already_trained
        progress.say(f"{tag}: " + (f"its checkpoint is trained ({launch.trained_because})" if launch.already_trained
                                   else "resuming from checkpoint_last.pt" if resumed else "training"))
    if not trained.exists() and not launch.already_trained:
        state: Dict[str, Any] = {"first": None}  # (updates, time) of the first log line: a resumed run starts late

        def on_line(line: str) -> None:
            match = _INNER.search(line)
            if match:
                updates = int(match.group(2))
                if state["first"] is None:
                    state["first"] = (updates, time.time())
                rate = update_rate(state["first"], updates, time.time())
                if updates % 200 == 0 and rate is not None:
                    progress.say(f"{tag}: epoch {match.group(1)}, update {updates} ({rate:.2f} updates/s)")
            match = VALID_LINE.search(line)
            if match:
                best = re.search(r"best_loss ([\d.]+)", line)
                progress.say(f"{tag}: epoch {match.group(1)} done, update {match.group(3)}, valid loss "
                             f"{match.group(2)}" + (f" (best {best.group(1)})" if best else ""))
            match = _STOP.search(line)
            if match:
                progress.say(f"{tag}: early stop, no better validation loss for {match.group(1)} epochs")
            match = _FLOOR.search(line)
            if match:
                progress.say(f"{tag}: stop, the learning rate ({match.group(1)}) is at its floor "
                             f"(stop_min_lr {match.group(2)})")

        if not grid.gpus:  # the training's speed depends on them: its log says which it ran with
            run_dir.mkdir(parents=True, exist_ok=True)
            with open(run_dir / "train.log", "a", encoding="utf-8") as log:
                log.write(f"\n# {allocator_line(env)}")
        code = stream(commands[0], run_dir / "train.log", env, on_line, pass_fds=(lock,))
        if code != 0:
            return f"training failed (exit {code}; see {run_dir / 'train.log'}); rerun to resume"
    if not trained.exists():
        write_atomically(trained, datetime.datetime.now().isoformat(timespec="seconds") + "\n")
    progress.say(f"{tag}: decoding the test set")
    evaluate = [sys.executable, "-m", "fairseq_localness.evaluation.evaluate", *evaluate_argv(grid, spec)]
    code = stream(evaluate, run_dir / "evaluate.log", env)
    if code != 0:
        return f"evaluation failed (exit {code}; see {run_dir / 'evaluate.log'}); rerun to retry"
    try:
        result = collect_run(grid, spec)
    except CompareError as err:
        return str(err)
    analyse_run(grid, spec, tag, progress, env)
    progress.finished(time.time() - start, whole)
    bleu = result.get("sacrebleu") if result.get("sacrebleu") is not None else result.get("tokenized_bleu")
    spent = _duration(time.time() - start)
    # a run that began in an earlier call spent only its last part here: never read as the run's duration
    timing = f"done in {spent}" if whole else f"done, {spent} in this call (it began in an earlier one)"
    progress.say(f"{tag}: {timing}, BLEU {bleu}, {result.get('epochs')} epochs; {progress.eta()}")
    return None


def analyse_run(grid: Grid, spec: RunSpec, tag: str, progress: Progress, env: Dict[str, str]) -> None:
    """The analyses of a run's trained attention (:mod:`.run_analyses`), once, while its best checkpoint is here.

    A failed analysis leaves the run finished (its scores stand) and is tried again by the next call."""
    run_dir = grid.run_dir(spec)
    checkpoint = run_dir / "checkpoints" / "checkpoint_best.pt"
    if run_analyses.analysed(run_dir) or not checkpoint.is_file():
        return
    progress.say(f"{tag}: analysing its attention (docs/compare.md, \"Per-run analyses\")")
    command = [sys.executable, "-m", "fairseq_localness.experiments.run_analyses", str(checkpoint), str(grid.data_bin),
               str(run_dir / run_analyses.ANALYSES_DIR), "--label", spec.arch]
    code = stream(command, run_dir / "analyses.log", env)
    if code != 0:
        progress.say(f"{tag}: the analyses failed (exit {code}; see {run_dir / 'analyses.log'}); the next call retries")


def last_generate_line(eval_dir: Path, pattern: "re.Pattern[str]") -> Optional[Tuple[str, ...]]:
    """The groups of the last line of fairseq-generate's log (else its output) that ``pattern`` matches."""
    for name in (GENERATE_LOG, GENERATED):
        path = eval_dir / name
        matches = pattern.findall(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else []
        if matches:
            return matches[-1]
    return None


def decoding_speed(eval_dir: Path) -> Optional[float]:
    """Target tokens per second of fairseq-generate's closing line (in its log, else its output)."""
    found = last_generate_line(eval_dir, TRANSLATED)
    return float(found[3]) if found else None


def decoding_cpu_speed(eval_dir: Path) -> Optional[float]:
    """Target tokens per CPU second of the generation loop, from the line ``timed_generate`` logs after a decoding
    on the CPU; None where the log has none (a GPU decoding, or one from before that line was logged)."""
    found = last_generate_line(eval_dir, GENERATION_CPU)
    if not found or float(found[0]) <= 0:
        return None
    return round(int(found[1].replace(",", "")) / float(found[0]), 2)


def training_epochs(log: Path) -> Tuple[Optional[int], Optional[float], Optional[int]]:
    """(epochs trained, best validation loss, update of the best) from a run's hydra_train.log."""
    points = validation_points(log)
    if not points:
        return None, None, None
    best = min(points, key=lambda p: p[2])
    return max(p[0] for p in points), best[2], best[1]


def collect_run(grid: Grid, spec: RunSpec) -> Dict[str, Any]:
    """One finished run as a flat record (written to ``result.json`` beside it)."""
    run_dir = grid.run_dir(spec)
    scores = read_json(grid.scores_path(spec))
    run = stats(run_dir / "checkpoints")
    epochs, best_loss, best_update = training_epochs(run_dir / "checkpoints" / "hydra_train.log")
    record = {
        "corpus": grid.label, "arch": spec.arch, "norm": spec.norm, "seed": spec.seed,
        "sacrebleu": (scores.get("sacrebleu") or {}).get("score"),
        "tokenized_bleu": (scores.get("tokenized_bleu") or {}).get("score"),
        "chrf": (scores.get("chrf") or {}).get("score"),
        # hypothesis over reference length, of the BLEU the table's difference uses: below 1 its brevity penalty
        # lowers the score, so a difference in BLEU can be a difference in length
        "length_ratio": (scores.get("sacrebleu") or scores.get("tokenized_bleu") or {}).get("ratio"),
        "params": run["params"], "train_wps": run["train_wps"], "updates": run["updates"],
        "epochs": epochs, "best_valid_loss": best_loss, "best_update": best_update,
        "decode_tokens_per_s": decoding_speed(run_dir / EVAL_DIR),
        "decode_tokens_per_cpu_s": decoding_cpu_speed(run_dir / EVAL_DIR),
        "placement": placement(run_dir / "checkpoints" / "hydra_train.log"),
        "sacrebleu_signature": (scores.get("sacrebleu") or {}).get("signature"),
        # relative to WORK/LABEL: the record reads the same in the published copy, wherever the checkout lies
        "eval_dir": str((run_dir / EVAL_DIR).relative_to(grid.root)),
    }
    write_atomically(run_dir / "result.json", json.dumps(record, indent=1) + "\n")  # publish may be copying it
    return record


def run_grid(grid: Grid, jobs: int, after_each=None) -> Dict[str, str]:
    """Train and evaluate every unfinished run, ``jobs`` at a time; the failures by run name. ``after_each``
    is called after every finished run (the table is rewritten then, so that it is never older than a run)."""
    specs = grid.runs()
    todo = [(i + 1, s) for i, s in enumerate(specs) if not grid.finished(s)]
    done = len(specs) - len(todo)
    progress = Progress(len(specs), done, jobs)
    progress.say(f"{grid.label}: {len(specs)} runs ({len(grid.archs)} architectures x {len(grid.norms)} norm "
                 f"placement(s) x {len(grid.seeds)} seed(s)), {done} finished, {len(todo)} to run, {jobs} at a time")
    for index, spec in enumerate(specs, 1):
        if grid.finished(spec):
            progress.say(f"[{index}/{len(specs)}] {spec.name}: finished earlier, not retrained")
            try:  # under its lock: a second process starting now would run the same analyses beside this one
                with training_lock(grid.run_dir(spec) / "checkpoints"):
                    analyse_run(grid, spec, f"[{index}/{len(specs)}] {spec.name}", progress, run_env(grid))
            except RunDirBusy:
                pass  # the process that holds it analyses it (run_one does, under the same lock)
    failures: Dict[str, str] = {}

    def work(item: Tuple[int, RunSpec]) -> None:
        index, spec = item
        error = run_one(grid, spec, index, progress)
        if error:
            failures[spec.name] = error
            progress.say(f"[{index}/{len(specs)}] {spec.name}: FAILED: {error}")
        elif after_each is not None:
            with progress.lock:
                try:
                    after_each()
                except CompareError as err:  # the table waits for the end; the other runs go on training
                    progress.say(f"[{index}/{len(specs)}] {spec.name}: the table was not rewritten: {err}")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(work, todo))
    return failures


# --- the table ----------------------------------------------------------------------------------------------


def mean_sd(values: Sequence[float]) -> Tuple[Optional[float], Optional[float]]:
    """Mean and sample standard deviation (n - 1); sd is None for fewer than two values."""
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def run_outputs(eval_dirs: Sequence[Path], name: str) -> List[List[str]]:
    """The lines of ``name`` (hyp.tok.txt, ref.tok.txt, ...) of each evaluation."""
    from ..evaluation.scoring import read_lines

    return [read_lines(str(Path(eval_dir) / name)) for eval_dir in eval_dirs]


def scoring_settings(eval_dirs: Sequence[Path], lowercase: bool) -> Dict[str, Any]:
    """How the runs' BLEU columns were scored, from their scores.json: the tokenized BLEU's lowercasing and
    compound splitting, sacreBLEU's lowercasing and tokenizer (from its signature), so that the significance test
    scores exactly what the columns show. Every run that records a setting must agree; ``lowercase`` serves where
    none records it (the data-bin's setting)."""
    settings: Dict[str, Any] = {}
    for eval_dir in eval_dirs:
        path = Path(eval_dir) / SCORES
        scores = read_json(path)
        tokenized = scores.get("tokenized_bleu") or {}
        signature = dict(part.split(":", 1) for part in
                         ((scores.get("sacrebleu") or {}).get("signature") or "").split("|") if ":" in part)
        mine = {"lowercase": tokenized.get("lowercase"), "compound_split": tokenized.get("compound_split"),
                "sacrebleu_lowercase": signature["case"] == "lc" if "case" in signature else None,
                "sacrebleu_tokenize": _tokenizer_of_signature(signature.get("tok")),
                "target_lang": scores.get("target_lang")}
        for key, value in mine.items():
            if value is None:  # not recorded by this evaluation
                continue
            if key in settings and settings[key][0] != value:
                raise CompareError(f"{settings[key][1]} and {path} were scored differently ({key}: "
                                   f"{settings[key][0]} vs {value}): evaluate every run of the comparison alike "
                                   "(the same --eval-args)")
            settings.setdefault(key, (value, path))
    found = {key: value for key, (value, _) in settings.items()}
    found.setdefault("lowercase", lowercase)
    found.setdefault("sacrebleu_lowercase", found["lowercase"])
    return {"compound_split": False, "sacrebleu_tokenize": None, "target_lang": "en", **found}


def _tokenizer_of_signature(tok: Optional[str]) -> Optional[str]:
    """sacreBLEU's tokenizer name from its signature's ``tok:`` field (which may append a version:
    ``ja-mecab-0.996-IPA``); None where there is none."""
    from sacrebleu.metrics.bleu import _TOKENIZERS

    known = [name for name in _TOKENIZERS if tok and (tok == name or tok.startswith(name + "-"))]
    return max(known, key=len) if known else None


def pooled_significance(system_dirs: Sequence[Path], baseline_dirs: Sequence[Path], lowercase: bool,
                        samples: int = 1000, detok_ref: Optional[str] = None) -> Dict[str, Dict[str, Any]]:
    """Paired bootstrap of the seed-pooled outputs (:func:`~fairseq_localness.evaluation.scoring.
    paired_bootstrap_over_sentences`): system seed k paired with baseline seed k; the resampling unit is the test
    sentence, with every seed's output of it. Tokenised BLEU always; sacreBLEU when both have detokenised output.
    Both scored as the runs' scores.json record (:func:`scoring_settings`; ``lowercase`` only where they do not).
    ``detok_ref``: the detokenised test reference to use when the one the runs' scores.json names is not on this
    machine (runs restored from a published grid): the grid's data-bin's."""
    from ..evaluation.scoring import (BLEU, compound_split, paired_bootstrap_over_sentences, sacrebleu_tokenizer,
                                      tokenized_bleu_metric)

    settings = scoring_settings([*system_dirs, *baseline_dirs], lowercase)
    prep = compound_split if settings["compound_split"] else (lambda line: line)

    def tokenized(eval_dirs: Sequence[Path], name: str) -> List[List[str]]:
        return [[prep(line) for line in lines] for lines in run_outputs(eval_dirs, name)]

    result = {"tokenized_bleu": paired_bootstrap_over_sentences(
        tokenized_bleu_metric(settings["lowercase"]), tokenized(system_dirs, HYP_TOK),
        tokenized(baseline_dirs, HYP_TOK), tokenized(system_dirs, REF_TOK), "tokenized BLEU",
        samples).as_dict()}
    detok = [Path(d) / HYP_DETOK for d in [*system_dirs, *baseline_dirs]]
    if all(p.is_file() for p in detok):
        scores = [read_json(Path(d) / SCORES) for d in system_dirs]
        named = scores[0].get("detok_ref")
        ref_file = named if named and Path(named).is_file() else detok_ref
        if named and not (ref_file and Path(ref_file).is_file()):
            raise CompareError(f"{Path(system_dirs[0]) / SCORES} names the detokenised reference {named}, "
                               "which is not here, and the data-bin's prep-info.json names none: prepare the "
                               "corpus again (its data-prep script) or rerun the evaluation")
        if ref_file:
            from ..evaluation.scoring import read_lines

            detok_refs = [read_lines(ref_file)] * len(system_dirs)
            tokenize = settings["sacrebleu_tokenize"] or sacrebleu_tokenizer(settings["target_lang"])
            result["sacrebleu"] = paired_bootstrap_over_sentences(
                BLEU(tokenize=tokenize, lowercase=settings["sacrebleu_lowercase"]),
                run_outputs(system_dirs, HYP_DETOK), run_outputs(baseline_dirs, HYP_DETOK), detok_refs,
                "sacreBLEU", samples).as_dict()
    return result


def summarize(records: List[Dict[str, Any]], baseline: str, lowercase: bool, samples: int = 1000,
              root: Path = Path("."), detok_ref: Optional[str] = None) -> List[Dict[str, Any]]:
    """One row per (norm, architecture): means and sds over seeds, ratios to the baseline of the same norm
    placement and the pooled significance test against it, both on the seeds both have. ``root``: the directory the
    records' ``eval_dir`` is relative to (WORK/LABEL); ``detok_ref``: see :func:`pooled_significance`."""
    rows: List[Dict[str, Any]] = []
    keys = sorted({(r["norm"], r["arch"]) for r in records}, key=lambda k: (NORMS.index(k[0]) if k[0] in NORMS else 9,
                                                                            k[1] != baseline))
    order = {a: i for i, a in enumerate(dict.fromkeys(r["arch"] for r in records))}
    keys.sort(key=lambda k: (NORMS.index(k[0]) if k[0] in NORMS else 9, k[1] != baseline, order[k[1]]))
    by_key = {k: sorted([r for r in records if (r["norm"], r["arch"]) == k], key=lambda r: r["seed"]) for k in keys}
    for norm, arch in keys:
        runs = by_key[(norm, arch)]
        base_runs = by_key.get((norm, baseline), [])
        row: Dict[str, Any] = {"norm": norm, "arch": arch, "seeds": [r["seed"] for r in runs]}
        for metric in ("sacrebleu", "tokenized_bleu", "chrf", "epochs", "best_valid_loss"):
            mean, sd = mean_sd([r[metric] for r in runs])
            # rounded once, to the decimals the table prints (epochs: one; 1.1547 stored as 1.15 would print 1.1)
            digits = EPOCH_DIGITS if metric == "epochs" else 2
            row[metric] = _round(mean, digits)
            row[f"{metric}_sd"] = _round(sd, digits)
        row["length_ratio"] = _round(mean_sd([r.get("length_ratio") for r in runs])[0], 3)
        row["params"] = runs[0]["params"]
        # the same for every seed of a row unless --train-args moved a method between calls: then every one shows
        row["placement"] = " / ".join(dict.fromkeys(r.get("placement") or "no training log" for r in runs))
        base_by_seed = {r["seed"]: r for r in base_runs}
        common = [r for r in runs if r["seed"] in base_by_seed]
        row["decode_speed_clock"] = decoding_clock(common, base_by_seed)
        decode_speed = "decode_tokens_per_cpu_s" if row["decode_speed_clock"] == "cpu" else "decode_tokens_per_s"
        for speed, ratio in (("train_wps", "train_speed_ratio"), (decode_speed, "decode_speed_ratio")):
            # each run against the baseline's run of its seed, which shared its conditions (the grid's later seeds
            # may train under other settings than its first: a mean over all seeds would mix them), then the mean.
            # Rounded once, to the two decimals the tables print.
            timed = [r for r in common if r.get(speed) and base_by_seed[r["seed"]].get(speed)]
            mean, _ = mean_sd([r[speed] / base_by_seed[r["seed"]][speed] for r in timed])
            row[ratio] = _round(mean)
            if timed and len(timed) < len(common):  # a run without its speed (an unreadable log): said, not hidden
                row[f"{ratio}_seeds"] = [r["seed"] for r in timed]
        if arch != baseline and common:
            row["significance"] = pooled_significance([root / r["eval_dir"] for r in common],
                                                      [root / base_by_seed[r["seed"]]["eval_dir"] for r in common],
                                                      lowercase, samples, detok_ref)
            row["significance_seeds"] = [r["seed"] for r in common]
            # each seed against the baseline's run of that seed: the spread over seeds, which the test over
            # sentences leaves out (a pooled difference can hold while the seeds disagree in sign)
            row["seed_deltas"] = {metric: [_round(r[metric] - base_by_seed[r["seed"]][metric]) for r in common]
                                  for metric in ("sacrebleu", "tokenized_bleu")
                                  if all(r[metric] is not None and base_by_seed[r["seed"]][metric] is not None
                                         for r in common)}
        rows.append(row)
    return rows


def decoding_clock(runs: Sequence[Dict[str, Any]], base_by_seed: Dict[int, Dict[str, Any]]) -> str:
    """'cpu' where every run timed by the wall clock, and the baseline's run of its seed, also has its decoding's CPU
    time: a pause or a busy core does not move that clock. Else 'wall', for every pair of the row alike (a mean of
    ratios on two clocks would mix what they measure)."""
    def both(run: Dict[str, Any], key: str) -> bool:
        return bool(run.get(key) and base_by_seed[run["seed"]].get(key))

    timed = [r for r in runs if both(r, "decode_tokens_per_s")]
    return "cpu" if timed and all(both(r, "decode_tokens_per_cpu_s") for r in timed) else "wall"


#: decimals of the epochs column's mean and sd
EPOCH_DIGITS = 1


def _round(value: Optional[float], digits: int = 2) -> Optional[float]:
    return None if value is None else round(value, digits)


def _pm(mean: Optional[float], sd: Optional[float], digits: int = 2) -> str:
    if mean is None:
        return "n/a"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}" if sd is not None else f"{mean:.{digits}f}"


def markdown_table(rows: List[Dict[str, Any]], baseline: str) -> str:
    """The comparison table (one row per norm placement and architecture)."""
    baseline_seeds = {row["norm"]: row["seeds"] for row in rows if row["arch"] == baseline}
    on_cpu_clock = any(row.get("decode_speed_clock") == "cpu" for row in rows)
    lines = ["| architecture | norm | seeds | sacreBLEU | tokenized BLEU | chrF | length ratio | "
             "Δ sacreBLEU vs baseline (p) | Δ per seed | parameters | training speed | decoding speed | epochs |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        sig = (row.get("significance") or {})
        test = sig.get("sacrebleu") or sig.get("tokenized_bleu")
        notes = [f"p = {test['p_value']:.3f}"] if test else []
        if test and not sig.get("sacrebleu"):
            notes.append("tokenized BLEU")  # these runs have no detokenised output
        seeds = seeds_note(row, baseline_seeds.get(row["norm"])) if test else ""
        if seeds:
            notes.append(seeds)
        delta = "baseline" if row["arch"] == baseline else (
            f"{test['delta']:+.2f} {test['mark']}".rstrip() + f" ({', '.join(notes)})" if test else "n/a")
        per_seed = seed_deltas(row)
        lines.append(
            f"| `{row['arch']}` | {row['norm']} | {len(row['seeds'])} | {_pm(row['sacrebleu'], row['sacrebleu_sd'])} | "
            f"{_pm(row['tokenized_bleu'], row['tokenized_bleu_sd'])} | {_pm(row['chrf'], row['chrf_sd'])} | "
            f"{_ratio(row.get('length_ratio'), 3)} | {delta} | "
            f"{', '.join(f'{d:+.2f}' for d in per_seed) if per_seed else '-'} | "
            f"{_params(row['params'])} | {speed_cell(row, 'train_speed_ratio')} | "
            f"{speed_cell(row, 'decode_speed_ratio')}{wall_clock_mark(row, on_cpu_clock, baseline)} | "
            f"{_pm(row['epochs'], row['epochs_sd'], digits=EPOCH_DIGITS)} |")
    return "\n".join(lines) + "\n"


def seed_deltas(row: Dict[str, Any]) -> List[float]:
    """Each seed's BLEU minus the baseline's of the same seed, of the metric the row's difference is tested on
    (sacreBLEU, else tokenized BLEU); [] for the baseline, or a table written before rows carried them."""
    significance, deltas = row.get("significance") or {}, row.get("seed_deltas") or {}
    metric = "sacrebleu" if significance.get("sacrebleu") else "tokenized_bleu"
    return deltas.get(metric) or []


def seeds_note(row: Dict[str, Any], baseline_seeds: Optional[Sequence[int]]) -> str:
    """``seeds 1,2`` (``seed 1``): the seeds of a row's comparison with the baseline (difference, p, speed ratios)
    where they are not every seed of both rows, else empty (``baseline_seeds`` None: the baseline's row is not at
    hand)."""
    paired = row.get("significance_seeds")
    if paired == row["seeds"] and (baseline_seeds is None or list(baseline_seeds) == paired):
        return ""
    return ("seed " if len(paired or []) == 1 else "seeds ") + ",".join(map(str, paired or []))


def placement_table(rows: List[Dict[str, Any]]) -> str:
    """Where each architecture's methods sit in the recipe's model, one line per architecture (as its runs'
    training logs record it). A paper's default placement was chosen for its own depth: the Gaussian's and
    CSAN's 'encoder layers 1-3' are the lower half of a 6-layer encoder, and all of a 3-layer one."""
    lines = ["| architecture | methods: attention, 1-based layers |", "|---|---|"]
    for arch in dict.fromkeys(row["arch"] for row in rows):
        where = " / ".join(dict.fromkeys(row["placement"] for row in rows if row["arch"] == arch))  # pre, post
        lines.append(f"| `{arch}` | {where} |")
    return "\n".join(lines) + "\n"


def _params(value: Optional[int]) -> str:
    return "n/a" if value is None else f"{value / 1e6:.2f}M"


def decoding_speed_note(rows: Sequence[Dict[str, Any]]) -> str:
    """What the table's decoding speeds count: the wall clock's target tokens/s, or, where runs decoded on the CPU
    logged their CPU time, target tokens per CPU second (:mod:`..evaluation.timed_generate`)."""
    wall = "decoding target tokens/s (fairseq-generate)"
    if not any(row.get("decode_speed_clock") == "cpu" for row in rows):
        return wall
    return ("decoding target tokens per CPU second of fairseq-generate's generation loop (its log; that clock does "
            "not advance while the process waits for a core or is stopped, though it still counts the slowing by "
            "the other processes' use of the shared caches and memory), or, in a cell marked 'wall clock', "
            "target tokens per wall-clock second (fairseq-generate's closing line), where a run of the row or its "
            "baseline's run of the same seed decoded without that record,")


def wall_clock_mark(row: Dict[str, Any], on_cpu_clock: bool, baseline: str) -> str:
    """' (wall clock)' after a decoding-speed ratio timed by the wall clock in a table whose other ratios are
    timed by the CPU clock (:func:`decoding_clock`); nothing where the whole table reads one clock."""
    timed = row.get("decode_speed_ratio") is not None
    wall = on_cpu_clock and timed and row.get("decode_speed_clock") != "cpu"
    return " (wall clock)" if wall and row["arch"] != baseline else ""  # the baseline's 1.00 holds on either clock


def speed_cell(row: Dict[str, Any], ratio: str) -> str:
    """A speed ratio, with its seeds where a run of the row's comparison had no speed to enter it."""
    seeds = row.get(f"{ratio}_seeds")
    return _ratio(row.get(ratio)) + (f" (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))})"
                                     if seeds else "")


def _ratio(value: Optional[float], digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def norm_placements(grid: Grid, records: Sequence[Dict[str, Any]]) -> str:
    """The norm placements of the table's runs: ``pre-norm for every architecture`` where one placement covers
    them all, else the architectures of each (a grid's post-norm column adds a few rows). The grid's own
    placements where no run has finished."""
    archs: Dict[str, List[str]] = {}
    for record in records:
        archs.setdefault(record["norm"], [])
        if record["arch"] not in archs[record["norm"]]:
            archs[record["norm"]].append(record["arch"])
    if not archs:
        return ", ".join(f"{norm}-norm" for norm in grid.norms) + " for every architecture"
    every = {arch for names in archs.values() for arch in names}
    return "; ".join(f"{norm}-norm for " + ("every architecture" if set(archs[norm]) == every
                                             else ", ".join(f"`{arch}`" for arch in archs[norm]))
                     for norm in NORMS if norm in archs)


def recipe_summary(grid: Grid, records: Sequence[Dict[str, Any]] = ()) -> str:
    """The recipe every row shares, as the table prints it, with the norm placements of RECORDS' runs."""
    values = benchmark_values(grid.recipe, grid.root / "recipe" if grid.recipe_file else None)  # defaults merged
    model = values.get("model") or {}
    opt = values.get("optimization") or {}
    sched = values.get("lr_scheduler") or {}
    ckpt = values.get("checkpoint") or {}
    size = (f"{model.get('encoder_layers')}+{model.get('decoder_layers')} layers, {model.get('encoder_embed_dim')} dim, "
            f"{model.get('encoder_attention_heads')} heads, FFN {model.get('encoder_ffn_embed_dim')}, dropout "
            f"{model.get('dropout')}")
    schedule = f"{sched.get('_name')}, {sched.get('warmup_updates')} warm-up"
    if sched.get("lr_shrink") is not None:  # reduce_lr_on_plateau: the rate follows the validation loss
        threshold = float(sched.get("lr_threshold", 1e-4))  # fairseq's default: a relative improvement
        schedule += (f", lr x {sched.get('lr_shrink')} after {int(sched.get('lr_patience') or 0) + 1} epoch(s) "
                     f"without a validation-loss improvement of {threshold * 100:g}%")
    optimiser = (f"{(values.get('optimizer') or {}).get('_name')} lr {opt.get('lr')} ({schedule}), "
                 f"{(values.get('dataset') or {}).get('max_tokens')} tokens x update_freq {opt.get('update_freq')}")
    floor = opt.get("stop_min_lr")
    stop = (f"early stopping on validation loss, patience {ckpt.get('patience')} epochs"
            + (f", or once the learning rate is at most {floor}" if floor is not None and float(floor) > 0 else "")
            + f", at most {opt.get('max_epoch') or '-'} epochs / {opt.get('max_update') or '-'} updates")
    # --train-args change what trained, not the recipe's file: named as given, after the recipe they override
    overrides = f"; --train-args over it: `{shlex.join(grid.train_overrides)}`" if grid.train_overrides else ""
    return (f"recipe `{grid.recipe}`: {size}; {optimiser}; {stop}{overrides}; "
            f"norm placement: {norm_placements(grid, records)}")


#: the commands that trained under a label, each with the runs it plans, in the order they first ran: the table's
#: caption names every one that planned a finished run (a published grid grows over several commands: more seeds,
#: a post-norm column), not only the last
COMMANDS = "commands.json"


def read_commands(path: Path) -> List[Dict[str, Any]]:
    """The history of ``commands.json`` at PATH ([] where there is none)."""
    if not path.is_file():
        return []
    try:
        history = json.loads(path.read_text(encoding="utf-8"))
        if not all(isinstance(entry["command"], str) and all(len(run) == 3 for run in entry["runs"])
                   for entry in history):
            raise ValueError("an entry without its command or runs")
    except (ValueError, TypeError, KeyError) as err:
        raise CompareError(f"{path}: not the list of commands and their runs that the comparison writes ({err}); "
                           "move it away and run the command again") from err
    return history


def write_commands(path: Path, history: List[Dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(history, indent=1) + "\n")  # the label's history: never half of it


@contextlib.contextmanager
def label_files_lock(grid: Grid):
    """Hold WORK/LABEL's lock while its shared files (commands.json, the table and its copies) are rewritten: two
    comparisons of one label, each training other runs, take turns instead of interleaving their writes."""
    grid.root.mkdir(parents=True, exist_ok=True)
    with open(grid.root / ".files.lock", "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def record_command(grid: Grid, command: str) -> None:
    """Add COMMAND, with the runs its grid plans, to WORK/LABEL/commands.json (once per command)."""
    with label_files_lock(grid):
        _record_command(grid, command)


def _record_command(grid: Grid, command: str) -> None:
    path = grid.root / COMMANDS
    history = read_commands(path)
    runs = [[spec.arch, spec.norm, spec.seed] for spec in grid.runs()]
    for entry in history:
        if entry["command"] == command:
            entry["runs"] = runs
            break
    else:
        history.append({"command": command, "runs": runs})
    write_commands(path, history)


def table_commands(grid: Grid, records: Sequence[Dict[str, Any]], command: str) -> Tuple[List[str], int, int]:
    """The commands of the label's history that trained the finished runs, in the order they first ran: each
    one that planned a finished run no command named before it planned (a rerun elsewhere, or a subset, adds
    nothing). Also the runs the named commands plan, finished or not, and the finished runs that none of them
    planned (runs restored from a publication older than the history). COMMAND, this call's, where the history
    names none."""
    finished = {(record["arch"], record["norm"], record["seed"]) for record in records}
    named: List[str] = []
    planned: set = set()
    for entry in read_commands(grid.root / COMMANDS):
        runs = {tuple(run) for run in entry["runs"]}
        if (runs & finished) - planned:
            named.append(entry["command"])
            planned |= runs
    if not named:
        return [command], len({(s.arch, s.norm, s.seed) for s in grid.runs()} | finished), 0
    return named, len(planned | finished), len(finished - planned)


def merge_commands(published: Path, local: Path) -> None:
    """LOCAL's commands.json with the commands of PUBLISHED's that it lacks, published ones first."""
    theirs, mine = read_commands(published), read_commands(local)
    known = {entry["command"] for entry in mine}
    merged = [entry for entry in theirs if entry["command"] not in known] + mine
    if merged != mine:
        write_commands(local, merged)


def measured_dates(grid: Grid, records: List[Dict[str, Any]]) -> str:
    """When the runs were measured: the day each finished training (its ``trained`` marker), as one date or the
    first and the last; today where no run records one. A table rewritten later keeps its runs' dates."""
    days = set()
    for record in records:
        marker = grid.run_dir(RunSpec(record["arch"], record["norm"], record["seed"])) / "trained"
        stamp = marker.read_text(encoding="utf-8").strip()[:10] if marker.is_file() else ""
        if re.fullmatch(r"\d{4}-\d\d-\d\d", stamp):
            days.add(stamp)
    if not days:
        return datetime.date.today().isoformat()
    return min(days) if len(days) == 1 else f"{min(days)} to {max(days)}"


def _runs(count: int) -> str:
    """'1 run', '2 runs': the captions count a grid's finished runs, one while it starts."""
    return f"{count} run" if count == 1 else f"{count} runs"


def write_outputs(grid: Grid, records: List[Dict[str, Any]], rows: List[Dict[str, Any]], command: str,
                  machine: str, samples: int = 1000) -> str:
    """runs.csv/json, table.md/json and figure.png in WORK/LABEL; returns the markdown."""
    root = grid.root
    root.mkdir(parents=True, exist_ok=True)
    fields = list(records[0].keys()) if records else []
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    (root / "runs.csv").write_text(buffer.getvalue(), encoding="utf-8")
    (root / "runs.json").write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    date = measured_dates(grid, records)
    commands, planned, unrecorded = table_commands(grid, records, command)
    caption = (f"{grid.label}: {_runs(len(records))} finished (of the {planned} "
               f"{'its commands plan' if len(commands) > 1 else 'its command plans'}); measured {date} on {machine}; "
               f"{'commands' if len(commands) > 1 else 'command'}: " + "; ".join(f"`{c}`" for c in commands)
               + (f"; and {unrecorded} run(s) of a command not recorded" if unrecorded else ""))
    summary = recipe_summary(grid, records)
    notes = [
        f"Mean ± sample sd over seeds. {summary}. Checkpoint: lowest validation loss; test split "
        f"decoded with {shlex.join(effective_flags(grid.evaluate_flags)) or 'evaluate.sh defaults'}.",
        f"Δ: seed-pooled BLEU (every seed's test output scored as one corpus) minus that of `{grid.baseline}` with "
        "the same norm placement, on the seeds both have (named in the cell where one row has seeds the other "
        "lacks). It need not be the difference of the means: the pooled outputs share one brevity penalty, so seeds "
        "of different output lengths move it. Δ per seed: each seed's BLEU minus the baseline's of the same seed. "
        f"Mark and p from a paired bootstrap ({samples:,} resamples of the test sentences, each drawn sentence with "
        "every seed's output of it; sacreBLEU's p, one-sided in the direction of the difference; ⇑/⇓ p < 0.01, "
        "↑/↓ p < 0.05; "
        f"1/{samples + 1:,} is the smallest p that {samples:,} resamples can give{too_few_resamples(samples)}). "
        "The test resamples "
        "sentences, not seeds: the variation between seeds is not in p, and a mark whose seeds differ in sign is "
        "not a robust difference. No correction for the table's many tests: with no real difference, about one row "
        "in nine is marked by chance alone. sacreBLEU where the corpus has raw references, else tokenized BLEU. Length "
        "ratio: hypothesis over reference length, of that BLEU, mean over seeds; below 1, the brevity penalty "
        "lowers BLEU, and a difference in BLEU may be one of length.",
        "Speeds: training target tokens/s (fairseq's wps: each run's median epoch, weighted by updates) and "
        f"{decoding_speed_note(rows)} as ratios to the baseline's run of the same seed in the same "
        "grid, mean over the seeds both have (the seeds of Δ)"
        + (" (CPU runs: the ratios carry the noise of whatever else ran on the machine, the grid's other runs "
           "included; docs/benchmark.md measures speed on a quiet machine)." if not grid.gpus else "."),
    ]
    table = markdown_table(rows, grid.baseline)
    text = f"{caption}\n\n{table}\n" + "\n\n".join(notes) + "\n"
    if rows:
        text += ("\nWhere each architecture's methods sit in this recipe's model (each method's default placement, "
                 "as the runs' training logs record it; a default chosen for a 6-layer encoder, such as 'encoder "
                 "layers 1-3', covers every layer of a 3-layer one):\n\n" + placement_table(rows))
    (root / "table.md").write_text(text, encoding="utf-8")
    (root / "table.json").write_text(json.dumps({"caption": caption, "recipe": summary,
                                                 "baseline": grid.baseline, "rows": rows}, indent=1) + "\n",
                                     encoding="utf-8")
    if rows:
        plot(rows, grid.baseline, root / "figure.png", caption.split(";")[0])
    write_curves(grid, records)
    if records and grid.length_buckets:
        write_buckets(grid, records, grid.length_buckets, lowercased(grid.data_bin), samples)
    return text


PUBLISHED = ("table.md", "table.json", "runs.csv", "runs.json", "curves.csv", "figure.png", "curves.png",
             "buckets.md", "buckets.csv", "buckets.png", COMMANDS)


#: an evaluation's files that hold the test set's own text: the tokenised reference, and fairseq-generate's output
#: with the source (S-) and reference (T-) lines. Never published: a corpus's terms need not allow redistributing
#: it (Multi30k's captions come with Flickr30k's research terms). A published run keeps the source length of
#: every test sentence instead (SOURCE_LENGTHS, all that BLEU by length needs), and a restored run gets its
#: reference back from the prepared corpus (prep-info.json's tok_ref, the file the evaluation scored against).
TEST_TEXT_FILES = (f"{EVAL_DIR}/{REF_TOK}", f"{EVAL_DIR}/{GENERATED}")
SOURCE_LENGTHS = "source-lengths.txt"


def source_lengths(eval_dir: Path) -> List[int]:
    """Words of every test source as fairseq-generate printed it (after BPE removal): from its S- lines where
    the evaluation has them, else from the published :data:`SOURCE_LENGTHS`."""
    from ..analyses.bleu import read_translations

    generated = eval_dir / GENERATED
    if generated.is_file():
        return [len(line.split()) for line in read_translations(str(generated), "S")]
    path = eval_dir / SOURCE_LENGTHS
    if not path.is_file():
        raise CompareError(f"{eval_dir}: neither {GENERATED} nor {SOURCE_LENGTHS}: the source lengths of the "
                           "test set are lost; evaluate the run again")
    return [int(n) for n in path.read_text(encoding="utf-8").split()]


class EvaluationTexts:
    """The tokenised hypotheses and references and the source-length buckets of evaluation directories, each file
    read once: the BLEU per bucket of every run and the bucket significance tests share them. ``compound_split``:
    the lines split as the runs' tokenized BLEU was scored (their scores.json records it)."""

    def __init__(self, edges: Sequence[int], compound_split: bool = False):
        from ..analyses.bleu import buckets_of

        self.buckets = buckets_of(edges)
        self.compound_split = compound_split
        self._lines: Dict[Tuple[Path, str], List[str]] = {}
        self._members: Dict[Path, Dict[Any, List[int]]] = {}

    def lines(self, eval_dir: Path, name: str) -> List[str]:
        from ..evaluation.scoring import compound_split, read_lines

        if (eval_dir, name) not in self._lines:
            lines = read_lines(str(eval_dir / name))
            self._lines[eval_dir, name] = [compound_split(line) for line in lines] if self.compound_split else lines
        return self._lines[eval_dir, name]

    def members(self, eval_dir: Path) -> Dict[Any, List[int]]:
        """{bucket: indices of the test sentences whose source falls in it}, from the run's source lengths."""
        from ..analyses.bleu import bucket_members

        if eval_dir not in self._members:
            self._members[eval_dir] = bucket_members(source_lengths(eval_dir), self.buckets)
        return self._members[eval_dir]


def run_bucket_bleu(eval_dir: Path, texts: EvaluationTexts, lowercase: bool) -> Dict[str, Tuple[int, float]]:
    """Tokenised BLEU of one run per source-length bucket of ``texts`` (words of the source as fairseq-generate
    prints it, after BPE removal): {bucket name: (sentences, BLEU)}; empty buckets are left out."""
    from ..analyses.bleu import bucket_name
    from ..evaluation.scoring import tokenized_bleu_metric

    hyps, refs = texts.lines(eval_dir, HYP_TOK), texts.lines(eval_dir, REF_TOK)
    metric = tokenized_bleu_metric(lowercase)
    scores = {}
    for bucket, rows in texts.members(eval_dir).items():
        if rows:
            score = metric.corpus_score([hyps[i] for i in rows], [[refs[i] for i in rows]]).score
            scores[bucket_name(bucket)] = (len(rows), round(score, 2))
    return scores


def too_few_resamples(samples: int) -> str:
    """The marks ``samples`` resamples cannot give, as a clause of the table's notes. Their smallest p,
    1/(samples+1), is printed and marked at three decimals: with fewer than 105 resamples it rounds to 0.010 or more
    (⇑/⇓ needs p < 0.01), with fewer than 20 to 0.050 or more (no mark at all)."""
    smallest = round(1 / (samples + 1), 3)
    return "" if smallest < 0.01 else "; too few for ⇑/⇓" if smallest < 0.05 else "; too few for any mark"


#: buckets with fewer test sentences get no significance test: a bootstrap of a handful of sentences resamples
#: little but themselves (of one sentence, nothing at all: every resample repeats the observed difference, and
#: the test returns its smallest p)
MIN_BUCKET_TEST_SENTENCES = 30


def bucket_significance(grid: Grid, records: List[Dict[str, Any]], texts: EvaluationTexts, lowercase: bool,
                        samples: int = 1000) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """Per architecture ((norm, arch)) and source-length bucket of ``texts``: the paired bootstrap of tokenised
    BLEU on the bucket's test sentences against the baseline with the same norm placement, on the seeds both
    have, as :func:`pooled_significance` tests the whole test set (seed k paired with the baseline's seed k, each
    drawn sentence with every seed's output of it). {(norm, arch): {bucket name: Significance}}; the baseline,
    architectures that share no seed with it and buckets of fewer than :data:`MIN_BUCKET_TEST_SENTENCES`
    sentences are left out."""
    from ..analyses.bleu import bucket_name
    from ..evaluation.scoring import paired_bootstrap_over_sentences, tokenized_bleu_metric

    runs: Dict[Tuple[str, str], Dict[int, Path]] = {}
    for record in records:
        runs.setdefault((record["norm"], record["arch"]), {})[record["seed"]] = grid.root / record["eval_dir"]
    metric = tokenized_bleu_metric(lowercase)
    result: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for (norm, arch), seeds in runs.items():
        base = runs.get((norm, grid.baseline), {})
        common = sorted(set(seeds) & set(base))
        if arch == grid.baseline or not common:
            continue
        for bucket, rows in texts.members(base[common[0]]).items():  # the buckets' sentences, from a baseline run
            if len(rows) < MIN_BUCKET_TEST_SENTENCES:
                continue
            pick = lambda eval_dir, name: [texts.lines(eval_dir, name)[i] for i in rows]  # noqa: E731
            result.setdefault((norm, arch), {})[bucket_name(bucket)] = paired_bootstrap_over_sentences(
                metric, [pick(seeds[k], HYP_TOK) for k in common], [pick(base[k], HYP_TOK) for k in common],
                [pick(base[k], REF_TOK) for k in common], "tokenized BLEU", samples)
    return result


def write_buckets(grid: Grid, records: List[Dict[str, Any]], edges: Sequence[int], lowercase: bool,
                  samples: int = 1000) -> None:
    """buckets.csv (every run) and buckets.md (mean over seeds per architecture, and the difference from the
    baseline with its significance per bucket): tokenised BLEU by source length, scored as the runs' tokenized
    BLEU column (their scores.json's lowercasing and compound splitting; ``lowercase`` where none records it)."""
    settings = scoring_settings([grid.root / record["eval_dir"] for record in records], lowercase)
    lowercase = settings["lowercase"]
    lines = ["corpus,arch,norm,seed,bucket,sentences,tokenized_bleu"]
    means: Dict[Tuple[str, str], Dict[str, List[float]]] = {}
    sizes: Dict[str, int] = {}
    texts = EvaluationTexts(edges, settings["compound_split"])
    for record in records:
        scores = run_bucket_bleu(grid.root / record["eval_dir"], texts, lowercase)
        for bucket, (count, bleu) in scores.items():
            lines.append(f"{grid.label},{record['arch']},{record['norm']},{record['seed']},{bucket},{count},{bleu}")
            means.setdefault((record["norm"], record["arch"]), {}).setdefault(bucket, []).append(bleu)
            sizes[bucket] = count
    (grid.root / "buckets.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tests = bucket_significance(grid, records, texts, lowercase, samples)
    order = list(sizes)
    table = ["| architecture | norm | " + " | ".join(f"{b} ({sizes[b]})" for b in order) + " |",
             "|---|---|" + "---|" * len(order)]
    for (norm, arch), per_bucket in means.items():
        cells = []
        for b in order:
            cell = _pm(*mean_sd(per_bucket[b])) if b in per_bucket else "n/a"
            test = tests.get((norm, arch), {}).get(b)
            if test is not None and b in per_bucket:
                cell += f" ({test.delta:+.2f}{' ' + test.mark if test.mark else ''})"
            elif arch == grid.baseline and b in per_bucket:
                cell += " (baseline)"
            cells.append(cell)
        table.append(f"| `{arch}` | {norm} | " + " | ".join(cells) + " |")
    caption = (f"{grid.label}: tokenized BLEU by source length in tokenised words (the header gives each bucket's "
               f"sentences), mean ± sd over seeds; {_runs(len(records))}; measured {measured_dates(grid, records)} (the "
               "days the runs finished training) by the command of table.md. "
               f"In brackets: seed-pooled BLEU of the bucket minus that of `{grid.baseline}` (same norm placement, the "
               f"seeds both have), ⇑/⇓ p < 0.01 and ↑/↓ p < 0.05 from a paired bootstrap of the bucket's sentences "
               f"({samples:,} resamples), as the full table tests the whole test set; buckets of fewer than "
               f"{MIN_BUCKET_TEST_SENTENCES} sentences are not tested.")
    (grid.root / "buckets.md").write_text(caption + "\n\n" + "\n".join(table) + "\n", encoding="utf-8")
    plot_buckets(means, order, grid.root / "buckets.png", f"{grid.label}: tokenized BLEU by source length")


def plot_buckets(means: Dict[Tuple[str, str], Dict[str, List[float]]], order: List[str], path: Path, title: str) -> None:
    """buckets.png: one line per architecture over the source-length buckets (error bar: sd over seeds), the
    train-short/test-long figure when the buckets run past the training lengths."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    palette = distinct_colours()
    for i, ((norm, arch), per_bucket) in enumerate(means.items()):
        shown = [b for b in order if b in per_bucket]
        stats = [mean_sd(per_bucket[b]) for b in shown]
        ax.errorbar([order.index(b) for b in shown], [m for m, _ in stats], yerr=[sd or 0.0 for _, sd in stats],
                    marker="o", capsize=3, color=palette[i % len(palette)], label=arch.replace("transformer_", "") + ("" if norm == "pre" else f" ({norm})"))
    ax.set_xticks(range(len(order)), order)
    ax.set_xlabel("source length (words)")
    ax.set_ylabel("tokenized BLEU (mean ± sd over seeds)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


#: what a finished run keeps beside the published tables (text only, no checkpoint, no test text): with the prepared
#: corpus's reference, enough to rebuild every table, the pooled significance test, the learning curves and the
#: BLEU by length, and to count the run as finished
RUN_FILES = ("trained", "result.json", "checkpoints/hydra_train.log", "checkpoints/.hydra/config.yaml",
             *(f"{EVAL_DIR}/{name}" for name in (HYP_TOK, HYP_DETOK, GENERATE_LOG, SOURCE_LENGTHS)),
             *run_analyses.FILES,
             f"{EVAL_DIR}/{SCORES}")  # last: a copy counts as a finished run once its scores.json is there


def training_checkout(run_dir: Path) -> Optional[str]:
    """The checkout a run was trained from, where it is not the one publishing (another clone or worktree of the
    repository): the directory above the plugin's ``user_dir`` that the run's config.yaml records, which the
    launcher gives as CHECKOUT/fairseq_localness. None where the run records no absolute user_dir."""
    config = read_config_record(Path(run_dir) / "checkpoints")
    if config is None:
        return None
    user_dir = (config.get("common") or {}).get("user_dir")
    if not isinstance(user_dir, str) or not os.path.isabs(user_dir) or Path(user_dir).name != "fairseq_localness":
        return None
    return str(Path(user_dir).parent)


def check_publish_folder(grid: Grid, directory: Path, mine: Optional[Dict[str, Any]] = None) -> None:
    """Refuse a DIRECTORY/LABEL that holds another setup's runs (:func:`check_setup`), or files of which none is a
    published comparison's (its grid.json, commands.json or a run's scores): a folder whose files :func:`publish`
    would overwrite (table.md, runs.csv and the rest have fixed names)."""
    target = Path(directory) / grid.label
    if check_setup(grid, label_record(grid) if mine is None else mine, target / "grid.json", f"--publish {target}"):
        return
    held = [p for p in target.iterdir() if not p.name.startswith(".")] if target.is_dir() else []  # .gitkeep aside
    if held and not (target / COMMANDS).is_file() and not scored_runs(target):
        raise CompareError(f"--publish {directory}: {target} holds files and is no published comparison (no "
                           "grid.json, commands.json or run scores); nothing was written. Give another --publish "
                           "folder, or move it away")


def publish(grid: Grid, directory: Path) -> Path:
    """Copy the grid's result files, and every finished run's :data:`RUN_FILES` (not its checkpoints), to
    DIRECTORY/LABEL. Text files are copied with this machine's paths made portable
    (:func:`~fairseq_localness.provenance.portable_paths`): relative to the checkout, never absolute."""
    target = Path(directory) / grid.label
    mine = label_record(grid)
    check_publish_folder(grid, directory, mine)
    target.mkdir(parents=True, exist_ok=True)
    if grid.data_bin.is_dir():  # first: a publish cut short is still known as this label's by the next one
        write_atomically(target / "grid.json", json.dumps(mine, indent=1) + "\n")
    checkouts = [c for c in (checkout_of(REPO), checkout_of(Path.cwd()), checkout_of(grid.work),
                             checkout_of(grid.data_bin),
                             *(training_checkout(grid.run_dir(spec)) for spec in finished_specs(grid))) if c]

    def copy(source: Path, destination: Path) -> None:  # whole or not at all: restore_published trusts a copy
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix == ".png":
            write_atomically(destination, source.read_bytes())
        else:
            text = source.read_text(encoding="utf-8", errors="surrogateescape")
            write_atomically(destination, portable_paths(text, checkouts, sys.prefix, str(Path.home())),
                             errors="surrogateescape")

    for name in PUBLISHED:
        if (grid.root / name).is_file():
            copy(grid.root / name, target / name)
    for spec in finished_specs(grid):
        relative = grid.run_dir(spec).relative_to(grid.root)
        eval_dir = grid.run_dir(spec) / EVAL_DIR
        if (eval_dir / GENERATED).is_file() and not (eval_dir / SOURCE_LENGTHS).is_file():
            write_atomically(eval_dir / SOURCE_LENGTHS, "".join(f"{n}\n" for n in source_lengths(eval_dir)))
        for name in RUN_FILES:
            source = grid.run_dir(spec) / name
            if source.is_file():
                copy(source, target / relative / name)
        for name in TEST_TEXT_FILES:  # copies an earlier version published
            (target / relative / name).unlink(missing_ok=True)
    return target


def scored_runs(root: Path) -> List[Tuple[RunSpec, Path]]:
    """Every run under ROOT (a WORK/LABEL, or its published copy) that has its scores, with its directory."""
    runs = []
    for scores in sorted(Path(root).glob(f"*/*/seed*/{EVAL_DIR}/{SCORES}")):
        run_dir = scores.parent.parent
        norm, arch, seed = run_dir.parent.parent.name, run_dir.parent.name, run_dir.name[len("seed"):]
        if norm in NORMS and seed.isdigit():
            runs.append((RunSpec(arch, norm, int(seed)), run_dir))
    return runs


def published_runs_missing(grid: Grid, directory: Path) -> List[Tuple[RunSpec, Path]]:
    """The runs published in DIRECTORY/LABEL that WORK/LABEL has not finished, with their published folders: what
    :func:`restore_published` copies back (and a dry run names). A published setup other than the grid's, or a
    folder that is no published comparison, is refused (:func:`check_publish_folder`), before anything is copied."""
    source_root = Path(directory) / grid.label
    check_publish_folder(grid, directory)
    return [(spec, run_dir) for spec, run_dir in scored_runs(source_root) if not grid.finished(spec)]


#: a run directory's mark while :func:`restore_published` copies into it: a restore cut short leaves it, with the
#: folder it restores from, so that no training starts on the half-copied run and the next restore completes it
RESTORING = "restoring"


def restore_cut_short(run_dir: Path) -> Optional[str]:
    """What to do with a run whose restore from a --publish folder was cut short (its :data:`RESTORING` mark), or
    None. A mark beside the run's scores.json, the last file a restore copies, is the restore's whole: removed."""
    mark = run_dir / RESTORING
    if not mark.is_file():
        return None
    if (run_dir / EVAL_DIR / SCORES).is_file():
        mark.unlink(missing_ok=True)
        return None
    source = mark.read_text(encoding="utf-8").strip()
    return (f"its restore from {source} was cut short: run again with --publish {Path(source).parents[3]} to "
            f"complete it, or move {run_dir} away to train it here")


def own_work(run_dir: Path) -> Optional[str]:
    """What of a training or an evaluation of its own ``run_dir`` (not finished) holds, or None: a published copy
    of the run is not restored over it (:func:`restore_published`). The training lock's file alone is none, and so
    are the files of an interrupted restore (its :data:`RESTORING` mark), which the next restore completes."""
    if (run_dir / RESTORING).is_file():
        return None
    checkpoints = sorted(p.name for p in (run_dir / "checkpoints").glob("checkpoint*.pt*"))
    if checkpoints:
        return f"a training ({', '.join(checkpoints[:3])}{', ...' if len(checkpoints) > 3 else ''})"
    if (run_dir / "checkpoints" / "hydra_train.log").is_file():
        return "a training (checkpoints/hydra_train.log)"
    if (run_dir / EVAL_DIR).is_dir() and any((run_dir / EVAL_DIR).iterdir()):
        return f"an evaluation ({EVAL_DIR}/)"
    return None


def restore_published(grid: Grid, directory: Path) -> List[RunSpec]:
    """The runs published in DIRECTORY/LABEL that WORK/LABEL lacks (a fresh checkout, another machine): their
    :data:`RUN_FILES` are copied back, so that they count as finished and are never trained again, with the test
    reference they were scored against (ref.tok.txt) from the prepared corpus (prep-info.json's ``tok_ref``)."""
    import shutil

    from ..evaluation.evaluate import read_prep_info

    source_root = Path(directory) / grid.label
    missing = published_runs_missing(grid, directory)
    tok_ref = read_prep_info(str(grid.data_bin)).get("tok_ref") if grid.data_bin.is_dir() else None
    # before anything is copied: a run restored without its reference would count as finished and break the table
    if missing and not (tok_ref and Path(tok_ref).is_file()):
        raise CompareError(f"{missing[0][1]}: published runs keep no copy of the test reference, and --data "
                           f"{grid.data_bin} names none that is here (prep-info.json's tok_ref): prepare the corpus "
                           "with its data-prep script first")
    restored = []
    for spec, run_dir in missing:
        local = grid.run_dir(spec)
        try:  # a process training it now (its lock) is left to finish it
            with training_lock(local / "checkpoints"):
                work = own_work(local)
                if work:  # the published files would sit beside checkpoints and outputs of another training
                    print(f"{spec.name}: published in {run_dir}, not restored: {local} holds {work} of its own, "
                          f"which this call resumes (move {local} away to restore the published run instead)")
                    continue
                (local / EVAL_DIR).mkdir(parents=True, exist_ok=True)
                write_atomically(local / RESTORING, f"{run_dir}\n")
                shutil.copyfile(tok_ref, local / EVAL_DIR / REF_TOK)
                for name in RUN_FILES:  # scores.json last, and whole: it is what makes the copy count as finished
                    if (run_dir / name).is_file():
                        (local / name).parent.mkdir(parents=True, exist_ok=True)
                        write_atomically(local / name, (run_dir / name).read_bytes())
                (local / RESTORING).unlink()
                restored.append(spec)
        except RunDirBusy:
            print(f"{spec.name}: published in {run_dir}, not restored: another process is training it in {local}")
    if restored and not (grid.root / "grid.json").is_file() and (source_root / "grid.json").is_file():
        shutil.copyfile(source_root / "grid.json", grid.root / "grid.json")
    merge_commands(source_root / COMMANDS, grid.root / COMMANDS)
    return restored


def write_curves(grid: Grid, records: List[Dict[str, Any]]) -> None:
    """Validation loss after every epoch of every finished run (curves.csv), and its plot (curves.png):
    the evidence that every run stopped on a plateau, not on a budget."""
    lines = ["corpus,arch,norm,seed,epoch,updates,valid_loss"]
    curves: Dict[RunSpec, List[Tuple[int, float]]] = {}
    for record in records:
        spec = RunSpec(record["arch"], record["norm"], record["seed"])
        log = grid.run_dir(spec) / "checkpoints" / "hydra_train.log"
        seen = {}
        for epoch, updates, loss in validation_points(log):  # a resumed run may log an epoch twice: keep the last
            seen[epoch] = (updates, loss)
        for epoch in sorted(seen):
            lines.append(f"{grid.label},{spec.arch},{spec.norm},{spec.seed},{epoch},{seen[epoch][0]},{seen[epoch][1]}")
        if seen:
            curves[spec] = [(epoch, seen[epoch][1]) for epoch in sorted(seen)]
    (grid.root / "curves.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if curves:
        plot_curves(curves, grid.root / "curves.png", grid.label)


def plot_curves(curves: Dict[RunSpec, List[Tuple[int, float]]], path: Path, label: str) -> None:
    """Two panels: every run's validation loss per epoch, and the same zoomed on the second half of the epochs,
    where the stopping rule acts. One line per run: a colour per architecture (:func:`distinct_colours`), solid
    pre-norm, dashed post-norm; a dot marks the epoch of the run's best loss, the checkpoint that is scored."""
    plt = pyplot()
    archs = sorted({spec.arch for spec in curves})
    palette = distinct_colours()
    colour = {arch: palette[i % len(palette)] for i, arch in enumerate(archs)}
    zoom_from, last_epoch, low, high = zoom_window(curves)
    fig, (full, zoom) = plt.subplots(1, 2, figsize=(11, 5.5))
    labelled = set()
    for spec in sorted(curves, key=lambda s: (s.arch, s.norm, s.seed)):
        points = curves[spec]
        epochs, losses = [p[0] for p in points], [p[1] for p in points]
        best = min(range(len(points)), key=lambda i: losses[i])
        name = f"{spec.arch} ({spec.norm})"
        style = dict(color=colour[spec.arch], linestyle="-" if spec.norm == "pre" else "--", linewidth=0.9)
        for ax in (full, zoom):
            ax.plot(epochs, losses, label=None if name in labelled or ax is zoom else name, **style)
            ax.plot([epochs[best]], [losses[best]], "o", color=colour[spec.arch], markersize=3)
        labelled.add(name)
    full.set_title(f"{label}: validation loss per epoch, one line per run", fontsize=9)
    zoom.set_title(f"from epoch {zoom_from}; a dot marks each run's best (scored) epoch", fontsize=9)
    zoom.set_xlim(zoom_from - 0.5, last_epoch + 0.5)
    zoom.set_ylim(low, high)
    for ax in (full, zoom):
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    full.set_ylabel("validation loss")
    full.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def zoom_window(curves: Dict[RunSpec, List[Tuple[int, float]]]) -> Tuple[int, int, float, float]:
    """The zoomed panel of :func:`plot_curves`: (first epoch, last epoch, lowest loss, highest loss) over the second
    half of the longest run's epochs, the loss range padded by 5% (and 1e-3, for a flat range)."""
    last_epoch = max(points[-1][0] for points in curves.values())
    zoom_from = max(1, last_epoch // 2)
    zoomed = [loss for points in curves.values() for epoch, loss in points if epoch >= zoom_from]
    pad = 0.05 * (max(zoomed) - min(zoomed)) + 1e-3
    return zoom_from, last_epoch, min(zoomed) - pad, max(zoomed) + pad


def distinct_colours() -> list:
    """40 colours (matplotlib's tab20, then tab20b), so that the 22 families of a grid each get their own: the
    default cycle repeats after ten."""
    pyplot()
    from matplotlib import colormaps

    return [*colormaps["tab20"].colors, *colormaps["tab20b"].colors]


def pyplot():
    """matplotlib's pyplot, drawing to files."""
    import logging

    # fairseq's logging setup lets matplotlib's debug lines through (its font search, and at import its paths):
    # quiet it before the import
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: point labels of the figure: font size, and a character's width and a line's height in points (DejaVu Sans)
LABEL_FONT, LABEL_CHAR, LABEL_LINE = 7, 4.4, 9.0


def label_offsets(anchors: Sequence[Tuple[float, float]], texts: Sequence[str],
                  width_limit: Optional[float] = None) -> List[Tuple[float, float]]:
    """Text offsets in points for the labels TEXTS of points at ANCHORS (in points from the axes' corner): the
    first place that overprints no label placed before it, of up and right of the point, down and right, up and
    left, down and left, then a line lower at a time on the right, then on the left. Two rows with the same BLEU
    and speed (a tie) stay readable. With ``width_limit`` (the axes' width in points), a place that runs past
    either side of the axes is taken only where none inside them is free. The boxes are estimates (a mean
    character width; the axes before tight_layout's last move)."""
    placed: List[Tuple[float, float, float, float]] = []

    def free(x0: float, y0: float, width: float, bounded: bool) -> bool:
        inside = not bounded or width_limit is None or (x0 >= 0 and x0 + width <= width_limit)
        return inside and all(x0 + width <= a or x0 >= b or y0 + LABEL_LINE <= c or y0 >= d for a, b, c, d in placed)

    offsets = []
    for (x, y), text in zip(anchors, texts):
        width = LABEL_CHAR * len(text)
        candidates = [(3.0, 3.0), (3.0, -LABEL_LINE - 2), (-width - 3, 3.0), (-width - 3, -LABEL_LINE - 2)]
        candidates += [(3.0, 3.0 - LABEL_LINE * k) for k in range(2, 12)]
        candidates += [(-width - 3, 3.0 - LABEL_LINE * k) for k in range(2, 12)]  # the same on the left
        chosen = next((c for bounded in (True, False) for c in candidates if free(x + c[0], y + c[1], width, bounded)),
                      candidates[0])
        placed.append((x + chosen[0], x + chosen[0] + width, y + chosen[1], y + chosen[1] + LABEL_LINE))
        offsets.append(chosen)
    return offsets


def plot(rows: List[Dict[str, Any]], baseline: str, path: Path, title: str) -> None:
    """BLEU (mean, error bar: sd over seeds) against the training-speed ratio to the baseline."""
    metric = "sacrebleu" if any(r["sacrebleu"] is not None for r in rows) else "tokenized_bleu"
    # a row without a speed ratio (no seed in common with the baseline, or no speeds logged) has no x: not drawn
    unplaced = [f"{r['arch']} ({r['norm']})" for r in rows if r[metric] is not None and r["train_speed_ratio"] is None]
    series = []
    for norm, marker in (("pre", "o"), ("post", "s")):
        points = [ScatterPoint(short_name(r["arch"], baseline), r["train_speed_ratio"], r[metric],
                               yerr=r[f"{metric}_sd"] or 0.0)
                  for r in rows if r["norm"] == norm and r[metric] is not None and r["train_speed_ratio"] is not None]
        if points:
            series.append(ScatterSeries(f"{norm}-norm", marker, points))
    if unplaced:
        title += "\nnot drawn (no speed ratio): " + ", ".join(unplaced)
    labelled_scatter(series, path, title, f"training speed relative to {baseline} (same grid)",
                     ("sacreBLEU" if metric == "sacrebleu" else "tokenized BLEU") + " (mean ± sd over seeds)")


def short_name(arch: str, baseline: str) -> str:
    """A figure's point label: the architecture without its ``transformer_`` prefix, the baseline in full."""
    return arch if arch == baseline else arch.replace("transformer_", "")


@dataclass
class ScatterPoint:
    """One labelled point; ``xerr`` an (below, above) extent where the x value has a spread, ``yerr`` a half-width."""
    label: str
    x: float
    y: float
    yerr: float = 0.0
    xerr: Optional[Tuple[float, float]] = None


@dataclass
class ScatterSeries:
    """Points drawn alike, under one legend entry; ``hollow`` draws unfilled markers."""
    legend: str
    marker: str
    points: List[ScatterPoint]
    hollow: bool = False


def labelled_scatter(series: Sequence[ScatterSeries], path: Path, title: str, xlabel: str, ylabel: str,
                     guides: Tuple[Optional[float], Optional[float]] = (None, None),
                     description: Optional[str] = None) -> None:
    """A scatter of labelled points with error bars, each label where it overprints no other (:func:`label_offsets`;
    a thin line joins a label moved further than beside its point). ``guides``: an x and a y to mark with a thin
    dashed line (the baseline's). ``description``: kept in the PNG's Description text (what it was drawn from)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    if guides[0] is not None:
        ax.axvline(guides[0], color="0.6", linestyle="--", linewidth=0.7, zorder=0)
    if guides[1] is not None:
        ax.axhline(guides[1], color="0.6", linestyle="--", linewidth=0.7, zorder=0)
    labelled: List[ScatterPoint] = []
    for group in series:
        xerr = None
        if any(p.xerr for p in group.points):
            xerr = [[(p.xerr or (0.0, 0.0))[0] for p in group.points], [(p.xerr or (0.0, 0.0))[1] for p in group.points]]
        drawn = ax.errorbar([p.x for p in group.points], [p.y for p in group.points],
                            yerr=[p.yerr for p in group.points], xerr=xerr, fmt=group.marker, capsize=3,
                            label=group.legend)
        if group.hollow:
            drawn.lines[0].set_markerfacecolor("none")
        labelled += group.points
    ax.get_xlim(), ax.get_ylim()  # settle the autoscaled limits the points set, before reading them
    box = ax.get_position()  # the axes in figure fractions: data -> axes fractions -> points
    size = (fig.get_figwidth() * 72 * box.width, fig.get_figheight() * 72 * box.height)
    anchors = [(u * size[0], v * size[1]) for u, v in (ax.transLimits.transform((p.x, p.y)) for p in labelled)]
    for point, offset in zip(labelled, label_offsets(anchors, [p.label for p in labelled], width_limit=size[0])):
        moved = abs(offset[1]) > LABEL_LINE + 2  # below the four places beside the point
        ax.annotate(point.label, (point.x, point.y), fontsize=LABEL_FONT, xytext=offset, textcoords="offset points",
                    arrowprops=dict(arrowstyle="-", linewidth=0.4, color="0.4") if moved else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Description": description} if description else None)
    plt.close(fig)


def finished_specs(grid: Grid) -> List[RunSpec]:
    """Every finished run under WORK/LABEL, this invocation's grid or an earlier one's (the same recipe and data,
    :func:`claim_label`): ``--archs norm --norm post`` adds a column to the same table. Ordered by norm placement,
    then the baseline and the architectures in the order the label's commands listed them (the first command's
    order stays the table's when a later one adds a few), then the rest by name."""
    specs = [spec for spec, _ in scored_runs(grid.root)]
    listed = [run[0] for entry in read_commands(grid.root / COMMANDS) for run in entry["runs"]]
    order = {a: i for i, a in enumerate(dict.fromkeys([grid.baseline] + listed + grid.archs))}
    return sorted(specs, key=lambda s: (NORMS.index(s.norm), order.get(s.arch, len(order)), s.arch, s.seed))


def off_recipe_runs(grid: Grid) -> List[Tuple[RunSpec, List[str]]]:
    """Finished runs whose log shows a resume that departed from the uninterrupted training
    (:func:`runlog.resume_deviations`): a run resumed by a plugin older than the resume fix of
    ``compat.resume_where_training_stopped``. Its row is not the training its recipe gives."""
    found = []
    for spec in finished_specs(grid):
        problems = resume_deviations(grid.run_dir(spec) / "checkpoints" / "hydra_train.log")
        if problems:
            found.append((spec, problems))
    return found


def finished_records(grid: Grid) -> List[Dict[str, Any]]:
    """Every finished run, read again from its files (``result.json`` is rewritten, never trusted as a cache)."""
    return [collect_run(grid, spec) for spec in finished_specs(grid)]


def data_fingerprint(data_bin: Path) -> str:
    """The data-bin's identity wherever it lies: the SHA-1 of its dictionaries and of its test split's index (the
    same preparation on another machine or checkout gives the same fingerprint)."""
    import hashlib

    digest = hashlib.sha1()
    for path in sorted(data_bin.glob("dict.*.txt")) + sorted(data_bin.glob("test.*.idx")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def label_record(grid: Grid) -> Dict[str, Any]:
    """What every run under one label shares (``grid.json``): the recipe's name and its values (its defaults
    merged: a shipped recipe edited between two calls is another recipe), the data, the overrides and the
    decoding flags; on GPUs also their number and the precision. A grid's rows set speeds against the baseline's
    and scores trained in one precision: runs on the CPU and on GPUs, or in fp32 and fp16, are two labels. (On
    the CPU neither key is written, so a label's record reads as it did before they were.)"""
    return {"recipe": grid.recipe,
            "recipe_values": benchmark_values(grid.recipe, grid.root / "recipe" if grid.recipe_file else None),
            "data": data_fingerprint(grid.data_bin), "train_overrides": grid.train_overrides,
            "evaluate_flags": grid.evaluate_flags,
            **({"gpus": grid.gpus} if grid.gpus else {}), **({"fp16": True} if grid.fp16 else {})}


def setup_differences(theirs: Dict[str, Any], mine: Dict[str, Any], prefix: str = "") -> List[str]:
    """``key: theirs -> mine`` for every (dotted) key in which two label records differ."""
    differ = []
    for key in dict.fromkeys([*mine, *theirs]):
        a, b = theirs.get(key), mine.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            differ += setup_differences(a, b, f"{prefix}{key}.")
        elif a != b:
            differ.append(f"{prefix}{key}: {'(none)' if a is None else repr(a)} -> {'(none)' if b is None else repr(b)}")
    return differ


def check_setup(grid: Grid, mine: Dict[str, Any], record: Path, what: str) -> bool:
    """Refuse ``record`` (a grid.json) if it records another setup than ``mine`` (``grid``'s label record);
    False when there is none."""
    if not record.is_file():
        return False
    theirs, mine = read_json(record), dict(mine)
    if not grid.data_bin.is_dir():  # a fresh checkout before data-prep: the data cannot be compared yet
        theirs.pop("data", None), mine.pop("data", None)
    differ = setup_differences(theirs, mine)
    if differ:
        raise CompareError(f"{what} holds runs of another setup ({'; '.join(differ)}; {record}); one table would "
                           "mix runs trained or decoded otherwise. Use another --label, or move those runs away")
    return True


def claim_label(grid: Grid, write: bool = True) -> None:
    """Record the recipe and data of WORK/LABEL on first use; refuse another recipe or data-bin there, so that
    every run of one table shares them."""
    record, mine = grid.root / "grid.json", label_record(grid)
    if check_setup(grid, mine, record, f"--work {grid.root}"):
        return
    if write:
        grid.root.mkdir(parents=True, exist_ok=True)
        write_atomically(record, json.dumps(mine, indent=1) + "\n")


def data_bin_detok_ref(data_bin: Path) -> Optional[str]:
    """The detokenised test reference that data-prep recorded for ``data_bin`` (prep-info.json), if any."""
    from ..evaluation.evaluate import read_prep_info

    return read_prep_info(str(data_bin)).get("detok_ref")


def lowercased(data_bin: Path) -> bool:
    from ..evaluation.evaluate import read_prep_info

    return bool(read_prep_info(str(data_bin)).get("lowercased", False))


# --- command line -------------------------------------------------------------------------------------------


def _group_names() -> str:
    """The --archs groups for --help; outside a checkout (no configs/) the parser still builds, and main says why."""
    try:
        return ", ".join(load_compare_config()["groups"])
    except (OSError, KeyError, TypeError):
        return "see the file"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairseq-localness-compare", description=__doc__.split("\n\n")[0],
                                     epilog="docs/compare.md has the recipes, the significance test and the "
                                     "published grid.")
    parser.add_argument("corpus", nargs="?",
                        help=f"a shipped comparison corpus of configs/compare.yaml ({shipped_corpora()}); omit it "
                        "and give --data and --recipe for your own")
    parser.add_argument("--data", type=Path, help="the data-bin (default: DATA_ROOT/<corpus's data>/data-bin)")
    parser.add_argument("--data-root", type=Path, default=Path("runs/data"), help="where data-prep wrote the corpora [runs/data]")
    parser.add_argument("--recipe", help="a benchmark of configs/benchmark/ or a YAML file in that format "
                        "(default: the corpus's compare_* recipe)")
    parser.add_argument("--label", help="name of the result directory WORK/LABEL [the corpus, or the recipe's name]")
    parser.add_argument("--archs", default="families",
                        help=f"architectures: a group of configs/compare.yaml ({_group_names()}) "
                        "or names, comma-separated [families]")
    parser.add_argument("--baseline", default="transformer", help="the row every other is compared with [transformer]")
    parser.add_argument("--seeds", default="3", help="a number of seeds (3: seeds 1,2,3) or a list (1,4) [3]")
    parser.add_argument("--norm", default="pre", help="norm placement(s) for every architecture: pre, post or pre,post [pre]")
    parser.add_argument("--work", type=Path, default=Path("runs/compare"), help="where runs and tables go [runs/compare]")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at the same time (CPU: one thread each) [1]")
    parser.add_argument("--gpus", type=int, default=0,
                        help="GPUs per run, each with 1/N of the recipe's tokens per update (0: train on the CPU) [0]")
    parser.add_argument("--fp16", action="store_true", help="half-precision training (needs --gpus)")
    parser.add_argument("--train-args", default="", help="Hydra overrides for every run, one quoted string "
                        "(e.g. 'optimization.max_epoch=2' for a smoke run)")
    parser.add_argument("--eval-args", default="", help="more scripts/evaluate.sh options for every run, one quoted string")
    parser.add_argument("--length-buckets", help="upper edges of source-length buckets (words) for buckets.md, "
                        "e.g. 10,20,30 [the shipped corpus's; for your own corpus none, and no buckets.* files]")
    parser.add_argument("--bootstrap-samples", default=1000, help="paired bootstrap resamples [1000]",
                        type=int_at_least(1, "must be 1 or more: every table tests each architecture against "
                                             "the baseline"))
    parser.add_argument("--publish", type=Path,
                        help="also copy the table, runs, figure and learning curves to PUBLISH/LABEL (e.g. docs/results)")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate and print every run's commands; train nothing (a --recipe file is copied to "
                        "WORK/LABEL/recipe/, which the printed commands read)")
    parser.add_argument("--table-only", action="store_true", help="write the table from the finished runs; train nothing")
    from .cluster_tables import add_arguments as add_cluster_arguments

    add_cluster_arguments(parser)
    for action in parser._actions:  # reproduce's estimate of the papers' tables: refused here (main)
        if action.dest == "gpu_hours":
            action.help = argparse.SUPPRESS
    return parser


def grid_from_args(args: argparse.Namespace) -> Grid:
    config = load_compare_config()
    corpora, groups = config["corpora"], config["groups"]
    corpus = None
    if args.corpus is not None:
        if args.corpus not in corpora:
            raise CompareError(f"unknown corpus {args.corpus!r}; configs/compare.yaml has {', '.join(corpora)} "
                               "(or give --data and --recipe for your own)")
        corpus = corpora[args.corpus]
    elif args.data is None or args.recipe is None:
        raise CompareError(f"give a shipped corpus ({shipped_corpora()}), or --data DATA_BIN "
                           "and --recipe BENCHMARK_OR_YAML for your own corpus")
    recipe = args.recipe or corpus["recipe"]
    recipe_file = None
    if recipe.endswith((".yaml", ".yml")):
        recipe_file = Path(recipe).resolve()
        if not recipe_file.is_file():
            raise CompareError(f"--recipe {recipe}: no such file")
        recipe = recipe_file.stem
    elif recipe not in benchmarks():
        raise CompareError(f"--recipe {recipe}: not a benchmark of configs/benchmark/ nor a .yaml file")
    data = args.data or (args.data_root / corpus["data"] / "data-bin")
    norms = [n.strip() for n in args.norm.split(",") if n.strip()]
    bad = [n for n in norms if n not in NORMS]
    if bad or not norms:
        raise CompareError(f"--norm {args.norm!r}: choose pre, post or pre,post")
    if args.jobs < 1:
        raise CompareError("--jobs must be at least 1")
    for flag, directory in (("--work", args.work), ("--publish", args.publish)):
        problem = directory_problem(directory, flag) if directory is not None else None
        if problem:
            raise CompareError(problem)
    if args.fp16 and not args.gpus:
        raise CompareError("--fp16 trains in half precision on GPUs: give --gpus N (on the CPU, train in fp32)")
    evaluate_flags = list(corpus["evaluate"]) if corpus else []
    grid = Grid(label=args.label or args.corpus or recipe, recipe=recipe, data_bin=Path(data).resolve(),
                archs=resolve_archs(args.archs, groups), seeds=parse_seeds(args.seeds), norms=norms,
                baseline=args.baseline, work=args.work.resolve(),
                evaluate_flags=evaluate_flags + shlex.split(args.eval_args),
                train_overrides=shlex.split(args.train_args), recipe_file=recipe_file, gpus=args.gpus, fp16=args.fp16,
                prepare=corpus["prepare"].replace("DATA_ROOT", str(args.data_root)) if corpus and not args.data else None,
                length_buckets=parse_edges(args.length_buckets) if args.length_buckets else
                list((corpus or {}).get("length_buckets", [])))
    if not args.data and not args.table_only and not Path(data).is_dir():  # named as given, links unresolved
        raise CompareError(f"--data-root {args.data_root}: no {corpus['data']}/data-bin there (the corpus's "
                           f"data-bin); prepare it with: {grid.prepare}")
    if recipe_file is not None:  # what trains is the copy beside the results (the file may change later)
        copy = grid.root / "recipe" / "benchmark" / f"{recipe}.yaml"
        text = recipe_file.read_text(encoding="utf-8")
        started = any(path.is_dir() for path in grid.root.glob("*/*/seed*"))  # else a dry run's copy: replaced
        if started and copy.is_file() and copy.read_text(encoding="utf-8") != text:
            raise CompareError(f"--recipe {recipe_file} differs from the recipe the runs in {grid.root} trained with "
                               f"({copy}); use another --label or --work for a new recipe")
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
    return grid


def check_cluster_options(args: argparse.Namespace) -> None:
    """``--slurm``/``--local-executor`` options, checked before anything is written: a time limit, and GPUs for a
    Slurm job (``--gpus N``, each run's GPUs on one node: the comparison's name for reproduce.sh's
    ``--gpus-per-node``)."""
    from .cluster import options_from_args

    try:
        options_from_args(args, args.gpus, args.nodes)
    except LaunchError as err:
        raise CompareError(str(err)) from None
    if args.slurm and not args.gpus:
        raise CompareError("--slurm trains on GPUs: give --gpus N (each run's GPUs, on one node)")


def cluster_plans(grid: Grid, specs: Optional[Sequence[RunSpec]] = None) -> List[Any]:
    """The grid's runs (or ``specs``) as reproduce's row plans, for the Slurm submission of :mod:`.cluster_tables`."""
    plans = []
    for spec in grid.runs() if specs is None else specs:
        run_dir = grid.run_dir(spec)
        row = Row(paper=grid.label, table="", id=f"{spec.norm}.{spec.arch}.seed{spec.seed}", label=spec.arch,
                  split="test", setting=grid.recipe, arch=spec.arch)
        evaluate = ["bash", str(SCRIPTS_DIR / "evaluate.sh"), *evaluate_argv(grid, spec)]
        plan = RowPlan(row, run_dir, grid.data_bin, launch_of(grid, spec), evaluate, "sacrebleu")
        plans.append(plan)
    return plans


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        require_checkout()
    except CheckoutError as err:
        parser.error(str(err))
    if args.gpu_hours:
        parser.error("--gpu-hours estimates the papers' tables (reproduce.sh --gpu-hours): a comparison's runs stop "
                     "when their validation loss does, so their cost is not known before they train")
    cluster = args.slurm or args.local_executor
    published: Set[RunSpec] = set()  # for a dry run: the runs a real call would restore from --publish
    try:
        if cluster:
            check_cluster_options(args)
        grid = grid_from_args(args)
        # first, and before anything is restored into the label: another setup in it is the likelier mistake.
        # --table-only too: its table would describe the recipe and decoding flags of this call, not those its
        # runs trained and decoded with
        claim_label(grid, write=False)
        if args.publish and not args.dry_run:  # also for --table-only: the table of a fresh checkout
            for spec in restore_published(grid, args.publish):
                print(f"{spec.name}: finished earlier (restored from {args.publish}), not retrained")
        elif args.publish:  # what the real call would restore, or refuse (another setup), said now
            published = {spec for spec, run_dir in published_runs_missing(grid, args.publish)
                         if not own_work(grid.run_dir(spec))}
        if args.table_only and not published and not scored_runs(grid.root):
            raise CompareError(f"--table-only: no finished run in {grid.root} to write a table of")
        if not args.table_only:
            # before anything trains or is submitted: a half-copied run would train beside the published files
            cut_short = [f"{spec.name}: {text}" for spec in grid.runs()
                         for text in [restore_cut_short(grid.run_dir(spec))] if text]
            if cut_short:
                raise CompareError("; ".join(cut_short))
            validate(grid)
            note = reference_note(grid)
            if note:
                print(note, flush=True)
            if not args.dry_run:
                claim_label(grid)
    except CompareError as err:
        print(f"fairseq-localness-compare: error: {err}", file=sys.stderr)
        return 2
    # the command that trains these runs and writes this table: --table-only only rewrites what it wrote
    command = "fairseq-localness-compare " + shlex.join(a for a in argv if a != "--table-only")
    if not args.dry_run and not args.table_only:
        try:
            record_command(grid, command)
        except CompareError as err:
            print(f"fairseq-localness-compare: error: {err}", file=sys.stderr)
            return 2
    specs = grid.runs()
    restored = f"published in {args.publish}: a real call restores it, not retrained"
    if args.dry_run and (not cluster or args.table_only):  # a cluster dry run prints the sbatch files (below)
        # as the grid runs them, from any directory: its environment (one thread a run on the CPU) and the scripts
        env = run_env(grid)
        settings = [] if grid.gpus else [f"{name}={env[name]}" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                                             *CPU_ALLOCATOR_ENV) if name in env]
        prefix = shlex.join(["env", *settings]) + " " if settings else ""
        for index, spec in enumerate(specs, 1):
            state = "finished" if grid.finished(spec) else restored if spec in published else "to run"
            print(f"[{index}/{len(specs)}] {spec.name}: {state}")
            print(f"  train:    {prefix}bash {SCRIPTS_DIR / 'train.sh'} " + shlex.join(train_argv(grid, spec)))
            print(f"  evaluate: {prefix}bash {SCRIPTS_DIR / 'evaluate.sh'} " + shlex.join(evaluate_argv(grid, spec)))
        return 0
    failures: Dict[str, str] = {}
    if not args.table_only:
        args.paper, args.table = grid.label, ""
        from .cluster_tables import cluster_table

        for spec in [s for s in specs if s in published]:  # a dry run's: the real call has restored them
            print(f"{spec.name}: {restored}")
        status = cluster_table(args, grid.work, cluster_plans(grid, [s for s in specs if s not in published]),
                               failures)
        if args.dry_run:
            return 0
        if status is None:
            failures = run_grid(grid, args.jobs, after_each=lambda: write_table(grid, args, command, quiet=True))
    try:
        text = write_table(grid, args, command)
    except CompareError as err:
        print(f"fairseq-localness-compare: error: {err}", file=sys.stderr)
        return 2
    print(text)
    written = [name for name in PUBLISHED if (grid.root / name).is_file()]
    print(f"written to {grid.root}/{', '.join(written[:-1])} and {written[-1]}")
    if args.publish:
        print(f"published to {Path(args.publish) / grid.label}")
    for spec, problems in off_recipe_runs(grid):
        copy = f" and {Path(args.publish) / grid.label / spec.norm / spec.arch / f'seed{spec.seed}'}" \
            if args.publish else ""
        print(f"warning: {spec.name} was resumed off its recipe ({'; '.join(problems)}): its row is not the "
              f"training the recipe gives. Move {grid.run_dir(spec)}{copy} away and run this command again to "
              "retrain it", file=sys.stderr)
    for name, error in failures.items():
        print(f"FAILED {name}: {error}", file=sys.stderr)
    return 1 if failures else 0


def write_table(grid: Grid, args: argparse.Namespace, command: str, quiet: bool = False) -> str:
    """The table of every finished run under WORK/LABEL (and its copy under --publish)."""
    with label_files_lock(grid):
        return _write_table(grid, args, command)


def _write_table(grid: Grid, args: argparse.Namespace, command: str) -> str:
    records = finished_records(grid)
    rows = summarize(records, grid.baseline, lowercased(grid.data_bin), args.bootstrap_samples, grid.root,
                     data_bin_detok_ref(grid.data_bin))
    text = write_outputs(grid, records, rows, command, machine_description(grid.gpus), args.bootstrap_samples)
    if args.publish:
        publish(grid, args.publish)
    return text


def console_main() -> int:
    """``fairseq-localness-compare`` entry point."""
    return main()


if __name__ == "__main__":
    sys.exit(main())
