"""The one process runner of ``experiments/``: start child processes together, wait for all, stop the rest when
one fails, and stop them all (with a grace period) on request.

Used by the launcher (a training's processes: one per CPU rank, or fairseq's own spawner for GPUs), by the cluster
jobs (:mod:`.cluster_jobs`: the same, stopped by submitit's preemption hook) and by the comparison (one training's
output streamed to its log).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

#: seconds children get to exit after SIGTERM before they are killed (submitit signals 120 s before the limit)
STOP_GRACE_S = 30

#: glibc's allocator settings for training on the CPU, where the user's environment sets none of them. With the
#: defaults a training returns freed memory to the system and faults it back in at the next step (20 to 30% of
#: its CPU time went to the kernel in the comparison's Multi30k runs). These keep blocks up to 32 MiB (glibc's
#: largest threshold) in the heap, grow it 512 MiB at a time and never shrink it: the process keeps its peak
#: memory, which a training reaches at every step anyway. Other allocators and platforms ignore them. Measured
#: in docs/training.md ("CPU memory allocator").
CPU_ALLOCATOR_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2 ** 20),
    "MALLOC_TOP_PAD_": str(512 * 2 ** 20),
    "MALLOC_TRIM_THRESHOLD_": str(4 * 2 ** 30),
}


def cpu_training_env(base: Dict[str, str], one_thread: bool) -> Dict[str, str]:
    """``base`` with what a CPU training's processes need: :data:`CPU_ALLOCATOR_ENV` where ``base`` sets none of
    it (one setting of the user's means the user chose), and one thread each (``one_thread``: several ranks share
    the cores)."""
    env = dict(base)
    if not any(name in env for name in CPU_ALLOCATOR_ENV):
        env.update(CPU_ALLOCATOR_ENV)
    if one_thread:
        env["OMP_NUM_THREADS"] = "1"
    return env


def allocator_line(env: Dict[str, str]) -> str:
    """The log line that says which allocator settings a CPU training ran with (its speed depends on them)."""
    chosen = " ".join(f"{name}={env[name]}" for name in CPU_ALLOCATOR_ENV if name in env)
    return f"CPU allocator: {chosen or 'glibc defaults'}"


class Children:
    """Child processes started together. With ``own_groups`` each starts its own process group (session), so that a
    stop reaches the workers it spawns too (fairseq's GPU workers)."""

    def __init__(self) -> None:
        self.procs: List[subprocess.Popen] = []
        self.own_groups = False

    def start(self, commands: Sequence[Sequence[str]], env: Optional[Dict[str, str]] = None,
              own_groups: bool = False, **popen) -> "Children":
        self.own_groups = own_groups
        self.procs = [subprocess.Popen(list(c), env=env, start_new_session=own_groups, **popen) for c in commands]
        return self

    def wait(self) -> int:
        """Wait for every child; when one fails, stop the others. Returns the first non-zero exit code (0: all ok)."""
        code = 0
        for proc in self.procs:
            rc = proc.wait()
            if rc and not code:
                code = rc
                self.stop()
        return code

    def signal(self, signum: int) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                continue
            try:
                if self.own_groups:
                    os.killpg(proc.pid, signum)  # the group outlives its leader while fairseq's workers run
                else:
                    proc.send_signal(signum)
            except ProcessLookupError:
                pass

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM every child, SIGKILL what still runs after ``grace_s``. Reaps with os.waitpid, not Popen.wait:
        this may run inside submitit's signal handler while a Popen.wait of the same child holds its lock."""
        self.signal(signal.SIGTERM)
        deadline = time.time() + grace_s
        for proc in self.procs:
            while not reaped(proc) and time.time() < deadline:
                time.sleep(0.2)
            if not reaped(proc):
                self.signal(signal.SIGKILL)
                while not reaped(proc):
                    time.sleep(0.2)


def reaped(proc: subprocess.Popen) -> bool:
    if proc.returncode is not None:
        return True
    try:
        pid, status = os.waitpid(proc.pid, os.WNOHANG)
    except ChildProcessError:
        return True
    if pid:
        proc.returncode = os.waitstatus_to_exitcode(status)
    return bool(pid)


def run_processes(commands: List[List[str]], cpu_workers: bool, cpu: bool = False,
                  pass_fds: Sequence[int] = ()) -> int:
    """Start every command, wait for all; if one fails, stop the others. Returns the first non-zero code
    (130 after Ctrl-C, which reaches every child). ``cpu``: a training on the CPU (:func:`cpu_training_env`);
    ``cpu_workers``: several CPU ranks, one thread each, in process groups of their own. ``pass_fds`` stay open
    in the children (a training lock: held while they run, even if this process is killed first)."""
    env = cpu_training_env(os.environ, cpu_workers) if cpu or cpu_workers else dict(os.environ)
    children = Children().start(commands, env=env, own_groups=cpu_workers, pass_fds=tuple(pass_fds))
    try:
        return children.wait()
    except KeyboardInterrupt:
        children.signal(signal.SIGINT)
        for proc in children.procs:
            proc.wait()
        return 130


def stream(command: List[str], log: Path, env: Dict[str, str], on_line: Optional[Callable[[str], None]] = None,
           pass_fds: Sequence[int] = ()) -> int:
    """Run ``command`` with its output appended to ``log``; ``on_line`` sees every line. Stopped with it.
    ``pass_fds`` stay open in the child (as :func:`run_processes`).

    The log is line-buffered: each line is in the file once it is read, so ``tail -f`` follows the training
    and a killed process (``kill -9``, a machine going away) loses nothing it had read.
    """
    import datetime
    import shlex

    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8", buffering=1) as out:
        out.write(f"\n# {datetime.datetime.now().isoformat(timespec='seconds')} {shlex.join(command)}\n")
        children = Children().start([command], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    errors="replace", pass_fds=tuple(pass_fds))
        proc = children.procs[0]
        try:
            for line in proc.stdout:
                out.write(line)
                if on_line:
                    on_line(line)
        except BaseException:
            children.stop(grace_s=5)
            raise
        return proc.wait()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_alive(pid: int) -> bool:
    """True while PID runs (a zombie, i.e. an ended child nobody waited for yet, counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
