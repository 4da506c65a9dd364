"""Reading training runs back: parameters, speed and loss from a run's log; progress lines; comparison tables."""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..cli import int_at_least
from ..evaluation.outputs import SCORES
from ..provenance import result_file_problem, write_atomically


_PARAMS = re.compile(r"num\. (?:shared )?model params: ([\d,]+)")
_TRAIN_EPOCH = re.compile(r"\[train\]\[INFO\] - epoch \d+ \|.*?\| wps ([\d.]+) \|.*?\| num_updates (\d+)")


#: fairseq's validation line, in hydra's log format and the plain one: epoch, loss, num_updates
VALID_LINE = re.compile(r"valid(?:\]\[INFO\] -| \|) epoch (\d+) \| valid on 'valid' subset \| loss ([\d.]+) .*?num_updates (\d+)")


def validation_points(log: Path) -> List[Tuple[int, int, float]]:
    """(epoch, updates, validation loss) of every validation line of a training log, in log order ([] without it)."""
    if not log.is_file():
        return []
    return [(int(e), int(u), float(loss)) for e, loss, u in VALID_LINE.findall(log.read_text(errors="replace"))]


def train_log(save_dir: Path) -> Path:
    return Path(save_dir) / "hydra_train.log"


def stats(save_dir: Path) -> Dict[str, Optional[float]]:
    """Parameters and training speed (target tokens/s, fairseq's wps) from a run's hydra_train.log.

    The speed is the median of the per-epoch wps weighted by the updates of each epoch (epochs of a resumed run
    count once each). fairseq's epoch wps counts wall time, so an epoch during which the run was paused, or shared
    the machine with a burst of other work, reads far lower than the rest; the median leaves such an epoch out
    where a mean would carry it.
    """
    path = train_log(save_dir)
    params: Optional[int] = None
    epochs: List[Tuple[float, int]] = []  # (wps, updates) per epoch summary
    last = 0
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            match = _PARAMS.search(line)
            if match:
                params = int(match.group(1).replace(",", ""))
            match = _TRAIN_EPOCH.search(line)
            if match:
                wps, num_updates = float(match.group(1)), int(match.group(2))
                epochs.append((wps, max(num_updates - last, 0)))
                last = num_updates
    return {"params": params, "train_wps": weighted_median(epochs), "updates": last or None}


def weighted_median(values: Sequence[Tuple[float, int]]) -> Optional[float]:
    """The value at which the cumulative weight first reaches half the total, over (value, weight) pairs (the
    lower of the two middle values where the weights split evenly); None without weight."""
    ordered = sorted((value, weight) for value, weight in values if weight > 0)
    total = sum(weight for _, weight in ordered)
    if not total:
        return None
    reached, index = 0, 0
    while 2 * (reached + ordered[index][1]) < total:  # stops at the last pair at the latest
        reached += ordered[index][1]
        index += 1
    return round(ordered[index][0], 1)


def final_train_loss(save_dir: Path) -> Optional[float]:
    """The train loss of the last epoch summary line."""
    losses = re.findall(r"\[train\]\[INFO\] - epoch \d+ \| loss ([\d.]+)", train_log(save_dir).read_text()) \
        if train_log(save_dir).exists() else []
    return float(losses[-1]) if losses else None


#: the plugin's log lines of where the methods sit: ``LocalityPlan.describe()`` and the MAN layers' orders, in
#: hydra's log format ("...][INFO] - locality: ...") and fairseq-train's ("... | INFO | ... | locality: ...")
_LOCALITY = re.compile(r"(?:\] -|\|) locality: (.*)$", re.MULTILINE)
_MAN_LAYERS = re.compile(r"(?:\] -|\|) MAN layers: encoder (\S+), decoder (\S+),", re.MULTILINE)
_PLACED = re.compile(r"(encoder|decoder|cross) layer (\d+): (.+)")
ATTENTION_ORDER = ("encoder", "decoder", "cross")  # the order a placement is written in


