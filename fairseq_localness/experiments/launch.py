"""Start fairseq-hydra-train on a benchmark setting of configs/ with the paper's effective batch.

Every benchmark file in ``configs/benchmark/`` is written for one device:
``dataset.max_tokens x optimization.update_freq`` is the number of tokens the
paper put into one update (e.g. Yang et al. 2018: 8 GPUs x 4096 tokens =
4096 x update_freq 8). On W devices with T tokens each, the launcher sets

    update_freq = paper_tokens / (W * T)

and refuses a split that is not a whole number, so that every run, on one CPU
or 64 GPUs, takes the same optimisation steps as the paper.

Used by ``scripts/train.sh`` (``python scripts/launch.py train ...``, or the
``fairseq-localness-launch`` entry point), ``scripts/reproduce.sh`` and
``scripts/quickstart.sh``; :mod:`.runlog` reads runs back (``stats``, ``progress``, ``compare``).
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..paths import CONFIG_DIR, USER_DIR
from ..provenance import directory_problem
# run_processes: re-exported for the launcher's users
from .processes import allocator_line, cpu_training_env, free_port, run_processes  # noqa: F401
from .runlog import compare_main, final_train_loss, progress_main, stats, stats_main  # noqa: F401  (re-exported)
from .recipes import (  # noqa: F401  (the launcher's vocabulary, re-exported for its users)
    PRIMARY_CONFIG,
    LaunchError,
    arch_configs,
    benchmark_values,
    benchmarks,
    check_names,
    compose,
    hydra_overrides,
    recipe_path,
    search_path,
    tokens_per_update,
)


def split_batch(effective_tokens: int, world_size: int, max_tokens: int) -> int:
    """update_freq such that world_size x update_freq x max_tokens == effective_tokens."""
    if world_size < 1 or max_tokens < 1:
        raise LaunchError(f"world size and max tokens must be positive, got {world_size} and {max_tokens}")
    per_step = world_size * max_tokens
    if effective_tokens % per_step:
        fits = [t for t in range(256, effective_tokens // world_size + 1, 256)
                if (effective_tokens // world_size) % t == 0 and effective_tokens % world_size == 0]
        hint = (f"--max-tokens values that split it on {world_size} device(s): {', '.join(map(str, fits[-6:]))}"
                if fits else f"{effective_tokens} tokens cannot be split evenly over {world_size} devices; "
                "change the number of devices")
        raise LaunchError(
            f"the paper's effective batch of {effective_tokens} tokens per update is not a whole number of "
            f"{world_size} device(s) x {max_tokens} tokens: {effective_tokens} / {per_step} = "
            f"{effective_tokens / per_step:g}. {hint}"
        )
    return effective_tokens // per_step


#: fp16 settings that need CUDA: config key -> (fairseq flag, what it asks for)
FP16_SETTINGS = {
    "common.fp16": ("--fp16", "fp16 training"),
    "common.memory_efficient_fp16": ("--memory-efficient-fp16", "fp16 training"),
    "common.amp": ("--amp", "fp16 mixed-precision (AMP) training"),
}
#: fairseq-train's precision flags, accepted by train.sh as their Hydra overrides
PRECISION_FLAGS = {flag: f"{key}=true" for key, (flag, _) in FP16_SETTINGS.items()}
PRECISION_FLAGS["--bf16"] = "common.bf16=true"

def precision_overrides(arguments: Sequence[str]) -> List[str]:
    """Training arguments with fairseq-train's precision flags as their Hydra overrides (``--fp16`` ->
    ``common.fp16=true``); train.sh and reproduce's ``--train-args`` accept both spellings."""
    return [PRECISION_FLAGS.get(a, a) for a in arguments]


def max_tokens_override(overrides: Sequence[str]) -> Optional[int]:
    """The per-device batch that a ``dataset.max_tokens=N`` override sets (the last one wins, as in Hydra), else
    None: like ``--max-tokens``, it sets each device's batch and leaves the recipe's tokens per update."""
    values = [o.split("=", 1)[1] for o in overrides if o.startswith("dataset.max_tokens=")]
    return int(values[-1]) if values else None


