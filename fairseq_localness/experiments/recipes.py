"""The configs a training is composed from: benchmark settings (recipes), architectures, and Hydra's composition.

Read by the launcher (:mod:`.launch`), the paper tables (:mod:`.tables`) and the comparison (:mod:`.compare`);
imports nothing else of ``experiments/``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..paths import CONFIG_DIR

PRIMARY_CONFIG = "localness"


class LaunchError(RuntimeError):
    """A bad request (unknown benchmark or arch, impossible batch split); printed without a traceback."""


def benchmarks() -> List[str]:
    return sorted(p.stem for p in (CONFIG_DIR / "benchmark").glob("*.yaml"))


def arch_configs() -> List[str]:
    return sorted(p.stem for p in (CONFIG_DIR / "arch").glob("*.yaml"))


def recipe_path(benchmark: str, recipe_dir: Optional[Path] = None) -> Path:
    """The file of a benchmark setting: RECIPE_DIR/benchmark/NAME.yaml where given and present, else configs/'s."""
    if recipe_dir is not None and (Path(recipe_dir) / "benchmark" / f"{benchmark}.yaml").is_file():
        return Path(recipe_dir) / "benchmark" / f"{benchmark}.yaml"
    return CONFIG_DIR / "benchmark" / f"{benchmark}.yaml"


def check_names(benchmark: str, arch: str, recipe_dir: Optional[Path] = None) -> None:
    if recipe_dir is not None and not Path(recipe_dir).is_dir():
        raise LaunchError(f"--recipe-dir {recipe_dir}: no such directory")
    if not recipe_path(benchmark, recipe_dir).is_file():
        beside = f" nor {Path(recipe_dir) / 'benchmark'}/" if recipe_dir is not None else ""
        raise LaunchError(f"unknown benchmark {benchmark!r}; configs/benchmark/{beside} has: "
                          f"{', '.join(benchmarks())}")
    if arch not in arch_configs():
        raise LaunchError(
            f"no config for architecture {arch!r} in configs/arch/; available: {', '.join(arch_configs())}"
        )


def compose(benchmark: str, arch: str, overrides: Sequence[str] = (), return_hydra_config: bool = False,
            recipe_dir: Optional[Path] = None):
    """The config fairseq-hydra-train would run (Hydra's compose API with fairseq's schema registered).

    Leaves no global Hydra state behind: fairseq 0.12 itself still calls ``hydra.experimental.initialize``
    (``convert_namespace_to_omegaconf``), which fails in a process where Hydra stays initialised or where a
    ``version_base`` of 1.2 or later was declared, so both are restored on the way out.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.version import VersionBase

    _register_fairseq_schema()
    previous_base = VersionBase.instance().getbase()
    try:
        with warnings.catch_warnings(), initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
            # fairseq validates the primary config against its schema by name (deprecated in Hydra, still supported)
            warnings.simplefilter("ignore", UserWarning)
            return hydra_compose(PRIMARY_CONFIG, overrides=[f"benchmark={benchmark}", f"arch={arch}",
                                                            *search_path(recipe_dir), *hydra_overrides(overrides)],
                                 return_hydra_config=return_hydra_config)
    finally:
        VersionBase.instance().version_base = previous_base


_schema_registered = False


def _register_fairseq_schema() -> None:
    global _schema_registered
    if not _schema_registered:
        from fairseq.dataclass.initialize import hydra_init

        hydra_init(PRIMARY_CONFIG)
        _schema_registered = True


def search_path(recipe_dir: Optional[Path]) -> List[str]:
    """Hydra's override that adds a directory of recipes (``DIR/benchmark/NAME.yaml``) to the config search path."""
    return [f"hydra.searchpath=[file://{Path(recipe_dir).resolve()}]"] if recipe_dir is not None else []


def hydra_overrides(overrides: Sequence[str]) -> List[str]:
    """Model options are open-ended (every method adds its own), so ``model.x=v`` is sent as ``++model.x=v``
    (set, or add when the architecture config does not mention it)."""
    return [f"++{o}" if o.startswith("model.") else o for o in overrides]


def benchmark_values(benchmark: str, recipe_dir: Optional[Path] = None) -> Dict:
    """A benchmark file with the files of its defaults list merged in (read as plain YAML, so that the
    launcher's arithmetic needs neither fairseq nor Hydra; tests check it against :func:`compose`)."""
    import yaml

    def load(path: Path) -> Dict:
        data = yaml.safe_load(path.read_text()) or {}
        merged: Dict = {}
        for entry in data.pop("defaults", []):
            if isinstance(entry, str) and entry != "_self_":
                merge(merged, load(CONFIG_DIR / (entry.lstrip("/") + ".yaml")))
        return merge(merged, data)

    def merge(into: Dict, other: Dict) -> Dict:
        for key, value in other.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value
        return into

    return load(recipe_path(benchmark, recipe_dir))


def tokens_per_update(values: Dict) -> int:
    """A benchmark's effective batch (:func:`benchmark_values`): its max_tokens x update_freq, the tokens of one
    update whatever the number of devices."""
    return int(values["dataset"]["max_tokens"]) * int(values["optimization"]["update_freq"][0])
