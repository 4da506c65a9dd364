"""The guard every writer of a training run directory goes through before it writes anything.

fairseq resumes from ``SAVE_DIR/checkpoint_last.pt`` whatever that checkpoint is. Two cases change a user's
run directory without asking:

* the directory holds **another architecture's** run: fairseq refuses to load the checkpoint, but only
  after Hydra has rewritten ``.hydra/`` and appended the wrong model to ``hydra_train.log``;
* the directory holds a training **further along** than the one requested (``max_update`` below the
  checkpoint's updates): fairseq stops at once and the run is reported at the checkpoint's updates.

:func:`check_run_dir` refuses both, naming what is there and how to start fresh.

A third case is fairseq's own: it saves the first of a save's checkpoints atomically (``NAME.tmp``, then a
rename) and *copies* it to the others, ``checkpoint_last.pt`` last. A training killed during that copy leaves a
``checkpoint_last.pt`` cut short, which fairseq cannot resume from, beside the intact checkpoint it was copied
from. The guard names that checkpoint and the two commands that resume from it; the comparison command, which
owns its run directories, does the same itself (:func:`restore_cut_short_checkpoint`), keeping the cut file.

``scripts/train.sh`` (and so ``reproduce.sh`` and ``quickstart.sh``, which train through it) and the
comparison command call the guard through :meth:`.launch.Launch.validate`.

Two processes on one machine must not train into the same directory at once: each would resume from the other's
checkpoints and overwrite them. Whoever trains holds :func:`training_lock` on the directory for as long as it
writes there. ``train.sh`` refuses a directory another process holds, naming that process; the comparison command
waits for it and then counts the run as the other process left it (finished: not trained again).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import shlex
import shutil
import socket
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Optional


class RunDirError(RuntimeError):
    """A run directory that this training must not write into; the message says what is there."""


class RunDirBusy(RunDirError):
    """A run directory another process is training into (it holds the directory's :func:`training_lock`)."""


#: the lock file inside a save directory: an flock, which the kernel releases when its process ends, however it
#: ends, so a killed training leaves no stale lock; its text names the process that holds it
LOCK_FILE = ".training.lock"


@contextlib.contextmanager
def training_lock(save_dir: Path, wait: Optional[Callable[[str], None]] = None,
                  patience_s: float = 0.0) -> Iterator[int]:
    """Hold ``save_dir``'s training lock for the body of the ``with``. Held by another process: with ``wait``, call
    it once with who holds it and block until it is released; without, try again for ``patience_s`` seconds (a
    requeued cluster job whose predecessor is still exiting), then raise :class:`RunDirBusy` naming the holder.

    The ``with`` gives the lock file's descriptor: pass it to the training processes (``pass_fds``), and the lock
    stays held until they end too, so that a training left running by a killed parent still keeps others out.

    An flock guards processes of one machine, and of a shared file system that passes flock on (NFS does): two
    machines whose file systems do not are not kept apart."""
    save_dir = Path(save_dir)
    save_dir.mkdir(parents=True, exist_ok=True)
    with open(save_dir / LOCK_FILE, "a+", encoding="utf-8") as handle:
        deadline = time.monotonic() + patience_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if wait is None and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            if wait is None:
                raise RunDirBusy(f"{save_dir} is being trained into by {holder}: wait for it to finish, stop it, "
                                 "or choose another --save-dir; nothing was written")
            wait(holder)
            fcntl.flock(handle, fcntl.LOCK_EX)
            break
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} (and the trainings it started) on {socket.gethostname()} since "
                     f"{datetime.datetime.now().isoformat(timespec='seconds')}: {shlex.join(sys.argv)}\n")
        handle.flush()
        try:
            yield handle.fileno()
        finally:
            handle.seek(0)
            handle.truncate()