def _layer_ranges(layers: Sequence[int]) -> str:
    """1,2,3,5 -> '1-3,5'."""
    ranges: List[List[int]] = []
    for layer in sorted(set(layers)):
        if ranges and layer == ranges[-1][1] + 1:
            ranges[-1][1] = layer
        else:
            ranges.append([layer, layer])
    return ",".join(f"{a}-{b}" if b > a else f"{a}" for a, b in ranges)


def placement(log: Path) -> Optional[str]:
    """Where a run's methods sit, from the lines the plugin logs when it builds the model: per method, the
    attention types and 1-based layers ('gaussian: encoder 1-3; relpos: encoder 1-3, decoder 1-3'), the MAN
    layers' sublayer orders, or 'none' for plain attention (fairseq's own models log neither line). None
    without a log."""
    if not log.is_file():
        return None
    text = log.read_text(errors="replace")
    described = _LOCALITY.findall(text)
    man = _MAN_LAYERS.findall(text)
    where: Dict[str, Dict[str, List[int]]] = {}  # method -> attention type -> layers
    seen: Dict[Tuple[str, str], int] = {}  # (method, attention type) -> order of first mention
    for entry in (described[-1].split("; ") if described else []):  # a resumed run logs it again, the same
        match = _PLACED.fullmatch(entry.strip())
        if match:
            kind, layer, methods = match.groups()
            for method in methods.split(", "):
                where.setdefault(method, {}).setdefault(kind, []).append(int(layer))
                seen.setdefault((method, kind), len(seen))

    def first_place(method: str) -> Tuple[int, int]:  # encoder methods first, then decoder, then cross
        kind = min(where[method], key=ATTENTION_ORDER.index)
        return ATTENTION_ORDER.index(kind), seen[(method, kind)]

    parts = [f"{method}: " + ", ".join(f"{kind} {_layer_ranges(where[method][kind])}"
                                       for kind in sorted(where[method], key=ATTENTION_ORDER.index))
             for method in sorted(where, key=first_place)]
    if man:
        encoder, decoder = man[-1]
        parts.append(f"MAN layers: encoder {encoder}, decoder {decoder} (every layer)")
    return "; ".join(parts) or "none"


_CONFIG_LINE = re.compile(r"^\[[^\]]*\]\[fairseq_cli\.train\]\[INFO\] - (\{'_name'.*\})$", re.MULTILINE)
_LOADED = re.compile(r"Loaded checkpoint \S+ \(epoch (\d+) @ (\d+) updates\)")
_EPOCH_LR = re.compile(r"\[train\]\[INFO\] - epoch (\d+) \|.*?\| lr ([\d.e-]+)")


#: configuration keys that say where a training's files and processes are, not how it trains: a checkout or a
#: data-bin moved between two starts changes them, and the training is the same (Hydra's logging configuration,
#: ``job_logging_cfg.*``, which names the log file in the save directory, is left out likewise)
_WHERE_NOT_HOW = frozenset({"common.user_dir", "task.data", "checkpoint.save_dir", "checkpoint.restore_file",
                            "common.tensorboard_logdir", "distributed_training.distributed_port",
                            "distributed_training.distributed_init_method", "distributed_training.device_id",
                            "distributed_training.distributed_rank"})


def _says_where(key: str) -> bool:
    """A key of :data:`_WHERE_NOT_HOW`, or of Hydra's logging configuration."""
    return key in _WHERE_NOT_HOW or key.startswith("job_logging_cfg.")


