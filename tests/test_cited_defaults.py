"""Defaults that follow the papers or the authors' releases, each pinned to its source, and the repository's own
citations: every repository file a config cites exists, and no absolute machine path is left in the package, the
configs or the docs."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from fairseq_localness.experiments.tables import load_tables, table_rows
from localness_testing import REPO, build_model


def row(paper: str, table: str, row_id: str):
    return next(r for r in table_rows(load_tables(), paper, table) if r.id == row_id)


def override_dict(overrides):
    return {key[len("model."):]: value.strip("'\"") for key, _, value in (o.partition("=") for o in overrides)}


def methods_by_layer(model, class_name: str):
    """{(stack, layer index, attention): method} of every locality method of that class."""
    found = {}
    for name, module in model.named_modules():
        if type(module).__name__ == class_name:
            parts = name.split(".")
            found[(parts[0], int(parts[2]), parts[3])] = module
    return found


SIX = {"encoder_layers": 6, "decoder_layers": 6}


@pytest.mark.parametrize("row_id", ["relpos-ende", "relpos-enfr"])
def test_nguyen2020_shaw_rows_follow_the_release(tiny_data_bin, row_id):
    """Nguyen 2020 Table 1's Shaw et al. rows: relative positions in the encoder self-attention only, all six layers,
    k = 16, as tungngthanh/dynamic-attention's lgl_relative_position_self_attention_encoder_wmt_en_de
    (tree_fairseq/src/models/learnable_global_local_transformer.py lines 1825-1831; max_relative_position=16,
    tree_fairseq/src/modules/baseline_variant_attention.py line 22)."""
    shaw = row("nguyen2020", "1", row_id)
    assert shaw.overrides == ["model.relpos_attention=encoder"] and "1825-1831" in shaw.note
    model = build_model(shaw.arch, tiny_data_bin, {**SIX, **override_dict(shaw.overrides)})[0]
    found = methods_by_layer(model, "RelativePositions")
    assert sorted(found) == [("encoder", i, "self_attn") for i in range(6)]
    assert {m.options.max_distance for m in found.values()} == {16}


def test_yang2019_csan2d_area_is_the_release(tiny_data_bin):
    """2D-CSANs: M = 11 (Yang 2019 Sec. 5.1) and N = 3, which the paper does not print: the release's keys of heads
    h-1, h, h+1 (baosongyang/Context-Aware-SAN layers/attention_conv.py lines 262-264), encoder layers 1-3 (Sec. 5)."""
    from fairseq_localness.methods.csan import Csan2dOptions

    assert (Csan2dOptions().heads, Csan2dOptions().window) == (3, 11)
    assert "attention_conv.py lines 262-264" in Csan2dOptions.__dataclass_fields__["heads"].metadata["help"]
    for paper, table, row_id in (("yang2019", "1", "csan2d"), ("yang2019", "2", "base-csan-ende")):
        csan = row(paper, table, row_id)
        assert csan.overrides == []
        model = build_model(csan.arch, tiny_data_bin, SIX)[0]
        found = methods_by_layer(model, "Csan2d")
        assert sorted(found) == [("encoder", i, "self_attn") for i in range(3)]
        assert {(m.options.heads, m.options.window) for m in found.values()} == {(3, 11)}


def test_wat17_ja_en_keeps_every_pair_by_default():
    """Yang 2019 Sec. 5 and Xu 2019 Sec. 4 state no length limit for WAT17 Ja-En (Yang 2018 has no Ja-En data): the
    script's default keeps every pair (the run itself: tests/test_data_prep.py::test_wat17_ja_en_and_force)."""
    script = (REPO / "localness_prep" / "prepare" / "wat17ja2en.py").read_text()  # data-prep/prepare-wat17ja2en.sh
    assert re.search(r'^ +max_len="0"\)$', script, re.M)
    assert "Yang et al. (2019) Sec. 5 and Xu et al. (2019) Sec. 4" in script
    assert "as in Yang et al. (2018)" not in script
    assert load_tables()["evaluation"]["wat17_ja_en_base"]["corpus"] == "aspec-je-train-1-2"


# --- citations and paths ---------------------------------------------------------------------------------------

TOP_LEVEL = {p.name for p in REPO.iterdir() if not p.name.startswith(".")}
PATH = re.compile(r"(?<![\w/.<-])((?:[\w.-]+/)+[\w.*{},<>-]+\.(?:py|sh|md|yaml|yml|txt|json|tsv|cfg|toml))")
REPOSITORY = re.compile(r"^[A-Za-z0-9][\w-]*/[\w.-]+$")  # owner/name before a path: a file of that repository


def expand(pattern: str):
    """Brace expansion ({a,b}) then glob."""
    parts = re.split(r"(\{[^}]*\})", pattern)
    choices = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    for combination in itertools.product(*choices):
        yield "".join(combination)


def cited_repository_files(text: str):
    """Paths in ``text`` that name a file of this repository: their first directory is one of the checkout's, and no
    other repository (owner/name) is the word right before them."""
    for line in text.splitlines():
        for match in PATH.finditer(line):
            path = match.group(1)
            if path.split("/")[0] not in TOP_LEVEL or "<" in path:
                continue
            before = [w.strip("(),;:`'\"") for w in line[:match.start()].split()[-1:]]
            if any(REPOSITORY.match(w) and not PATH.fullmatch(w) and w.split("/")[0] not in TOP_LEVEL for w in before):
                continue
            yield path


CONFIGS = sorted(REPO.glob("configs/**/*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_file_a_config_cites_exists(config):
    missing = [path for path in cited_repository_files(config.read_text(encoding="utf-8"))
               if not any(any(REPO.glob(p)) if "*" in p else (REPO / p).exists() for p in expand(path))]
    assert not missing, f"{config.relative_to(REPO)} cites files the repository does not have: {missing}"


def test_the_citation_finder_tells_our_files_from_the_releases():
    text = ("see docs/baselines.md and configs/benchmark/<setting>.yaml; THUNLP-MT/THUMT docs/walkthrough.md; "
            "(baosongyang/Context-Aware-SAN, models/transformer_block.py); data-prep/prepare-{cnndm,gigaword}.sh")
    assert list(cited_repository_files(text)) == ["docs/baselines.md", "data-prep/prepare-{cnndm,gigaword}.sh"]
    assert list(expand("a/{b,c}.sh")) == ["a/b.sh", "a/c.sh"]


ABSOLUTE = re.compile(r"/(?:work|tmp|root|home)/")
#: fairseq's own default for common.plasma_path: every composed config that a published run keeps records it
FAIRSEQ_DEFAULT_PATH = "/tmp/plasma"
SHIPPED = [p for p in itertools.chain(REPO.glob("fairseq_localness/**/*"), REPO.glob("localness_prep/**/*"),
                                     REPO.glob("configs/**/*"), REPO.glob("docs/**/*"))
           if p.is_file() and p.suffix in {".py", ".yaml", ".yml", ".md", ".sh", ".txt", ".json", ".csv", ".cfg", ".toml"}]


def test_no_absolute_machine_path_in_the_package_configs_or_docs():
    """A checkout must work wherever it lies: paths are relative to it (../shared/... for the shared corpora and papers)."""
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in SHIPPED
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if ABSOLUTE.search(line.replace(FAIRSEQ_DEFAULT_PATH, ""))]
    assert not hits, "absolute machine paths:\n" + "\n".join(hits)
    assert len(SHIPPED) > 100  # the globs found the files