#: Launch.check_config's outcome per (benchmark, arch, overrides, recipe dir, GPUs?): None or the error
_config_checks: Dict[tuple, Optional[str]] = {}
#: what check_data needs of a composed config that passed: (shares all embeddings, source lang, target lang, a
#: task of one dictionary per language)
_config_facts: Dict[tuple, Tuple[bool, Optional[str], Optional[str], bool]] = {}
#: fairseq tasks that read DATA/dict.SRC.txt and DATA/dict.TGT.txt (a multilingual task reads one fixed dictionary)
DICTIONARY_PER_LANGUAGE_TASKS = ("translation", "translation_lev")


def _truthy(value) -> bool:
    return value is True or str(value).strip().lower() in ("true", "1", "yes", "on")


def config_keys(cfg) -> set:
    """Every dotted key of a composed config (``optimization``, ``optimization.max_update``, ...)."""
    from omegaconf import OmegaConf

    keys: set = set()

    def walk(node, prefix: str) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                keys.add(prefix + str(name))
                walk(value, f"{prefix}{name}.")

    walk(OmegaConf.to_container(cfg, resolve=False), "")
    return keys


def closest_keys(key: str, keys) -> List[str]:
    """Existing keys a misspelt ``key`` probably meant: the same last component in another section
    (``optimisation.max_update``), else the closest spellings (``optimization.max_updat``)."""
    leaf = key.rsplit(".", 1)[-1]
    same_leaf = [k for k in keys if k.rsplit(".", 1)[-1] == leaf and k != key]
    if same_leaf:
        return sorted(same_leaf, key=lambda k: -difflib.SequenceMatcher(None, key, k).ratio())[:3]
    return difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.6)


def model_flags(cfg) -> List[str]:
    """The composed model options as fairseq-train flags (``model.dropout: 0.1`` -> ``--dropout 0.1``)."""
    from .tables import overrides_as_flags

    def text(value) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else str(value)

    return overrides_as_flags([f"model.{k}={text(v)}" for k, v in cfg.model.items()
                               if k != "_name" and v is not None])


_parser_errors: Dict[tuple, Optional[str]] = {}


def _parser_error(arch: str, flags: Tuple[str, ...], task_flags: Tuple[str, ...]) -> Optional[str]:
    if (arch, flags, task_flags) not in _parser_errors:
        from .fairseq_options import parser_error

        _parser_errors[arch, flags, task_flags] = parser_error(arch, list(flags), list(task_flags))
    return _parser_errors[arch, flags, task_flags]


def model_keys(arch: str) -> List[str]:
    """``model.<option>`` for every option of ``arch``'s model (its ``add_args``)."""
    from fairseq.models import ARCH_MODEL_REGISTRY

    parser = argparse.ArgumentParser(add_help=False)
    try:
        ARCH_MODEL_REGISTRY[arch].add_args(parser)
    except Exception:  # an architecture whose options cannot be listed: no suggestion
        return []
    return sorted({f"model.{a.dest}" for a in parser._actions if a.dest != "help"})


