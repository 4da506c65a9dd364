"""The functions that cluster jobs run (pickled by submitit, run on the compute node or as a local subprocess).

:class:`TrainJob` trains with the launcher's commands for its node; :class:`EvalJob` runs a table row's
``evaluate.sh`` once the jobs it depends on have succeeded. Both have submitit's ``checkpoint`` method:
on preemption or at the time limit submitit calls it (rank 0 only), it stops the child processes and
returns the job to requeue, which starts over: fairseq resumes from ``checkpoint_last.pt`` in the save
dir (saved every ``checkpoint.save_interval_updates`` and at epoch ends), so at most the updates since
the last save are repeated.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .launch import Launch, describe
from .processes import STOP_GRACE_S, Children, allocator_line, cpu_training_env, process_alive
from .rundir import RunDirBusy, training_lock
from .runlog import stats



class _ChildJob:
    """A job whose work runs in child processes that ``checkpoint`` can stop before the requeue."""

    def __init__(self) -> None:
        self._children = Children()

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_children"] = Children()  # processes do not travel with the pickled job
        return state

    def _run(self, commands: Sequence[Sequence[str]], env: Optional[Dict[str, str]] = None,
             pass_fds: Sequence[int] = ()) -> int:
        """Start every command (each in its own process group, so that fairseq's GPU workers stop with it),
        wait for all; if one fails, stop the others. Returns the first non-zero exit code. ``pass_fds`` stay
        open in the children (a training lock)."""
        self._children = Children().start(commands, env=dict(os.environ, **(env or {})), own_groups=True,
                                          pass_fds=tuple(pass_fds))
        code = self._children.wait()
        self._children = Children()
        return code

    def _stop(self) -> None:
        self._children.stop(STOP_GRACE_S)

    def checkpoint(self, *args: Any, **kwargs: Any):
        """submitit's preemption/timeout hook: stop the children and requeue a fresh copy of this job."""
        from submitit.helpers import DelayedSubmission

        print("preempted or at the time limit: stopping and requeueing (training resumes from "
              "checkpoint_last.pt)", flush=True)
        self._stop()
        return DelayedSubmission(self.__class__(**self.arguments()), *args, **kwargs)

    def arguments(self) -> Dict[str, Any]:
        """The keyword arguments that rebuild this job for the requeued copy (each job kind defines them)."""
        raise NotImplementedError(f"{type(self).__name__} must define arguments() to be requeued")


#: how long a training job waits for its save directory's lock: a requeued job can start while the job it replaces
#: is still stopping its processes
LOCK_PATIENCE_S = 120.0


class TrainJob(_ChildJob):
    """Train ``launch`` with ``plan`` (its effective-batch split) on this job's node(s).

    One Slurm task per node; each task runs the launcher's command for its node rank, with node 0's
    hostname as the rendezvous address. The port is ``master_port`` of the launch, or derived from the
    job id (``port_from_job``), so that two jobs sharing a node do not collide.
    """

    def __init__(self, launch: Launch, plan: Dict[str, int], port_from_job: bool = True) -> None:
        super().__init__()
        self.launch, self.plan, self.port_from_job = launch, plan, port_from_job

    def arguments(self) -> Dict[str, Any]:
        return {"launch": self.launch, "plan": self.plan, "port_from_job": self.port_from_job}

    def node_launch(self, env) -> Launch:
        if self.launch.nodes == 1:
            return self.launch
        port = 20000 + int(env.raw_job_id) % 20000 if self.port_from_job else self.launch.master_port
        return replace(self.launch, node_rank=env.node, master_addr=env.hostnames[0], master_port=port)

    def __call__(self) -> Dict[str, Any]:
        import submitit

        env = submitit.JobEnvironment()
        launch = self.node_launch(env)
        save_dir = Path(launch.save_path)
        save_dir.mkdir(parents=True, exist_ok=True)
        resume = (save_dir / "checkpoint_last.pt").exists()
        print(f"job {env.job_id} on {env.hostname} (node {env.node} of {env.num_nodes}, pid {os.getpid()}); "
              f"training log: {save_dir / 'hydra_train.log'}" + ("; resuming from checkpoint_last.pt" if resume else ""),
              flush=True)
        print(describe(launch, self.plan), flush=True)
        commands = launch.commands(self.plan)
        for command in commands:
            print(" ".join(shlex.quote(c) for c in command), flush=True)
        cpu_workers = not launch.gpus and launch.cpu_procs > 1
        child_env = None if launch.gpus else cpu_training_env(os.environ, cpu_workers)
        if child_env is not None:
            print(allocator_line(child_env), flush=True)
        with contextlib.ExitStack() as held:
            lock = ()
            if launch.node_rank == 0:  # node 0 writes the checkpoints; the other nodes only log, into save_dir/nodeR
                try:
                    lock = (held.enter_context(training_lock(save_dir, patience_s=LOCK_PATIENCE_S)),)
                except RunDirBusy as err:
                    raise RuntimeError(str(err)) from None
            code = self._run(commands, child_env, pass_fds=lock)
        if code:
            raise RuntimeError(f"training exited with code {code} (see {save_dir / 'hydra_train.log'})")
        return {"save_dir": str(save_dir), **stats(save_dir)}


class EvalJob(_ChildJob):
    """Run ``command`` (evaluate.sh) after the jobs whose result files are ``after`` have succeeded.

    On Slurm the dependency (afterok) has already waited; the local executor has none, so the job
    polls the result files while the local jobs (``local_pids``) still run.
    """

    def __init__(self, command: List[str], after: List[str], local_pids: Optional[List[int]] = None,
                 poll_s: float = 2.0) -> None:
        super().__init__()
        self.command, self.after, self.local_pids, self.poll_s = command, after, local_pids or [], poll_s

    def arguments(self) -> Dict[str, Any]:
        return {"command": self.command, "after": self.after, "local_pids": self.local_pids, "poll_s": self.poll_s}

    def wait_for_dependencies(self) -> None:
        import cloudpickle


        for result in map(Path, self.after):
            # Slurm's afterok has waited; a shared file system may show the result file a little later
            grace = time.time() + 120
            while not result.exists():
                running = any(process_alive(pid) for pid in self.local_pids)
                if not running and time.time() > (grace if not self.local_pids else 0):
                    raise RuntimeError(f"the job this evaluation waits for ended without a result ({result})")
                time.sleep(self.poll_s)
            with open(result, "rb") as handle:
                outcome, value = cloudpickle.load(handle)
            if outcome != "success":
                raise RuntimeError(f"not evaluated: the job it depends on failed ({result}):\n{value}")

    def __call__(self) -> str:
        self.wait_for_dependencies()
        print(" ".join(shlex.quote(c) for c in self.command), flush=True)
        code = self._run([self.command])
        if code:
            raise RuntimeError(f"evaluation exited with code {code}")
        return "evaluated"