def _flat(config: dict, prefix: str = "") -> dict:
    """A logged configuration as {dotted key: value}."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def resume_deviations(log: Path) -> List[str]:
    """Where a resumed training did not go on as the same training uninterrupted, read from its hydra_train.log;
    [] for a run that was never resumed or resumed exactly.

    Training is deterministic given the update count (fairseq seeds every update with ``seed + num_updates``), so
    a resume can only depart through what fairseq keeps in memory (``compat.resume_where_training_stopped``). The
    log shows both: every epoch's learning rate against the plateau schedule run over the logged validation losses
    (``reduce_lr_on_plateau``: torch's ReduceLROnPlateau, relative threshold, stepped after each epoch that ends
    past the warm-up), and the last epoch against the epoch at which ``--patience`` (fairseq's
    ``should_stop_early``: a strictly lower loss resets the count) stops the uninterrupted training. Every start
    logs its configuration too: a resume with another one (``--fp16`` added, a dropout changed) is named, except
    for the keys that only say where the files are (:func:`_says_where`).
    """
    if not log.is_file():
        return []
    text = log.read_text(errors="replace")
    config = _CONFIG_LINE.search(text)
    if config is None or not _LOADED.search(text):
        return []
    cfg = ast.literal_eval(config.group(1))
    found: List[str] = []
    first = _flat(cfg)
    for start, later in enumerate(_CONFIG_LINE.findall(text)[1:], 2):  # every start logs its configuration
        other = _flat(ast.literal_eval(later))
        changed = [f"{key} {first.get(key)!r} -> {other.get(key)!r}" for key in dict.fromkeys([*first, *other])
                   if not _says_where(key) and first.get(key) != other.get(key)]
        if changed:
            found.append(f"start {start} resumed with another configuration: {'; '.join(changed)}")
    points = validation_points(log)
    valid = {epoch: loss for epoch, _, loss in points}  # a repeated epoch: the later one counts
    ends = {epoch: updates for epoch, updates, _ in points}
    rates = {int(epoch): float(lr) for epoch, lr in _EPOCH_LR.findall(text)}
    maximize = bool(cfg["checkpoint"].get("maximize_best_checkpoint_metric"))

    schedule = cfg.get("lr_scheduler") or {}
    if schedule.get("_name") == "reduce_lr_on_plateau":
        threshold, patience = float(schedule["lr_threshold"]), int(schedule["lr_patience"])
        shrink = float(schedule["lr_shrink"])
        lowers = "halves" if shrink == 0.5 else f"multiplies by {shrink:g}"
        best, bad = None, 0
        for epoch in sorted(valid):
            if ends[epoch] <= int(schedule.get("warmup_updates") or 0):
                continue  # fairseq steps the schedule only once the warm-up is over
            loss = valid[epoch]
            better = best is None or (loss > best * (1 + threshold) if maximize else loss < best * (1 - threshold))
            best, bad = (loss, 0) if better else (best, bad + 1)
            halved = bad > patience
            bad = 0 if halved else bad
            if epoch in rates and epoch + 1 in rates:
                expected = rates[epoch] * (shrink if halved else 1.0)
                if abs(rates[epoch + 1] - expected) > 1e-3 * expected + 1e-7:  # the log rounds the rate
                    found.append(f"epoch {epoch + 1} trained at lr {rates[epoch + 1]:g}; after epoch {epoch}'s "
                                 f"validation loss the schedule {lowers if halved else 'keeps'} it "
                                 f"({expected:g})")

    stop_patience = int(cfg["checkpoint"].get("patience") or 0)
    if stop_patience > 0:
        best, runs = None, 0
        for epoch in sorted(valid):
            loss = valid[epoch]
            if best is None or (loss > best if maximize else loss < best):
                best, runs = loss, 0
                continue
            runs += 1
            if runs >= stop_patience:
                if max(valid) > epoch:
                    found.append(f"trained to epoch {max(valid)}; early stopping (patience {stop_patience}) ends "
                                 f"the uninterrupted training after epoch {epoch}")
                break
    return found


_INNER = re.compile(r"\[train_inner\].*?loss=([\d.]+).*?wps=([\d.]+).*?num_updates=(\d+)")


def progress_main(argv: Sequence[str]) -> int:
    """Filter a training's output (stdin) into one progress line per log interval; on a failure,
    show the end of the output."""
    parser = argparse.ArgumentParser(prog="launch.py progress", description=progress_main.__doc__)
    parser.add_argument("name", help="the run's name, printed on every line")
    parser.add_argument("total", type=int_at_least(1),
                        help="the number of updates the run will make")
    args = parser.parse_args(argv)
    name, total = args.name, args.total
    tail: List[str] = []
    done = False
    for line in sys.stdin:
        tail = (tail + [line])[-40:]
        match = _INNER.search(line)
        if match:
            loss, wps, step = float(match.group(1)), float(match.group(2)), int(match.group(3))
            print(f"    {name}: update {step}/{total} ({100 * step // total}%)  loss {loss:.2f}  {wps:.0f} words/s",
                  flush=True)
        elif "done training" in line or "effective batch" in line:
            done = done or "done training" in line
            print("    " + line.split(" - ")[-1].strip(), flush=True)
    if not done:
        sys.stdout.write("".join(tail))
    return 0


def compare_main(argv: Sequence[str]) -> int:
    """Side-by-side markdown table of runs: NAME=SAVE_DIR:EVAL_DIR ... (the first is the baseline)."""
    parser = argparse.ArgumentParser(prog="launch.py compare", description=compare_main.__doc__)
    parser.add_argument("out", help="markdown file to write (also printed)")
    parser.add_argument("runs", nargs="+", metavar="NAME=SAVE_DIR:EVAL_DIR", help="runs to compare; the first is the baseline")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    args = parser.parse_args(argv)
    out = Path(args.out)
    problem = result_file_problem(str(out), "OUT", args.overwrite)
    if problem:
        parser.error(problem)
    rows = []
    for spec in args.runs:
        if "=" not in spec or ":" not in spec.split("=", 1)[1]:
            parser.error(f"expected NAME=SAVE_DIR:EVAL_DIR, got {spec!r}")
        name, dirs = spec.split("=", 1)
        save_dir, eval_dir = dirs.split(":", 1)
        scores_path = Path(eval_dir) / SCORES
        if not Path(save_dir).is_dir():
            parser.error(f"{name}: SAVE_DIR {save_dir}: no such directory")
        if not scores_path.is_file():
            parser.error(f"{name}: EVAL_DIR {eval_dir} holds no {SCORES} (evaluate the run first: scripts/evaluate.sh)")
        try:
            scores = json.loads(scores_path.read_text(encoding="utf-8"))
        except ValueError as err:
            parser.error(f"{name}: {scores_path} is not JSON ({err}): evaluate the run again (scripts/evaluate.sh)")
        rows.append((name, stats(Path(save_dir)), scores))
    lines = ["| model | sacreBLEU | chrF | tokenized BLEU | parameters | training speed (words/s) | updates |",
             "|---|---|---|---|---|---|---|"]
    for name, run, scores in rows:
        sacre = (scores.get("sacrebleu") or {}).get("score")
        mark = ((scores.get("significance") or {}).get("sacrebleu") or {}).get("mark", "")
        tok = (scores.get("tokenized_bleu") or {}).get("score")
        chrf = (scores.get("chrf") or {}).get("score")
        wps = run["train_wps"]
        lines.append(
            f"| {name} | {_num(sacre)}{(' ' + mark) if mark else ''} | {_num(chrf)} | {_num(tok)} "
            f"| {_params(run['params'])} "
            f"| {_num(wps, 0)} | {run['updates'] or 'n/a'} |"
        )
    signature = next(((s.get("sacrebleu") or {}).get("signature") for _, _, s in rows if s.get("sacrebleu")), None)
    notes = ["", "sacreBLEU/chrF on detokenized output (↑/⇑: better than the first row, paired bootstrap "
             "p < 0.05/0.01); words/s: fairseq's wps (target subword tokens per second), mean over training, under whatever "
             "else ran on the machine at the time: not a speed comparison (docs/benchmark.md measures that)."]
    if signature:
        notes.append(f"sacreBLEU signature: {signature}")
    table = "\n".join(lines + notes) + "\n"
    print(table)
    write_atomically(out, table)
    return 0


def _params(value: Optional[int]) -> str:
    return "n/a" if value is None else f"{value / 1e6:.2f}M"


def _num(value: Optional[float], digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def stats_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="launch.py stats", description="parameters and training speed of runs as JSON")
    parser.add_argument("save_dirs", nargs="+")
    args = parser.parse_args(argv)
    missing = [d for d in args.save_dirs if not Path(d).is_dir()]
    if missing:
        parser.error(f"{', '.join(missing)}: no such directory (give save directories)")
    print(json.dumps({d: stats(Path(d)) for d in args.save_dirs}, indent=2))
    return 0