@dataclass
class Launch:
    """Everything needed to start one training run."""

    benchmark: str
    arch: str
    data: Optional[str] = None
    save_dir: Optional[str] = None
    gpus: int = 0
    nodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: Optional[int] = None
    cpu_procs: int = 1
    max_tokens: Optional[int] = None
    effective_tokens: Optional[int] = None
    overrides: List[str] = field(default_factory=list)
    recipe_dir: Optional[Path] = None  # a directory with benchmark/NAME.yaml recipes beside configs/ (compare --recipe)

    def validate(self) -> None:
        check_names(self.benchmark, self.arch, self.recipe_dir)
        for override in self.overrides:
            key = override.lstrip("+~").split("=", 1)[0]
            if "=" not in override:
                raise LaunchError(f"overrides are key=value (Hydra syntax), got {override!r}")
            if key == "optimization.update_freq":
                raise LaunchError("optimization.update_freq is computed from the paper's effective batch; "
                                  "set --max-tokens (or --effective-tokens) instead")
            if key.startswith("distributed_training."):
                raise LaunchError(f"{key} is set by the launcher from --gpus/--nodes/--cpu-procs")
        if self.gpus < 0 or self.cpu_procs < 1 or self.nodes < 1:
            raise LaunchError("--gpus must be >= 0, --cpu-procs and --nodes >= 1")
        if self.gpus and self.cpu_procs > 1:
            raise LaunchError("--cpu-procs is for CPU training; do not combine it with --gpus")
        if self.nodes > 1 and not self.gpus:
            raise LaunchError("--nodes needs --gpus (GPUs per node); multi-node CPU training is not supported")
        if self.nodes > 1 and self.master_port is None:
            raise LaunchError("--nodes > 1 needs --master-addr and --master-port (the same on every node)")
        if not 0 <= self.node_rank < self.nodes:
            raise LaunchError(f"--node-rank must be in 0..{self.nodes - 1}")
        if self.data is None and not any(o.startswith("task.data=") for o in self.overrides):
            raise LaunchError("give the binarized data with --data DIR (the data-bin/ written by data-prep/)")
        self.check_config()
        self.check_save_dir()

    def check_config(self) -> None:
        """Compose the config fairseq-hydra-train would run and check it: every override names an existing
        key (the closest one is suggested), fp16 is asked for only on GPUs, and the model options pass
        fairseq's parser and the locality checks (each model.* key is open-ended in Hydra)."""
        key = self._config_key()
        if key not in _config_checks:
            quiet = logging.root.manager.disable
            logging.disable(logging.INFO)  # Hydra's and fairseq's chatter while composing and parsing
            try:
                self._check_config()
                _config_checks[key] = None
            except LaunchError as err:
                _config_checks[key] = str(err)
            finally:
                logging.disable(quiet)
        if _config_checks[key] is not None:
            raise LaunchError(_config_checks[key])

    def _config_key(self) -> tuple:
        return (self.benchmark, self.arch, tuple(self.overrides), str(self.recipe_dir), bool(self.gpus))

    def _check_config(self) -> None:
        try:
            cfg = compose(self.benchmark, self.arch, self.overrides, recipe_dir=self.recipe_dir)
        except Exception as err:  # Hydra's ConfigCompositionException, OmegaConf's errors
            raise self.composition_error(err) from None
        if cfg.get("task") is None:  # a recipe file without a /data/ default or a task: block
            raise LaunchError(f"recipe {self.benchmark} sets no task: give it a task: block (_name: translation and "
                              "its options) or a /data/ file in its defaults list (docs/compare.md, your own corpus)")
        languages = (cfg.task.get("source_lang"), cfg.task.get("target_lang"))
        _config_facts[self._config_key()] = (_truthy(cfg.model.get("share_all_embeddings")), *languages,
                                             cfg.task.get("_name") in DICTIONARY_PER_LANGUAGE_TASKS)
        if not self.gpus:
            for name, (flag, what) in FP16_SETTINGS.items():
                if _truthy(cfg.common.get(name.split(".", 1)[1])):
                    given = self.override_of(name)
                    if given:
                        raise LaunchError(f"{given} ({flag}): {what} needs a CUDA GPU (--gpus N); on the CPU leave it "
                                          "out to train in fp32, or give common.bf16=true to train in bfloat16")
                    raise LaunchError(f"{self.benchmark} sets {name}: true ({flag}), and {what} needs a CUDA GPU "
                                      f"(--gpus N); on the CPU add {name}=false to train in fp32 (with "
                                      "common.bf16=true: in bfloat16)")
        self.check_model_options(cfg)

    def override_of(self, key: str) -> Optional[str]:
        """The last override of ``key`` given to this launch (``+``/``++`` prefixes allowed), or None."""
        found = [o for o in self.overrides if o.lstrip("+~").split("=", 1)[0] == key]
        return found[-1] if found else None

    def composition_error(self, err: Exception) -> LaunchError:
        """Hydra's composition error as one sentence; an unknown key gets the closest existing keys instead of
        Hydra's advice to append it with '+' (fairseq would never read such a key)."""
        text = str(err).strip()
        first = text.splitlines()[0] if text else type(err).__name__
        unknown = re.match(r"Could not override '([^']+)'", first)
        if unknown:
            key = unknown.group(1)
            try:
                keys = config_keys(compose(self.benchmark, self.arch, recipe_dir=self.recipe_dir))
            except Exception:  # the recipe itself does not compose: report Hydra's error below
                keys = set()
            if keys and key not in keys:
                close = closest_keys(key, keys)
                sections = sorted(k for k in keys if "." not in k and not k.startswith("_"))
                hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close else
                        f"the config's sections are {', '.join(sections)}")
                return LaunchError(f"{self.override_of(key) or key}: no config key {key!r} in "
                                   f"{self.benchmark} with {self.arch}; {hint}")
            if self.override_of(key):
                return LaunchError(f"{self.override_of(key)}: {first}")
        in_file = re.match(r"In '([^']+)'", first)
        full_key = re.search(r"full_key: (\S+)", text)
        if in_file and full_key:  # a key that a config file (e.g. the benchmark or a recipe file) sets
            return LaunchError(f"{in_file.group(1)}.yaml sets {full_key.group(1)}, which is not a key of fairseq's "
                               f"configuration ({text.splitlines()[1].strip() if len(text.splitlines()) > 1 else first})")
        merging = re.match(r"Error merging override (.+)$", first)
        cause_text = str(err.__cause__).strip() if err.__cause__ is not None else ""
        cause = cause_text.splitlines()[0] if cause_text else ""
        if merging and cause:
            return LaunchError(f"{merging.group(1)}: {cause}")
        return LaunchError(f"the overrides do not fit {self.benchmark} with {self.arch}: {first}"
                           + (f" ({cause})" if cause else ""))

    def check_model_options(self, cfg) -> None:
        """The composed model options through fairseq's training parser and the locality checks, as
        fairseq-train would see them (:func:`.reproduce.parser_error`)."""
        arch = cfg.model.get("_name") or self.arch
        flags = model_flags(cfg)
        task = cfg.task.get("_name") or "translation"
        task_flags = ["--task", task] + (
            ["--num-classes", str(cfg.task.get("num_classes") or 2)] if task == "sentence_prediction" else [])
        error = _parser_error(arch, tuple(flags), tuple(task_flags))
        if error is None:
            return
        unrecognized = re.search(r"unrecognized arguments: (.*)$", error)
        if unrecognized:
            bad = [t for t in unrecognized.group(1).split() if t.startswith("--")]
            key = "model." + (bad[0][2:].replace("-", "_") if bad else "?")
            close = difflib.get_close_matches(key, model_keys(arch), n=1, cutoff=0.6)
            raise LaunchError(f"{self.override_of(key) or key}: architecture {arch} has no option {key!r}"
                              + (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""))
        if error.startswith("invalid locality options: ") or error.startswith("architecture "):
            raise LaunchError(error)
        detail = re.search(r"error: (.*)$", error)
        raise LaunchError(f"fairseq rejects the model options: {detail.group(1) if detail else error}")

    def check_data(self) -> None:
        """The binarized data is here (not checked for a dry run, which only prints the commands): else fairseq
        would fail only after Hydra has written into the save directory, or after a Slurm job has queued."""
        flag, data = "--data", self.data
        if data is None:
            flag, data = "task.data", next(o.split("=", 1)[1] for o in self.overrides if o.startswith("task.data="))
        if not Path(data).is_dir():
            raise LaunchError(f"{flag} {data}: no such directory (the data-bin/ written by data-prep/, docs/data.md)")
        if not has_binarized_data(Path(data)):
            raise LaunchError(f"{flag} {data}: no fairseq-preprocess dictionary there (dict.*.txt): binarize the "
                              "corpus first (data-prep/, docs/data.md)")
        if not any(Path(data).glob("train*.idx")) and not any(Path(data).glob("*/train*.idx")):
            raise LaunchError(f"{flag} {data}: no training split there (train*.idx): binarize the corpus with "
                              "fairseq-preprocess --trainpref (data-prep/, docs/data.md)")
        self.check_config()
        shared, source, target, dictionary_per_language = _config_facts[self._config_key()]
        if dictionary_per_language:
            check_language_pair(Path(data), flag, source, target)
        if shared:
            check_joined_dictionary(Path(data), flag, source, target)

    def check_devices(self) -> None:
        """``--gpus N`` needs N CUDA devices on this machine (not checked for a dry run or a cluster
        submission, whose login node may have none)."""
        if not self.gpus:
            return
        import torch

        visible = torch.cuda.device_count()
        if visible >= self.gpus:
            return
        why = ("this PyTorch build has no CUDA support" if torch.version.cuda is None else
               f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r}" if "CUDA_VISIBLE_DEVICES" in os.environ
               else "")
        fix = ("train on the CPU without --gpus (--cpu-procs N for several processes)" if not visible
               else f"use --gpus {visible}")
        raise LaunchError(f"--gpus {self.gpus}: only {visible} CUDA device(s) visible"
                          + (f" ({why})" if why else "") + f"; {fix}")

    def requested(self, section: str, key: str) -> Any:
        """SECTION.KEY as this launch sets it: the last override (its text, ``+``/``++`` forms too), else the
        benchmark's value, else None."""
        for override in reversed(self.overrides):
            if override.lstrip("+").startswith(f"{section}.{key}="):
                return override.split("=", 1)[1]
        return (benchmark_values(self.benchmark, self.recipe_dir).get(section) or {}).get(key)

    def requested_max_update(self) -> Optional[int]:
        """optimization.max_update as this launch sets it (an override, else the benchmark's; 0: no limit)."""
        return int(self.requested("optimization", "max_update") or 0)

    def requested_patience(self) -> Optional[int]:
        """checkpoint.patience as this launch sets it (an override, else the benchmark's; None or <= 0: none)."""
        value = self.requested("checkpoint", "patience")
        return None if value is None else int(value)

    def check_save_dir(self) -> None:
        """The run-directory guard (:mod:`.rundir`): nothing is written into another architecture's run,
        or into a run further along than requested."""
        from .rundir import RunDirError, check_run_dir, finished

        problem = directory_problem(self.save_path, "--save-dir")
        if problem:
            raise LaunchError(problem)
        try:
            state = check_run_dir(Path(self.save_path), self.arch, self.requested_max_update(),
                                  accept_cut_short=self.accept_cut_short)
        except RunDirError as err:
            raise LaunchError(str(err)) from None
        self.trained_because = finished(state, self.requested_max_update(), self.requested_patience())
        self.already_trained = self.trained_because is not None

    #: set by :meth:`validate`: the save directory holds this training, finished (fairseq is not started again)
    already_trained: bool = False
    #: why it is finished (:func:`.rundir.finished`): at max_update, or stopped early
    trained_because: Optional[str] = None
    #: a checkpoint_last.pt cut short by an interrupted copy passes the guard: the caller restores it before
    #: training (:func:`.rundir.restore_cut_short_checkpoint`, the comparison command)
    accept_cut_short: bool = False

    def train_sh_args(self) -> List[str]:
        """``scripts/train.sh``'s arguments that start this launch: what a user runs by hand, what a table prints
        and what its subprocess runs."""
        args = [self.benchmark, self.arch]
        if self.recipe_dir is not None:
            args += ["--recipe-dir", str(self.recipe_dir)]
        if self.data is not None:
            args += ["--data", str(self.data)]
        if self.save_dir is not None:
            args += ["--save-dir", str(self.save_dir)]
        args += ["--gpus", str(self.gpus)] if self.gpus else ["--cpu-procs", str(self.cpu_procs)]
        if self.nodes != 1:
            args += ["--nodes", str(self.nodes)]
        if self.node_rank:
            args += ["--node-rank", str(self.node_rank)]
        if self.master_addr != "127.0.0.1":
            args += ["--master-addr", self.master_addr]
        if self.master_port is not None:
            args += ["--master-port", str(self.master_port)]
        if self.max_tokens is not None:
            args += ["--max-tokens", str(self.max_tokens)]
        if self.effective_tokens is not None:
            args += ["--effective-tokens", str(self.effective_tokens)]
        return args + list(self.overrides)

    @property
    def world_size(self) -> int:
        return self.gpus * self.nodes if self.gpus else self.cpu_procs

    @property
    def save_path(self) -> str:
        return self.save_dir or str(Path("checkpoints") / self.benchmark / self.arch)

    def plan(self) -> Dict[str, int]:
        """Effective-batch arithmetic for this launch."""
        values = benchmark_values(self.benchmark, self.recipe_dir)
        effective = self.effective_tokens or tokens_per_update(values)
        override = max_tokens_override(self.overrides)
        config_tokens = int(values["dataset"]["max_tokens"]) if override is None else override
        max_tokens = self.max_tokens or config_tokens
        update_freq = split_batch(effective, self.world_size, max_tokens)
        return {"effective_tokens": effective, "world_size": self.world_size,
                "max_tokens": max_tokens, "update_freq": update_freq}

    def base_command(self, plan: Dict[str, int]) -> List[str]:
        hydra_train = Path(sys.executable).parent / "fairseq-hydra-train"
        program = [str(hydra_train)] if hydra_train.exists() else [sys.executable, "-m", "fairseq_cli.hydra_train"]
        command = program + [
            "--config-dir", str(CONFIG_DIR), "--config-name", PRIMARY_CONFIG,
            f"benchmark={self.benchmark}", f"arch={self.arch}",
            f"checkpoint.save_dir={os.path.abspath(self.save_path)}",
            f"common.user_dir={USER_DIR}",
            f"dataset.max_tokens={plan['max_tokens']}",
            f"optimization.update_freq=[{plan['update_freq']}]",
            *search_path(self.recipe_dir),
        ]
        if self.data is not None:
            command.append(f"task.data={os.path.abspath(self.data)}")
        if not self.gpus:
            command.append("common.cpu=true")
        return command + hydra_overrides(self.overrides)

    def commands(self, plan: Dict[str, int]) -> List[List[str]]:
        """One command per process to start on this machine."""
        base = self.base_command(plan)
        if self.gpus:
            if self.nodes == 1:
                # fairseq spawns one process per GPU itself
                return [base + [f"distributed_training.distributed_world_size={self.gpus}"]]
            return [base + [
                f"distributed_training.distributed_world_size={self.world_size}",
                f"distributed_training.distributed_rank={self.node_rank * self.gpus}",
                f"distributed_training.distributed_init_method=tcp://{self.master_addr}:{self.master_port}",
            ] + ([f"hydra.run.dir={os.path.abspath(self.save_path)}/node{self.node_rank}"] if self.node_rank else [])]
            # (node 0 logs to hydra_train.log beside the checkpoints; the other nodes' logs go to nodeR/)
        if self.cpu_procs == 1:
            return [base]
        port = self.master_port or free_port()
        # fairseq cannot spawn CPU workers (it spawns one per CUDA device): start one process per rank
        return [
            base + [
                f"distributed_training.distributed_world_size={self.cpu_procs}",
                f"distributed_training.distributed_rank={rank}",
                "distributed_training.distributed_no_spawn=true",
                "distributed_training.distributed_backend=gloo",
                f"distributed_training.distributed_init_method=tcp://127.0.0.1:{port}",
                "distributed_training.device_id=0",
            ] + ([f"hydra.run.dir={os.path.abspath(self.save_path)}/rank{rank}"] if rank else [])
            for rank in range(self.cpu_procs)
        ]