@dataclass(frozen=True)
class RunState:
    """What a run directory holds: the architecture and progress of its latest checkpoint."""

    arch: Optional[str]
    num_updates: int
    source: Path  # the file the architecture was read from
    #: a checkpoint_last.pt cut short by an interrupted copy of ``source`` (the intact checkpoint fairseq saved
    #: first and was copying); None where checkpoint_last.pt is whole
    cut_short: Optional[Path] = None
    #: validations without a better loss when the checkpoint was saved (fairseq's ``should_stop_early`` count, kept
    #: by the plugin, :func:`fairseq_localness.compat.resume_where_training_stopped`); None where it is not recorded
    epochs_without_improvement: Optional[int] = None


CONFIG_RECORD = Path(".hydra") / "config.yaml"


def read_run_state(save_dir: Path) -> Optional[RunState]:
    """The architecture and updates of ``save_dir``'s run, or None for a directory with no run in it.

    The checkpoint fairseq would resume from (``checkpoint_last.pt``) is read first; a directory with only
    Hydra's record of a run that never reached a checkpoint is read from ``.hydra/config.yaml``.
    """
    save_dir = Path(save_dir)
    last = save_dir / "checkpoint_last.pt"
    if last.is_file():
        try:
            return _checkpoint_state(last)
        except RunDirError:
            source = _copy_source(last)
            if source is None:
                raise
            return replace(source, cut_short=last)
    config = read_config_record(save_dir)
    if config is not None:
        return RunState((config.get("model") or {}).get("_name"), 0, save_dir / CONFIG_RECORD)
    return None


def read_config_record(save_dir: Path) -> Optional[dict]:
    """Hydra's record of the run in ``save_dir`` (``.hydra/config.yaml``) as a dict, or None where there is none."""
    record = Path(save_dir) / CONFIG_RECORD
    if not record.is_file():
        return None
    import yaml

    return yaml.safe_load(record.read_text(encoding="utf-8")) or {}


def _checkpoint_state(path: Path) -> RunState:
    import torch

    from .. import compat

    # the plugin's allow-list of fairseq's checkpoint classes, added for the whole process (not
    # torch.serialization.safe_globals(...): leaving that context removes the classes it names, even ones the
    # plugin had allowed before, and every later checkpoint load in the process would fail)
    compat.apply()
    try:
        state = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception as err:  # a truncated file, or not a checkpoint at all
        raise RunDirError(f"{path} cannot be read as a fairseq checkpoint ({type(err).__name__}: {err}); "
                          "move it away or choose another --save-dir") from None
    arch = None
    cfg = state.get("cfg")
    if cfg is not None:
        model = cfg.get("model") if isinstance(cfg, dict) else getattr(cfg, "model", None)
        arch = getattr(model, "arch", None) or getattr(model, "_name", None) or \
            (model.get("_name") if isinstance(model, dict) else None)
    if arch is None and state.get("args") is not None:  # checkpoints of fairseq's argparse days
        arch = getattr(state["args"], "arch", None)
    history = state.get("optimizer_history") or [{}]
    updates = int(history[-1].get("num_updates", 0) or 0)
    stopping = ((state.get("extra_state") or {}).get(compat.RESUME_STATE) or {}).get("early_stopping") or {}
    without_improvement = int(stopping["num_runs"]) if "num_runs" in stopping else None
    return RunState(arch, updates, path, epochs_without_improvement=without_improvement)


def _copy_source(last: Path) -> Optional[RunState]:
    """The intact checkpoint an unreadable ``last`` is an interrupted copy of, or None.

    fairseq copies the checkpoint it saved first, so the source is the readable checkpoint of the directory with
    the most updates, saved no later than ``last`` was written and larger than what the copy wrote of it."""
    best: Optional[RunState] = None
    for path in sorted(last.parent.glob("checkpoint*.pt")):
        if path == last or path.stat().st_size <= last.stat().st_size or path.stat().st_mtime > last.stat().st_mtime:
            continue
        try:
            state = _checkpoint_state(path)
        except RunDirError:
            continue
        if best is None or state.num_updates > best.num_updates:
            best = state
    return best


