"""Every Hydra config composes with fairseq's schema and names an architecture that exists."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from fairseq_localness.experiments import launch  # noqa: E402
from localness_testing import REPO, run  # noqa: E402

BENCHMARKS = launch.benchmarks()
ARCHS = launch.arch_configs()
#: one-size settings and architectures of the other tasks (Nguyen 2020 Tables 5-6: tiny classifiers, base LMs),
#: checked with their own tasks in tests/test_reproduce.py; Fan 2021 Table 2's one summarization size
#: (tests/test_summarization.py)
OTHER_TASKS = ("localness_classifier", "transformer_lm_", "nguyen2020_sst_", "nguyen2020_imdb_", "nguyen2020_sva_",
               "nguyen2020_lm1b_", "transformer_summarization", "transformer_dman_summarization")
TRANSLATION_BENCHMARKS = [b for b in BENCHMARKS if not b.startswith(OTHER_TASKS)]
TABLES = yaml.safe_load((REPO / "configs" / "paper_tables.yaml").read_text())


def registered_archs():
    import fairseq_localness  # noqa: F401
    from fairseq.models import ARCH_MODEL_REGISTRY

    return ARCH_MODEL_REGISTRY


def test_there_are_configs_for_every_benchmark_and_size():
    for name in ("wmt14_en_de_base", "wmt14_en_de_big", "wmt17_zh_en_base", "wmt17_zh_en_big", "wat17_ja_en_base",
                 "iwslt14_de_en", "fan2021_iwslt14_de_en", "fan2021_wmt14_en_de_base", "fan2021_wmt14_en_de_big"):
        assert name in BENCHMARKS
    families = {a for a in ARCHS if not a.endswith(("_iwslt_de_en", "_wmt_en_de", "_wmt_en_de_big"))
                and not a.startswith(OTHER_TASKS)}
    for family in families:
        for size in ("_iwslt_de_en", "_wmt_en_de", "_wmt_en_de_big"):
            assert family + size in ARCHS, f"{family} lacks a config for size {size}"


def test_every_architecture_of_the_plugin_has_a_config():
    """scripts/train.sh ARCH composes configs/arch/ARCH.yaml: every architecture the plugin registers has one."""
    ours = [arch for arch, model in registered_archs().items() if model.__module__.startswith("fairseq_localness")
            and "docs_test" not in arch]  # tests/test_docs.py registers a throwaway method's architecture
    assert len(ours) >= 100 and [arch for arch in ours if arch not in ARCHS] == []


def test_every_arch_config_names_a_registered_architecture():
    for arch in ARCHS:
        cfg = launch.compose(BENCHMARKS[0], arch)
        assert cfg.model._name == arch
        assert arch in registered_archs(), f"configs/arch/{arch}.yaml names an architecture fairseq does not know"


@pytest.mark.parametrize("benchmark", TRANSLATION_BENCHMARKS)
def test_benchmark_composes_with_the_papers_settings(benchmark):
    cfg = launch.compose(benchmark, "transformer_wmt_en_de", ["task.data=/data"])
    assert cfg.task._name == "translation" and cfg.task.data == "/data"
    assert cfg.task.source_lang and cfg.task.target_lang
    # the papers use inverse-sqrt; the comparison recipes halve the rate on a plateau (configs/optim/compare_small.yaml)
    schedule = "reduce_lr_on_plateau" if benchmark.startswith("compare_") else "inverse_sqrt"
    assert cfg.optimizer._name == "adam" and cfg.lr_scheduler._name == schedule
    assert cfg.criterion._name == "label_smoothed_cross_entropy" and cfg.criterion.label_smoothing == 0.1
    assert cfg.dataset.max_tokens > 0 and len(cfg.optimization.update_freq) == 1
    assert cfg.optimization.lr[0] > 0 and cfg.lr_scheduler.warmup_updates > 0
    assert cfg.optimization.max_update > 0 or cfg.optimization.max_epoch > 0
    assert 0 <= cfg.model.dropout < 1


@pytest.mark.parametrize("benchmark,tokens", [
    ("wmt14_en_de_base", 8 * 4096),  # Yang et al. 2018/2019: 8 GPUs x 4096 tokens
    ("wmt14_en_de_big", 8 * 4096),
    ("wmt17_zh_en_base", 8 * 4096),
    ("iwslt14_de_en", 4096),  # fairseq's recipe: one GPU
    ("fan2021_iwslt14_de_en", 2 * 8192),  # Fan et al.'s scripts: 2 GPUs x 8192
    ("fan2021_wmt14_en_de_base", 8 * 12288 * 3),  # 8 GPUs x 12288 x update_freq 3
    ("fan2021_wmt14_en_de_big", 8 * 4096 * 16),  # 8 GPUs x 4096 x update_freq 16
    ("xu2019_wmt14_en_de_base", 6 * 4096),  # Xu et al. 2019 App. A.1: ~25000 tokens per batch
    ("nguyen2020_wmt16_en_de_base", 8 * 4096),  # Nguyen et al. 2020: 8 virtual GPUs (released scripts: 4096 tokens)
    ("nguyen2020_wmt14_en_fr_base", 8 * 4096),
    ("fan2021_cnndm_summarization", 4 * 8192 * 8),  # Fan et al. 2021 Sec. 3.1.2: 4 GPUs; scripts: update_freq 8
    ("fan2021_gigaword_summarization", 4 * 12288 * 3),  # ... and 3
])
def test_benchmark_holds_the_papers_effective_batch(benchmark, tokens):
    cfg = launch.compose(benchmark, "transformer")
    assert cfg.dataset.max_tokens * cfg.optimization.update_freq[0] == tokens
    # the launcher reads the same numbers without Hydra
    values = launch.benchmark_values(benchmark)
    assert values["dataset"]["max_tokens"] == cfg.dataset.max_tokens
    assert values["optimization"]["update_freq"] == list(cfg.optimization.update_freq)


def test_every_paper_row_composes():
    from fairseq_localness.experiments import tables

    pairs = {}
    for paper, spec in TABLES["papers"].items():
        for table in spec["tables"]:
            for row in tables.table_rows(TABLES, paper, table):
                if not row.trained:
                    continue
                assert row.setting in TABLES["evaluation"], f"{paper} table {table}: no evaluation of {row.setting}"
                pairs.setdefault((row.setting, row.arch), row.overrides)
    for (benchmark, arch), overrides in pairs.items():
        cfg = launch.compose(benchmark, arch, overrides)
        assert cfg.model._name == arch


def test_row_overrides_reach_the_model_config():
    cfg = launch.compose("wmt14_en_de_base", "transformer_gaussian_local_wmt_en_de",
                         ["model.gaussian_attention='encoder,cross'", "model.gaussian_window=layer"])
    assert cfg.model.gaussian_attention == "encoder,cross" and cfg.model.gaussian_window == "layer"
    assert cfg.model.dropout == 0.1  # the benchmark's model settings stay


def test_fairseq_hydra_train_prints_the_composed_job():
    out = run([str(Path(sys.executable).parent / "fairseq-hydra-train"), "--config-dir", str(REPO / "configs"),
               "--config-name", "localness", "benchmark=wmt14_en_de_big",
               "arch=transformer_gaussian_local_wmt_en_de_big", "task.data=/data", "--cfg", "job"]).stdout
    job = yaml.safe_load(out)
    assert job["model"]["_name"] == "transformer_gaussian_local_wmt_en_de_big"
    # THUMT's untied embeddings (Yang et al. 2018 Table 4: 264.1M parameters for En-De big)
    assert job["model"]["dropout"] == 0.3 and job["model"]["share_all_embeddings"] is False
    assert job["optimization"]["lr"] == [0.00049] and job["optimization"]["max_update"] == 300000
    assert job["task"]["source_lang"] == "en" and job["task"]["target_lang"] == "de"


def test_a_missing_choice_is_a_clear_error():
    proc = run([str(Path(sys.executable).parent / "fairseq-hydra-train"), "--config-dir", str(REPO / "configs"),
                "--config-name", "localness", "benchmark=wmt14_en_de_base", "arch=transformer_nope", "--cfg", "job"],
               check=False)
    assert proc.returncode != 0 and "transformer_nope" in proc.stdout + proc.stderr