def check_language_pair(data_bin: Path, flag: str, source: Optional[str], target: Optional[str]) -> None:
    """The config's languages (task.source_lang/target_lang) have their dictionaries in the data-bin: else the
    translation task stops when the run starts (a recipe written for another corpus, a copied snippet)."""
    if not (source and target):
        return
    missing = [f"dict.{lang}.txt" for lang in (source, target) if not (data_bin / f"dict.{lang}.txt").is_file()]
    if missing:
        have = sorted(p.name for p in data_bin.glob("dict.*.txt"))
        raise LaunchError(f"{flag} {data_bin}: no {' or '.join(missing)} for the recipe's languages {source}->{target} "
                          f"(task.source_lang/target_lang); it has {', '.join(have) or 'no dict.*.txt'}: set the "
                          "recipe's task languages to the data-bin's, or give the data-bin of that pair")


def check_joined_dictionary(data_bin: Path, flag: str, source: Optional[str], target: Optional[str]) -> None:
    """A model that shares all embeddings (share_all_embeddings: the shipped recipes) needs one dictionary for
    both sides, as ``fairseq-preprocess --joined-dictionary`` writes it; fairseq would stop only once the model is
    built. The pair is the config's languages, else the data-bin's only two ``dict.*.txt``. fairseq compares the
    dictionaries' symbols in order, not their counts, and so does this check."""
    if source and target:
        pair = [data_bin / f"dict.{source}.txt", data_bin / f"dict.{target}.txt"]
    else:
        pair = sorted(p for p in data_bin.glob("dict.*.txt") if p.name.count(".") == 2)
    if len(pair) != 2 or not all(p.is_file() for p in pair):
        return  # not a translation data-bin of one pair: the task reports what it lacks

    def symbols(path: Path) -> List[str]:
        return [line.split(" ", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]

    if symbols(pair[0]) != symbols(pair[1]):
        raise LaunchError(f"{flag} {data_bin}: {pair[0].name} and {pair[1].name} differ, and the model shares all "
                          "embeddings (model.share_all_embeddings=true), which needs one dictionary for both "
                          "languages: binarize with fairseq-preprocess --joined-dictionary, or give "
                          "model.share_all_embeddings=false")


def has_binarized_data(data_bin: Path) -> bool:
    """fairseq-preprocess's dictionaries: dict.SRC.txt / dict.TGT.txt (translation), dict.txt (language
    modelling) or input0/dict.txt and label/dict.txt (sentence_prediction)."""
    return any(data_bin.glob("dict.*.txt")) or (data_bin / "dict.txt").is_file() or \
        ((data_bin / "input0" / "dict.txt").is_file() and (data_bin / "label" / "dict.txt").is_file())


def run_here(launch: Launch, plan: Dict[str, int], dry_run: bool = False) -> int:
    """Print the batch arithmetic and the command(s), then (unless ``dry_run``) train on this machine.

    ``launch`` is validated. What ``scripts/train.sh`` does for a local run, and what ``reproduce.sh`` does for
    each row: both build a :class:`Launch` and come here. It trains holding the save directory's
    :func:`.rundir.training_lock`: a directory another process is training into raises :class:`LaunchError`.
    """
    commands = launch.commands(plan)
    print(describe(launch, plan), flush=True)
    for command in commands:
        print(("" if len(commands) == 1 else "[rank] ") + " ".join(shlex.quote(c) for c in command), flush=True)
    if dry_run:
        return 0
    if launch.already_trained:  # resumed, fairseq would take one more update and rewrite the checkpoints
        print(f"{launch.save_path} holds this training, finished ({launch.trained_because}): nothing to train",
              flush=True)
        return 0
    from .rundir import RunDirBusy, training_lock

    try:
        with training_lock(Path(launch.save_path)) as lock:
            if not launch.gpus:
                print(allocator_line(cpu_training_env(os.environ, False)), flush=True)
            return run_processes(commands, cpu_workers=not launch.gpus and launch.cpu_procs > 1, cpu=not launch.gpus,
                                 pass_fds=(lock,))
    except RunDirBusy as err:
        raise LaunchError(str(err)) from None


def describe(launch: Launch, plan: Dict[str, int]) -> str:
    device = "GPU" if launch.gpus else "CPU process"
    return (f"effective batch: {plan['effective_tokens']} tokens/update = {plan['world_size']} {device}(s) x "
            f"{plan['max_tokens']} tokens x update_freq {plan['update_freq']}")