def restore_cut_short_checkpoint(save_dir: Path) -> Optional[str]:
    """Where ``save_dir``'s checkpoint_last.pt is an interrupted copy, keep it as ``checkpoint_last.pt.cut-short``
    and put a whole copy of its intact source in its place (written to a temporary name, then renamed, so that
    this copy cannot be cut short in turn). Returns what was done, or None where there was nothing to restore."""
    state = read_run_state(Path(save_dir))
    if state is None or state.cut_short is None:
        return None
    kept = state.cut_short.with_name(state.cut_short.name + ".cut-short")
    number = 1
    while kept.exists():  # an earlier interruption's file stays too
        number += 1
        kept = state.cut_short.with_name(f"{state.cut_short.name}.cut-short.{number}")
    state.cut_short.rename(kept)
    partial = state.cut_short.with_name(state.cut_short.name + ".restoring")
    shutil.copyfile(state.source, partial)
    partial.replace(state.cut_short)
    return (f"{state.cut_short.name} was cut short by an interrupted copy (kept as {kept.name}); "
            f"restored from {state.source.name} ({state.num_updates} updates)")


def check_run_dir(save_dir: Path, arch: str, max_update: Optional[int],
                  fresh_hint: str = "--save-dir", accept_cut_short: bool = False) -> Optional[RunState]:
    """Refuse (:class:`RunDirError`) a run directory that holds another architecture's run, or a run
    further along than ``max_update`` (0 or None: no update limit). An empty or missing directory, or a
    run of ``arch`` that this training continues, passes; the state found is returned (None: no run).
    A run already at ``max_update`` passes too, and :func:`finished` tells the caller not to start fairseq:
    resumed, fairseq would take one more update before it checks the limit, and rewrite the checkpoints.
    A checkpoint_last.pt cut short by an interrupted copy is refused with the commands that restore it, unless
    ``accept_cut_short`` (a caller that runs :func:`restore_cut_short_checkpoint` before it trains)."""
    state = read_run_state(Path(save_dir))
    if state is None:
        return None
    fresh = (f"choose another {fresh_hint}, or move {save_dir} away to start fresh; "
             "nothing in it was changed")
    if state.cut_short is not None and not accept_cut_short:
        last = state.cut_short
        raise RunDirError(
            f"{last} is cut short: the training was stopped while fairseq copied {state.source.name} "
            f"({state.num_updates} updates) to it, and fairseq cannot resume from it. {state.source.name} is intact; "
            f"to resume from it: mv {last} {last}.cut-short && cp {state.source} {last}. Or {fresh}")
    if state.arch is not None and state.arch != arch:
        what = f"{state.num_updates} updates" if state.source.suffix == ".pt" else "no checkpoint yet"
        raise RunDirError(f"{save_dir} holds a run of architecture {state.arch} ({state.source.name}, {what}), "
                          f"not {arch}: {fresh}")
    if max_update and state.num_updates > max_update:
        raise RunDirError(
            f"{save_dir} holds a training at {state.num_updates} updates ({state.source.name}), further than the "
            f"requested max_update={max_update}: fairseq would train one more update, stop, and leave a "
            f"{state.num_updates + 1}-update model in its place. Raise max_update to continue that training, or {fresh}")
    return state


def finished(state: Optional[RunState], max_update: Optional[int], patience: Optional[int] = None) -> Optional[str]:
    """Why a run (of the requested architecture) has finished training already, or None: it has reached
    ``max_update``, or its checkpoint was saved when early stopping ended it (``patience`` validations without a
    better loss). Resumed, fairseq would train on: one more update past ``max_update``, and after early stopping
    one more epoch, since its loop asks ``should_stop_early`` only after training an epoch (a run killed between
    that checkpoint and its exit would come back with an epoch its uninterrupted training never had)."""
    if state is None or state.source.suffix != ".pt":
        return None
    if max_update and state.num_updates >= max_update:
        return f"at optimization.max_update={max_update}"
    if patience and patience > 0 and (state.epochs_without_improvement or 0) >= patience:
        return (f"stopped early: its last checkpoint was saved after {state.epochs_without_improvement} "
                f"validations without a better loss (checkpoint.patience={patience})")
    return None
