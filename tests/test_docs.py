"""The documentation stays honest: README.md and docs/ link only to what exists, name only architectures, flags,
scripts and modules that exist, document every architecture and method option, and their example commands run.

The README's train/generate examples run on the shipped zh-en sample at a tiny size (the paper recipes' sizes and
update counts are overridden); the Gaussian and DMAN examples run by default, the others in the slow suite.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
import shlex
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Set

import pytest

from localness_testing import (BIN, REPO, USER_DIR, assert_incremental_parity, assert_padding_invariance,
                               build_model, published_comparison_output, run)

README = REPO / "README.md"
#: the manual's pages; docs/figures/ holds generated outputs (an analysis writes a markdown table beside its PNG)
#: the comparison's published tables (docs/results/compare/LABEL/*.md) are its output, captioned by it, not pages
DOCS = sorted(p for p in (REPO / "docs").rglob("*.md") if "figures" not in p.relative_to(REPO / "docs").parts
              and not published_comparison_output(p))
PAGES = [README, *DOCS]
#: names the docs' worked example ("Adding a method" in docs/design.md) registers; the test registers it under
#: these test-only names instead, so that the real registry never holds the example
EXAMPLE_METHOD, EXAMPLE_ARCH = "distance_penalty", "transformer_distance_penalty"
TEST_METHOD, TEST_ARCH = "docs_test_penalty", "transformer_docs_test_penalty"
#: flags of other tools that the docs show: sacreBLEU's reference export, Hydra's (fairseq-hydra-train), Slurm's
#: sbatch options in docs/cluster.md, tar and mutmut in docs/testing.md's mutation-testing recipe, pip's offline
#: install in docs/gpu.md
EXTERNAL_FLAGS = {"--echo", "--config-dir", "--config-name", "--multirun", "--gres", "--ntasks-per-node", "--signal",
                  "--dependency", "--kill-on-invalid-dep", "--exclude", "--max-children", "--no-index", "--no-deps",
                  "--tb",  # pytest's traceback style, in a GPU run's command
                  "--durations",  # pytest's, in docs/testing.md's measured runs
                  "--dist"}  # pytest-xdist's, in the README's test command and docs/testing.md


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def without_fenced_code(markdown: str) -> str:
    return re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)


def github_anchor(heading: str) -> str:
    """GitHub's heading id: lower case, punctuation other than '-' and '_' dropped, spaces to hyphens."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def anchors(path: Path) -> Set[str]:
    seen: Dict[str, int] = {}
    out = set()
    for line in without_fenced_code(text(path)).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            slug = github_anchor(match.group(1))
            out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return out


# ---------------------------------------------------------------------------------------------------- the README


def readme_command(marker: str) -> Optional[str]:
    """The code block between the README's ``<!-- marker -->`` and ``<!-- /marker -->`` lines (what .ci/run reads)."""
    block = re.search(rf"<!-- {marker} -->\n```\n(.+?)\n```\n<!-- /{marker} -->", text(README), re.S)
    return block.group(1) if block else None


def test_readme_is_short_and_keeps_the_ci_commands():
    lines = text(README).splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines (at most 250): move details into docs/"
    for marker in ("main-command", "test-command"):
        command = readme_command(marker)
        assert command and "\n" not in command, f"README.md needs one command between <!-- {marker} --> markers"
    assert "pytest" in readme_command("test-command")


def test_the_test_command_runs_a_single_threaded_worker_per_core():
    """The suite runs in pytest-xdist workers, whole files to a worker (a module's fixtures are built once), and
    each worker's torch keeps to one thread (conftest.py), so that two workers share two cores without
    oversubscribing them."""
    import torch

    command = readme_command("test-command")
    assert command and re.search(r"-m pytest -n \d+ --dist loadfile$", command), command
    if os.environ.get("PYTEST_XDIST_WORKER"):  # as the README's command runs it
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"


def test_readme_results_match_their_files():
    """The README's comparison tables are the published result files, as compare_readme renders them."""
    from fairseq_localness.experiments import compare_readme

    section = re.search(r"<!-- compare-results -->\n(.*?)\n<!-- /compare-results -->", text(README), re.S)
    assert section, "README.md needs the <!-- compare-results --> section"
    assert section.group(1) == compare_readme.render(), \
        "README.md's results differ from docs/results/compare/: run python -m fairseq_localness.experiments.compare_readme"
    assert compare_readme.speed_figure(compare_readme.RESULTS, check=True) == 0, \
        "docs/figures/compare-bleu-one-process-speed.* differ: run python -m fairseq_localness.experiments.compare_readme"
    for label, *_ in compare_readme.CORPORA:
        table = compare_readme.RESULTS / label / "table.md"
        if table.is_file():  # each published table is the table.json beside it, as the command writes both
            import json

            rows = json.loads((table.parent / "table.json").read_text())["rows"]
            assert all(f"| `{row['arch']}` | {row['norm']} | {len(row['seeds'])} |" in table.read_text() for row in rows)


def test_compare_readme_names_a_missing_page(tmp_path, capsys):
    """compare_readme's page and results flags: a path that is not there is one error naming the flag, before
    anything is read or written."""
    from fairseq_localness.experiments import compare_readme

    for flag, what in (("--readme", "no such file"), ("--extrapolation-page", "no such file"),
                       ("--attention-page", "no such file"), ("--results", "no such directory")):
        with pytest.raises(SystemExit) as refused:
            compare_readme.main(["--check", flag, str(tmp_path / "nope")])
        assert refused.value.code == 2
        assert f"error: {flag} {tmp_path / 'nope'}: {what}" in capsys.readouterr().err


def test_quickstart_times_are_the_measured_ones():
    """The minutes the README, docs/training.md and the quickstart's --help give are its timed run's
    (docs/results/testing/quickstart-time.json), rounded to the minute."""
    from fairseq_localness.experiments import doc_tables

    run = doc_tables.load_run(doc_tables.RESULTS / "testing" / "quickstart-time.json")
    full, smoke = doc_tables.quickstart_minutes(run), doc_tables.quickstart_minutes(run, "--smoke")
    said = {
        "README.md": (r"(\d+) minutes on a quiet 2-core machine", 2),
        "docs/training.md": (r"(\d+) minutes for the whole quickstart", 1),
        "scripts/quickstart.sh": (r"the whole run about (\d+) minutes", 1),
    }
    for name, (pattern, count) in said.items():
        found = [int(m) for m in re.findall(pattern, " ".join(text(REPO / name).split()))]
        assert found == [full] * count, f"{name}: {found} minutes; the timed quickstart took {full}"
    smoke_said = {"README.md": r"runs, in about (\d+) minutes", "docs/training.md": r"`--smoke` takes about (\d+) minutes"}
    for name, pattern in smoke_said.items():
        found = [int(m) for m in re.findall(pattern, " ".join(text(REPO / name).split()))]
        assert found == [smoke], f"{name}: --smoke in {found} minutes; the timed one took {smoke}"


@pytest.mark.parametrize("page, begin, end, render", [
    ("EXTRAPOLATION_PAGE", "EXTRAPOLATION_BEGIN", "EXTRAPOLATION_END", "render_extrapolation"),
    ("ATTENTION_PAGE", "ATTENTION_BEGIN", "ATTENTION_END", "render_trained_attention")])
def test_generated_result_blocks_match_their_files(page, begin, end, render):
    """The blocks compare_readme writes beside the README's results: docs/methods/modern.md's train-short /
    test-long block (the Europarl split's published files) and docs/analyses.md's trained attention (the published
    runs' analyses), each as its renderer gives it now."""
    from fairseq_localness.experiments import compare_readme

    path, begin, end = (getattr(compare_readme, name) for name in (page, begin, end))
    block = re.search(re.escape(begin) + r"\n(.*?)\n" + re.escape(end), path.read_text(encoding="utf-8"), re.S)
    assert block, f"{path} needs the {begin} block"
    assert block.group(1) == getattr(compare_readme, render)(), \
        f"{path} differs from docs/results/compare/: run python -m fairseq_localness.experiments.compare_readme"


def test_train_short_test_long_section_by_hand(tmp_path):
    import json

    from fairseq_localness.experiments import compare_readme

    results, page_dir = tmp_path / "docs" / "results" / "compare", tmp_path / "docs" / "methods"
    assert compare_readme.render_extrapolation(results, page_dir) == \
        "No run of this split has finished yet, so no number is published here."
    folder = results / "europarl_len_de_en"
    folder.mkdir(parents=True)
    (folder / "table.json").write_text(json.dumps({"caption": "europarl_len_de_en: 2 runs finished", "rows": []}))
    assert compare_readme.render_extrapolation(results, page_dir).startswith("No run")  # no buckets.md yet
    buckets = ("europarl_len_de_en: tokenized BLEU by source length\n\n| architecture | norm | 1-10 (200) | >60 (200) |\n"
               "|---|---|---|---|\n| `transformer` | pre | 30.00 | 10.00 |\n")
    (folder / "buckets.md").write_text(buckets)
    text = compare_readme.render_extrapolation(results, page_dir)
    assert text.startswith("Grid: europarl_len_de_en: 2 runs finished; "
                           "[full table](../results/compare/europarl_len_de_en/table.md)")
    assert buckets.strip() in text
    assert "![tokenized BLEU by source length, one line per architecture](../results/compare/europarl_len_de_en/buckets.png)" in text


def test_trained_attention_section_by_hand(tmp_path):
    """Mean and sample sd over the seeds that have the file, one row per architecture, norm and attention kind,
    in the order of the corpus's table; a cell a row lacks is '-'."""
    import json

    from fairseq_localness.experiments import compare_readme

    results, page_dir = tmp_path / "docs" / "results" / "compare", tmp_path / "docs"
    assert compare_readme.render_trained_attention(results, page_dir).startswith("No published run has its analyses")
    folder = results / "multi30k_de_en"
    header = "model,kind,layer,w,sentences,attn_s_percent,published_percent,published_from\n"
    files = {("transformer_dman", 1): ["dman,1,1,10,50.0", "san,1,1,10,20.0"],
             ("transformer", 1): ["san,1,1,10,10.0", "san,1,2,10,30.0"],
             ("transformer", 2): ["san,1,1,10,20.0", "san,1,2,10,40.0"]}
    for (arch, seed), lines in files.items():
        path = folder / "pre" / arch / f"seed{seed}" / "analyses" / "attention-mass.csv"
        path.parent.mkdir(parents=True)
        path.write_text(header + "".join(f"{arch},{line},,\n" for line in lines))
    (folder / "table.json").write_text(json.dumps({"caption": "multi30k_de_en: 3 runs finished",
                                                   "rows": [{"arch": "transformer"}, {"arch": "transformer_dman"}]}))
    text = compare_readme.render_trained_attention(results, page_dir)
    assert text.startswith("**Multi30k de→en (test2016, lowercased).** Runs: multi30k_de_en: 3 runs finished; "
                           "[full table](results/compare/multi30k_de_en/table.md).")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    # transformer, layer 1: w = 1 from 10 and 20 (mean 15, sd 7.07), w = 2 from 30 and 40 (35, 7.07)
    assert rows == ["| `transformer` | pre | san | 2 (seeds 1, 2) | 15.0 ± 7.1 | 35.0 ± 7.1 |",
                    "| `transformer_dman` | pre | dman | 1 (seed 1) | 50.0 | - |",
                    "| `transformer_dman` | pre | san | 1 (seed 1) | 20.0 | - |"]
    assert "| architecture | norm | attention | runs analysed | layer 1, w = 1 | layer 1, w = 2 |" in text


def test_readme_results_table_by_hand(tmp_path):
    """One row per (architecture, norm) across corpora; a corpus that lacks a row shows '-'; the baseline,
    a significant difference, a seed sd and, over two or more seeds, on how many the row is ahead, as the cells
    say."""
    import json

    from fairseq_localness.experiments import compare_readme

    def row(arch, bleu, sd=None, delta=None, mark="", seeds=(1, 2), per_seed=None):
        significance = {"sacrebleu": {"delta": delta, "mark": mark}} if delta is not None else {}
        return {"arch": arch, "norm": "pre", "seeds": list(seeds), "sacrebleu": bleu, "sacrebleu_sd": sd,
                "params": 2_400_000, "train_speed_ratio": 0.9, "significance": significance,
                **({"significance_seeds": list(seeds)} if significance else {}),
                **({"seed_deltas": {"sacrebleu": per_seed}} if per_seed else {})}

    for label, rows in (("multi30k_de_en", [row("transformer", 40.6, 0.1),
                                            row("transformer_dman", 41.94, 0.2, 1.34, "⇑", per_seed=[1.5, 1.2]),
                                            row("transformer_csan2d", 40.2, 0.9, -0.4, "↓", per_seed=[-1.3, 0.5]),
                                            row("transformer_sman", 41.5, None, 0.9, "↑", seeds=[1], per_seed=[0.9])]),
                        ("kftt_ja_en", [row("transformer", 20.0)])):
        (tmp_path / label).mkdir()
        (tmp_path / label / "table.json").write_text(json.dumps({"caption": f"{label}: 2 runs", "baseline": "transformer",
                                                                 "rows": rows}))
    text = compare_readme.render(tmp_path, tmp_path.parent)
    assert "* **Multi30k de→en (test2016, lowercased)**: multi30k_de_en: 2 runs; [full table](" in text
    assert "| architecture | norm | Multi30k de→en | KFTT ja→en | parameters (Multi30k de→en) |" in text
    assert "| `transformer` | pre | 40.60 ± 0.10 (baseline) | 20.00 (baseline) | 2.40M | 0.90 |" in text
    assert "| `transformer_dman` | pre | 41.94 ± 0.20 (+1.34 ⇑; 2 of 2 seeds ahead) | - | 2.40M | 0.90 |" in text
    # a mark the seeds do not all bear out: the cell says so
    assert "| `transformer_csan2d` | pre | 40.20 ± 0.90 (-0.40 ↓; 1 of 2 seeds ahead) | - | 2.40M | 0.90 |" in text
    # the baseline has seeds 1 and 2, SMAN only seed 1: the difference is on seed 1, and the cell says so
    assert "| `transformer_sman` | pre | 41.50 (+0.90 ↑, seed 1) | - | 2.40M | 0.90 |" in text


def test_readme_one_process_speed_column_by_hand(tmp_path):
    """The one-process benchmark of docs/results/benchmark/ adds a column (every norm row of an architecture
    shows its measurement, '-' where it has none) and a line with its date, machine and command; a file whose
    models differ from the grid's in the recipe's norm placement (the first rows'), in size or in norm placement,
    is refused, naming the file and the models."""
    import json

    from fairseq_localness.experiments import compare_readme

    results = tmp_path / "docs" / "results" / "compare"
    (results / "multi30k_de_en").mkdir(parents=True)
    rows = [{"arch": arch, "norm": norm, "seeds": [1], "sacrebleu": 40.0, "params": params, "train_speed_ratio": 0.5}
            for arch, norm, params in (("transformer", "pre", 2_396_672), ("transformer_dman", "pre", 2_804_501),
                                       ("transformer", "post", 2_396_160), ("transformer_cnns", "pre", 3_777_536))]
    (results / "multi30k_de_en" / "table.json").write_text(json.dumps(
        {"caption": "multi30k_de_en: 4 runs", "baseline": "transformer", "rows": rows}))
    assert compare_readme.render(results, tmp_path).count("training speed, one process") == 0  # no file: no column

    def ratio(median):
        return {"median": median, "q1": median, "q3": median, "min": median, "max": median, "rounds": 7}

    benchmark = {"date": "2026-01-02", "time": "10:00-10:10 UTC", "machine": "2-core CPU", "torch": "2.13.0+cpu",
                 "load_average": "0.1 before, 0.2 after", "note": "Nothing else ran.",
                 "command": "python scripts/benchmark.py --interleaved 7", "source": "written by the command",
                 "records": [{"arch": "transformer", "seq_len": 16, "params": 2_396_672, "train_ratio": ratio(1.0)},
                             {"arch": "transformer_dman", "seq_len": 16, "params": 2_804_501, "train_ratio": ratio(0.8149)}]}
    (tmp_path / "docs" / "results" / "benchmark").mkdir()
    speed_file = tmp_path / "docs" / "results" / "benchmark" / "compare-size-cpu-time.json"
    speed_file.write_text(json.dumps(benchmark))
    text = compare_readme.render(results, tmp_path)
    assert ("* **Training speed, one process**: each architecture's training step at the recipe's model size and "
            "norm placement (pre-norm; every measured model has the grid's parameters), on batches of 16-token "
            "sentences") in text
    assert ("median of 7 rounds; measured 2026-01-02, 10:00-10:10 UTC, on 2-core CPU, torch 2.13.0+cpu, load average "
            "0.1 before, 0.2 after; command: `python scripts/benchmark.py --interleaved 7`; "
            "[result file](docs/results/benchmark/compare-size-cpu-time.json)") in text
    assert "#the-table). Nothing else ran.\n" in text  # the file's note: what its load average means
    assert "| training speed, grid (Multi30k de→en) | training speed, one process |" in text
    assert "| `transformer` | pre | 40.00 (baseline) | 2.40M | 0.50 | 1.00 |" in text
    assert "| `transformer_dman` | pre | 40.00 | 2.80M | 0.50 | 0.81 |" in text
    assert "| `transformer` | post | 40.00 (baseline) | 2.40M | 0.50 | 1.00 |" in text
    assert "| `transformer_cnns` | pre | 40.00 | 3.78M | 0.50 | - |" in text
    # the post-norm Transformer (one final layer norm less) measured for the pre-norm recipe
    benchmark["records"][0]["params"] = 2_396_160
    speed_file.write_text(json.dumps(benchmark))
    with pytest.raises(ValueError, match=r"compare-size-cpu-time.json: parameters differ from the grid's pre-norm "
                                         r"models: transformer 2,396,160 \(grid: 2,396,672\)"):
        compare_readme.render(results, tmp_path)
    # a method's model at another size, its baseline right
    benchmark["records"][0]["params"], benchmark["records"][1]["params"] = 2_396_672, 9_999
    speed_file.write_text(json.dumps(benchmark))
    with pytest.raises(ValueError, match=r"transformer_dman 9,999 \(grid: 2,804,501\)"):
        compare_readme.render(results, tmp_path)


def test_the_speed_figure_points_by_hand(tmp_path):
    """The front door's figure: the first corpus's rows in the recipe's norm placement that the one-process
    measurement timed, BLEU (mean, sd) against the median and interquartile range of their speed ratio; written
    by compare_readme (CSV and PNG beside the results' parent), linked from the speed line once drawn, and held to
    its files by --check."""
    import json

    from fairseq_localness.experiments import compare_readme

    results = tmp_path / "docs" / "results" / "compare"
    (results / "multi30k_de_en").mkdir(parents=True)
    rows = [{"arch": "transformer", "norm": "pre", "seeds": [1, 2, 3], "sacrebleu": 40.57, "sacrebleu_sd": 0.12,
             "params": 2_396_672},
            {"arch": "transformer_dman", "norm": "pre", "seeds": [1, 2], "sacrebleu": 42.06, "sacrebleu_sd": 0.24,
             "params": 2_804_501},
            {"arch": "transformer_cnns", "norm": "pre", "seeds": [1], "sacrebleu": 41.46, "sacrebleu_sd": None,
             "params": 3_777_536},  # not measured in one process: no point
            {"arch": "transformer", "norm": "post", "seeds": [1], "sacrebleu": 41.41, "sacrebleu_sd": None,
             "params": 2_396_160}]  # another norm placement than the one measured: no point
    table = results / "multi30k_de_en" / "table.json"
    table.write_text(json.dumps({"caption": "multi30k_de_en: 7 runs", "baseline": "transformer", "rows": rows}))
    assert compare_readme.speed_figure_points(results) == []  # no one-process file
    spread = {"median": 0.8119, "q1": 0.8026, "q3": 0.8278, "min": 0.72, "max": 0.83, "rounds": 7}
    benchmark = {"date": "2026-01-02", "time": "10:00-10:10 UTC", "machine": "2-core CPU", "command": "benchmark",
                 "source": "written by the command", "torch": "2.13.0+cpu",
                 "records": [{"arch": "transformer", "seq_len": 16, "params": 2_396_672,
                              "train_ratio": {**spread, "median": 1.0, "q1": 1.0, "q3": 1.0}},
                             {"arch": "transformer_dman", "seq_len": 16, "params": 2_804_501, "train_ratio": spread}]}
    (tmp_path / "docs" / "results" / "benchmark").mkdir()
    (tmp_path / "docs" / "results" / "benchmark" / "compare-size-cpu-time.json").write_text(json.dumps(benchmark))
    speed_file = "docs/results/benchmark/compare-size-cpu-time.json,2026-01-02"
    assert compare_readme.speed_figure_csv(compare_readme.speed_figure_points(results)) == (
        "arch,baseline,norm,seeds,metric,bleu,bleu_sd,speed_median,speed_q1,speed_q3,speed_rounds,speed_file,"
        "speed_measured\n"
        f"transformer,transformer,pre,3,sacrebleu,40.57,0.12,1.0000,1.0000,1.0000,7,{speed_file}\n"
        f"transformer_dman,transformer,pre,2,sacrebleu,42.06,0.24,0.8119,0.8026,0.8278,7,{speed_file}\n")
    # as drawn: x the median with its interquartile range, y the BLEU with its sd; the 2-seed row hollow
    series = compare_readme.speed_figure_series(compare_readme.speed_figure_points(results))
    assert [(g.legend, g.hollow, [(q.label, q.x, q.y, q.yerr, q.xerr) for q in g.points]) for g in series] == [
        ("3 seeds", False, [("transformer", 1.0, 40.57, 0.12, (0.0, 0.0))]),
        ("fewer seeds so far (1-2)", True,
         [("dman", 0.8119, 42.06, 0.24, (pytest.approx(0.8119 - 0.8026), pytest.approx(0.8278 - 0.8119)))])]
    assert "compare-bleu-one-process-speed" not in compare_readme.render(results, tmp_path)  # not drawn: not linked
    assert compare_readme.speed_figure(results, check=True) == 1  # --check writes nothing, and says so
    figures = tmp_path / "docs" / "figures"
    assert not figures.exists()
    assert compare_readme.speed_figure(results, check=False) == 0
    assert (figures / "compare-bleu-one-process-speed.png").read_bytes().startswith(b"\x89PNG")
    assert ", [figure](docs/figures/compare-bleu-one-process-speed.png) of Multi30k de→en's pre-norm BLEU against " \
           "this speed ([its points](docs/figures/compare-bleu-one-process-speed.csv))." in \
           compare_readme.render(results, tmp_path)
    assert compare_readme.speed_figure(results, check=True) == 0
    png = figures / "compare-bleu-one-process-speed.png"
    drawn = png.read_bytes()
    png.write_bytes((REPO / "docs" / "figures" / "dman_learning_curves.png").read_bytes())  # another figure
    assert compare_readme.speed_figure(results, check=True) == 1
    png.write_bytes(drawn.replace(b"sha256 ", b"sha256 0"))  # a damaged copy
    assert compare_readme.speed_figure(results, check=True) == 1
    png.unlink()  # the CSV as it should be, the PNG gone
    assert compare_readme.speed_figure(results, check=True) == 1 and not png.exists()
    assert compare_readme.speed_figure(results, check=False) == 0 and png.read_bytes() == drawn
    # the title's source line is in the CSV: another measurement date is another figure
    benchmark["date"] = "2026-01-03"
    (tmp_path / "docs" / "results" / "benchmark" / "compare-size-cpu-time.json").write_text(json.dumps(benchmark))
    assert compare_readme.speed_figure(results, check=True) == 1
    benchmark["date"] = "2026-01-02"
    (tmp_path / "docs" / "results" / "benchmark" / "compare-size-cpu-time.json").write_text(json.dumps(benchmark))
    rows[1]["sacrebleu"] = 42.1  # a new seed moves a point: --check sees the figure's points differ
    table.write_text(json.dumps({"caption": "multi30k_de_en: 8 runs", "baseline": "transformer", "rows": rows}))
    assert compare_readme.speed_figure(results, check=True) == 1
    # the command draws the figure before it writes the README, which links it in the same call
    (figures / "compare-bleu-one-process-speed.png").unlink()
    pages = {"--readme": "<!-- compare-results -->\n<!-- /compare-results -->\n",
             "--extrapolation-page": "<!-- extrapolation-results -->\n<!-- /extrapolation-results -->\n",
             "--attention-page": "<!-- trained-attention -->\n<!-- /trained-attention -->\n"}
    argv = ["--results", str(results)]
    for flag, body in pages.items():
        (tmp_path / f"{flag[2:]}.md").write_text(body)
        argv += [flag, str(tmp_path / f"{flag[2:]}.md")]
    assert compare_readme.main(argv) == 0
    assert "42.10" in (figures / "compare-bleu-one-process-speed.csv").read_text()
    assert "[figure](docs/figures/compare-bleu-one-process-speed.png)" in (tmp_path / "readme.md").read_text()
    assert compare_readme.main(["--check", *argv]) == 0


# ---------------------------------------------------------------------------------------------------- links


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", without_fenced_code(text(page))):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path_part, _, anchor = target.partition("#")
            resolved = (page.parent / path_part).resolve() if path_part else page
            if not resolved.exists():
                broken.append(f"{rel(page)}: {target} (no such file)")
            elif anchor and (resolved.is_dir() or anchor not in anchors(resolved)):
                broken.append(f"{rel(page)}: {target} (no heading #{anchor})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_docs_page_is_reachable_from_the_index():
    index = text(REPO / "docs" / "index.md")
    linked = {(REPO / "docs" / t.partition("#")[0]).resolve() for t in re.findall(r"\]\(([^)\s]+)\)", index)}
    missing = [rel(p) for p in DOCS if p.name != "index.md" and p.resolve() not in linked]
    assert not missing, f"docs/index.md does not link to {missing}"


# ---------------------------------------------------------------------------------------------------- names

PATH_PATTERN = re.compile(r"(?<![\w/.$-])((?:scripts|data-prep|configs|fairseq_localness|localness_prep|tests|docs|data)/[\w./{},*:-]*)")


def expand_braces(path: str) -> List[str]:
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [p for alt in match.group(1).split(",") for p in expand_braces(path[: match.start()] + alt + path[match.end():])]


def test_every_named_file_exists():
    missing = []
    for page in PAGES:
        for raw in PATH_PATTERN.findall(text(page)):
            name = raw.rstrip(".,:")
            if "*" in name or name.endswith("-"):
                continue  # a pattern (configs/arch/transformer_block*.yaml)
            for path in expand_braces(name.split("::")[0]):
                if not (REPO / path).exists():
                    missing.append(f"{rel(page)}: {path}")
            if "::" in name:
                test_file, test_name = name.split("::")
                if not re.search(rf"def {test_name}\b", text(REPO / test_file)):
                    missing.append(f"{rel(page)}: {name}")
    assert not missing, "named but missing:\n" + "\n".join(missing)


def find_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent is a module, not a package: the name is an attribute
        return False


def test_every_named_module_and_entry_point_exists():
    missing = []
    scripts = tomllib.loads(text(REPO / "pyproject.toml"))["project"]["scripts"]
    for page in PAGES:
        body = text(page)
        for dotted in set(re.findall(r"\b(?:fairseq_localness|localness_prep)(?:\.\w+)+", body)):
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
                module = ".".join(parts[:cut])
                if find_module(module):
                    obj = importlib.import_module(module)
                    for attr in parts[cut:]:
                        obj = getattr(obj, attr, None)
                    if obj is None:
                        missing.append(f"{rel(page)}: {dotted}")
                    break
            else:
                missing.append(f"{rel(page)}: {dotted}")
        for command in set(re.findall(r"\bfairseq-localness(?:-[a-z]+)*\b", body)):
            if command not in scripts and command != "fairseq-localness":  # the project's name
                missing.append(f"{rel(page)}: console command {command}")
    assert not missing, "named but missing:\n" + "\n".join(missing)


def registered_architectures() -> Dict[str, str]:
    import fairseq_localness  # noqa: F401
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    return dict(ARCH_MODEL_NAME_REGISTRY)


def test_every_named_architecture_exists():
    from fairseq.models import MODEL_REGISTRY

    archs = registered_architectures()
    unknown = []
    for page in PAGES:
        for name in set(re.findall(r"(?<![<\w])(transformer(?:_[a-z0-9]+)+)\b(?![*\w])", text(page))):
            if name not in archs and name not in MODEL_REGISTRY and name != EXAMPLE_ARCH:
                unknown.append(f"{rel(page)}: {name}")
    assert not unknown, "architectures that fairseq does not know:\n" + "\n".join(sorted(unknown))


def plugin_architectures() -> List[str]:
    return [a for a, m in registered_architectures().items()
            if m in ("transformer_localness", "transformer_man") and TEST_ARCH not in a]


def test_every_architecture_is_indexed():
    """docs/architectures.md names every architecture the plugin registers (translation size variants,
    classifiers, language models, summarization); the README names every base translation one and links the
    index."""
    ours = plugin_architectures()
    index = text(REPO / "docs" / "architectures.md")
    from fairseq.models import ARCH_MODEL_REGISTRY

    every = [a for a, model in ARCH_MODEL_REGISTRY.items()
             if model.__module__.startswith("fairseq_localness") and TEST_ARCH not in a]
    assert len(every) >= len(ours) + 9 and [a for a in every if f"`{a}`" not in index] == []
    from fairseq_localness.architectures.base import SIZE_VARIANTS

    readme = text(README)
    bases = [a for a in ours if not a.endswith(tuple(suffix for suffix in SIZE_VARIANTS if suffix))]
    assert "transformer_dman" in bases and "transformer_dman_iwslt_de_en" not in bases
    assert [a for a in bases if f"`{a}`" not in readme] == [] and "docs/architectures.md" in readme


def test_docs_document_every_method_option():
    from fairseq_localness.attention import LOCALITY_METHODS

    docs = "\n".join(text(p) for p in PAGES)
    undocumented = []
    for name, method in LOCALITY_METHODS.items():
        if name == TEST_METHOD:
            continue
        # families may document shared flags once: --csan*-window (csan1d, csan2d), --diffwin-P-mode (enc, cross, dec)
        stems = {name.split("_")[0], name.rstrip("12d")}
        for fld in dataclasses.fields(method.Options):
            option = fld.name.replace("_", "-")
            spellings = {f"--{name.replace('_', '-')}-{option}"}
            spellings |= {f"--{stem}*-{option}" for stem in stems} | {f"--{stem}-P-{option}" for stem in stems}
            if not any(s in docs for s in spellings):
                undocumented.append(f"--{name.replace('_', '-')}-{option}")
    assert not undocumented, f"method options missing from README.md and docs/: {undocumented}"


# ---------------------------------------------------------------------------------------------------- flags


def fairseq_flags() -> Set[str]:
    """Every option of fairseq-train (with each model family's and method's flags), -generate and -preprocess."""
    from fairseq import options

    found: Set[str] = set()
    for arch, task, criterion in (("transformer_localness", "translation", "label_smoothed_cross_entropy"),
                                  ("transformer_dman", "translation", "label_smoothed_cross_entropy"),
                                  ("localness_classifier_tiny", "sentence_prediction", "sentence_prediction"),
                                  ("transformer_lm_localness", "language_modeling", "cross_entropy")):
        parser = options.get_training_parser()
        options.parse_args_and_arch(parser, ["data", "--user-dir", USER_DIR, "--arch", arch, "--task", task,
                                             "--optimizer", "adam", "--lr-scheduler", "inverse_sqrt",
                                             "--criterion", criterion], parse_known=True)
        found |= set(parser._option_string_actions)
    for parser in (options.get_generation_parser(), options.get_interactive_generation_parser()):
        options.parse_args_and_arch(parser, ["data", "--task", "translation"], parse_known=True)  # adds task flags
        found |= set(parser._option_string_actions)
    return found | set(options.get_preprocessing_parser()._option_string_actions)


#: prints, as JSON, the --help of each Python entry point in one process (importing fairseq once, not per script)
HELP_DRIVER = r"""
import contextlib, io, json, runpy, sys
texts = {}
for key, kind, target, args in json.loads(sys.argv[1]):
    sys.argv = [target, *args, "--help"]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            if kind == "path":
                runpy.run_path(target, run_name="__main__")
            else:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
        except (SystemExit, Exception):  # a helper subcommand without --help (launch.py progress)
            pass
    texts[key] = buffer.getvalue()
print(json.dumps(texts))
"""


def flags_in(help_text: str) -> Set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_text))


def subcommands(help_text: str) -> List[str]:
    """Subcommands a --help lists: {a,b,...} in the usage (not an option's choices), or argparse's sub-parser list."""
    usage = help_text.split("\n\n")[0]
    found = []
    for match in re.finditer(r"\{([a-z][\w,-]*)\}", usage):
        before = usage[: match.start()].split()
        option_value = before and before[-1].lstrip("[").startswith("-") and not before[-1].endswith("]")
        if not option_value:  # "[--device {auto,cpu}]" are choices, "[-h] {prepare,run}" subcommands
            found += match.group(1).split(",")
    if re.search(r"usage: \S+ (\[-h\] )?[A-Z_]+ \.\.\.", help_text):  # a sub-parser with a metavar
        positional = help_text.split("positional arguments:", 1)[-1].split("\n\n")[0]
        found += re.findall(r"^    ([a-z][\w-]*)(?:\s{2,}|$)", positional, re.M)
    return found


def python_help(entries: List[tuple]) -> Dict[str, str]:
    import json

    out = run([str(BIN / "python"), "-c", HELP_DRIVER, json.dumps(entries)], env={"PYTHONPATH": str(REPO)}).stdout
    return json.loads(out.strip().splitlines()[-1])


@lru_cache(maxsize=1)
def known_flags() -> frozenset:
    """fairseq's options, and every option in the --help of our scripts, data-prep scripts and Python helpers."""
    found = set(fairseq_flags()) | {"--help"} | EXTERNAL_FLAGS
    shell = sorted((REPO / "scripts").glob("*.sh")) + sorted((REPO / "data-prep").glob("prepare-*.sh"))
    for script in shell:  # scripts that answer --help themselves; wrappers that exec Python are read below
        answers_help = "--help" in text(script)  # a data-prep door names it: its Python module answers it
        if answers_help and not re.search(r'^exec "\$PYTHON"', text(script), re.M):
            found |= flags_in(run(["bash", str(script), "--help"]).stdout)
    entries = [(str(p), "path", str(p), []) for p in sorted((REPO / "scripts").glob("*.py"))]
    modules = [".".join(p.relative_to(REPO).with_suffix("").parts)
               for package in ("fairseq_localness", "localness_prep") for p in sorted((REPO / package).rglob("*.py"))
               if "__main__" in text(p) and "ArgumentParser" in text(p)]
    entries += [(m, "module", m, []) for m in modules]
    texts = python_help(entries)
    subs = [(f"{key} {sub}", kind, target, [sub]) for key, kind, target, _ in entries for sub in subcommands(texts[key])]
    texts.update(python_help(subs) if subs else {})
    for help_text in texts.values():
        found |= flags_in(help_text)
    return frozenset(found)


def flag_pattern(flag: str) -> re.Pattern:
    """--csan*-window and --diffwin-P-mode name a family of flags."""
    body = re.escape(flag).replace(re.escape("*"), "[a-z0-9]+").replace(re.escape("-P-"), "-(?:enc|cross|dec)-")
    return re.compile(body + "$")


def test_every_named_flag_exists():
    known = known_flags()
    unknown = []
    for page in PAGES:
        body = text(page).replace("--[no-]", "--no-")  # --[no-]share-all-embeddings names both spellings
        for flag in set(re.findall(r"(?<![\w<-])(--[a-z][a-z0-9*P-]*[a-z0-9])(?![\w<>-])", body)):
            if flag in known or ("*" in flag or "-P-" in flag) and any(flag_pattern(flag).match(k) for k in known):
                continue
            if page.name == "design.md" and flag.startswith(f"--{EXAMPLE_METHOD.replace('_', '-')}-"):
                continue  # the worked example's own flags (test_design_example_method_works)
            unknown.append(f"{rel(page)}: {flag}")
    assert not unknown, "flags that no command accepts:\n" + "\n".join(sorted(unknown))


# ---------------------------------------------------------------------------------------------------- design.md


def test_design_example_method_works(tiny_data_bin):
    """docs/design.md's 'Adding a method' example registers (under a test-only name), builds, and decodes
    step by step exactly as a full forward pass, padding included."""
    from fairseq_localness.attention import LOCALITY_METHODS

    design = text(REPO / "docs" / "design.md")
    example = re.search(r"## Adding a method\n.*?```python\n(.*?)```", design, re.S).group(1)
    assert len(example.strip().splitlines()) < 40, "the worked example should stay under 40 lines"
    assert f'"{EXAMPLE_METHOD}"' in example and f'"{EXAMPLE_ARCH}"' in example
    if TEST_METHOD not in LOCALITY_METHODS:
        renamed = example.replace(f'"{EXAMPLE_ARCH}"', f'"{TEST_ARCH}"').replace(f'"{EXAMPLE_METHOD}"', f'"{TEST_METHOD}"')
        exec(compile(renamed, "docs/design.md", "exec"), {})
    model, task = build_model(TEST_ARCH, tiny_data_bin, {f"{TEST_METHOD}_attention": "encoder,decoder", f"{TEST_METHOD}_slope": 0.7})
    penalised = [m for m in model.modules() if type(m).__name__ == "DistancePenalty"]
    assert len(penalised) == 6 and all(m.options.slope == 0.7 for m in penalised)  # layers 1-3 x encoder, decoder
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


# ---------------------------------------------------------------------------------------------------- README examples

#: a tiny model: the papers' placements (layers 1-3) still fit
TINY_MODEL = {"encoder_layers": 3, "decoder_layers": 3, "encoder_embed_dim": 32, "decoder_embed_dim": 32,
              "encoder_ffn_embed_dim": 64, "decoder_ffn_embed_dim": 64, "encoder_attention_heads": 4,
              "decoder_attention_heads": 4}
TINY_TRAIN = {"max_update": 2, "max_tokens": 1024, "update_freq": 1, "num_workers": 0, "warmup_updates": 1}


def readme_commands() -> List[List[str]]:
    """Commands of the README's 'Train and translate' section, continuation lines joined, comments dropped."""
    section = text(README).split("## Train and translate", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]
    return [c for c in commands if c]


def readme_examples() -> List[List[List[str]]]:
    """The commands grouped per example: a training command and the commands that follow it."""
    examples: List[List[List[str]]] = []
    for command in readme_commands():
        if command[0] == "fairseq-train" or command[:2] == ["bash", "scripts/train.sh"]:
            examples.append([])
        examples[-1].append(command)
    return examples


def example_id(example: List[List[str]]) -> str:
    train = example[0]
    return train[train.index("--arch") + 1] if "--arch" in train else train[3]


EXAMPLES = readme_examples()
FAST_EXAMPLES = {"transformer_gaussian_local_wmt_en_de", "transformer_dman_iwslt_de_en"}


def test_readme_has_one_example_per_paper():
    trained = [example_id(e) for e in EXAMPLES]
    for family in ("gaussian", "csan", "hybrid", "diffwin", "dman"):
        assert any(family in arch for arch in trained), f"README has no training example for {family}: {trained}"
    for example in EXAMPLES:
        assert example[-1][0] == "fairseq-generate", f"{example_id(example)}: no fairseq-generate after training"


def test_readme_examples_decode_as_the_tables_do():
    """Each paper example decodes with its setting's beam and length penalty as reproduce.sh scores it, and where
    that setting averages checkpoints the README says so next to the example."""
    from fairseq_localness.experiments.tables import evaluation_of, load_tables

    tables = load_tables()
    for example in EXAMPLES:
        train, generate = example[0], example[-1]
        setting = train[2] if train[:2] == ["bash", "scripts/train.sh"] else "wmt14_en_de_base"  # the complete recipe it names
        flags = evaluation_of(tables, setting).evaluate_flags("test")
        for flag, default in (("--beam", "5"), ("--lenpen", "1.0")):
            wanted = flags[flags.index(flag) + 1] if flag in flags else default
            given = option_value(generate, flag) if flag in generate else default
            assert float(given) == float(wanted), f"{example_id(example)}: {flag} {given}, but {setting} scores with {wanted}"
        if "--avg-last" in flags:
            average = f"--avg-last {flags[flags.index('--avg-last') + 1]}"
            assert any(average in line and setting in line for line in text(README).splitlines()), \
                f"{example_id(example)}: {setting} averages checkpoints ({average}); the README must say so"
            # the evaluate.sh command the README's comment gives scores as reproduce.sh does: the same beam, length
            # penalty, averaging and compound splitting (evaluate.sh's default follows the data, not the paper)
            comment = " ".join(line.strip().lstrip("#") for line in text(README).splitlines()
                               if line.strip().startswith("#"))
            found = re.search(r"bash scripts/evaluate\.sh\s+\S*" + re.escape(setting) + r"[^;]*", comment)
            assert found, f"{example_id(example)}: no evaluate.sh command for {setting} in the README's comment"
            given = found.group(0).split()
            for flag in ("--beam", "--lenpen", "--avg-last"):
                assert flag in given and float(option_value(given, flag)) == float(flags[flags.index(flag) + 1]), \
                    f"{example_id(example)}: the README's evaluate.sh gives {flag} unlike {setting}: {found.group(0)}"
            compound = next(f for f in flags if f.endswith("compound-split"))
            assert compound in given, f"{example_id(example)}: {setting} scores with {compound}: {found.group(0)}"


#: the plain fairseq-train example's flags and the recipe keys they set
PLAIN_TRAIN_FLAGS = {
    "--optimizer": ("optimizer", "_name"), "--adam-betas": ("optimizer", "adam_betas"),
    "--adam-eps": ("optimizer", "adam_eps"), "--weight-decay": ("optimizer", "weight_decay"),
    "--lr-scheduler": ("lr_scheduler", "_name"), "--warmup-updates": ("lr_scheduler", "warmup_updates"),
    "--warmup-init-lr": ("lr_scheduler", "warmup_init_lr"), "--criterion": ("criterion", "_name"),
    "--label-smoothing": ("criterion", "label_smoothing"), "--clip-norm": ("optimization", "clip_norm"),
    "--lr": ("optimization", "lr"), "--update-freq": ("optimization", "update_freq"),
    "--max-update": ("optimization", "max_update"), "--max-tokens": ("dataset", "max_tokens"),
}


def test_readme_plain_fairseq_train_is_the_recipe():
    """The README's plain fairseq-train example stands for ``train.sh wmt14_en_de_base``: every optimiser,
    schedule, criterion and batch value of that recipe is given by a flag or is fairseq's default, and every
    model value is the architecture's or a flag's. Only validation by BLEU and checkpointing are left to the
    complete recipe, as the README says."""
    import argparse
    import ast

    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterionConfig
    from fairseq.models import ARCH_CONFIG_REGISTRY
    from fairseq.optim.adam import FairseqAdamConfig
    from fairseq.optim.lr_scheduler.inverse_square_root_schedule import InverseSquareRootLRScheduleConfig

    import fairseq_localness  # noqa: F401  (registers the architectures)
    from fairseq_localness.experiments.recipes import benchmark_values

    def value(raw):
        raw = ast.literal_eval(raw) if isinstance(raw, str) and raw[:1] in "(-.0123456789[" else raw
        raw = raw[0] if isinstance(raw, list) and len(raw) == 1 else raw
        return tuple(float(x) for x in raw) if isinstance(raw, tuple) else raw

    [train] = [example[0] for example in EXAMPLES if example[0][0] == "fairseq-train"]
    recipe = benchmark_values("wmt14_en_de_base")
    defaults = {**dataclasses.asdict(FairseqAdamConfig()), **dataclasses.asdict(InverseSquareRootLRScheduleConfig()),
                **dataclasses.asdict(LabelSmoothedCrossEntropyCriterionConfig())}
    for flag, (group, key) in PLAIN_TRAIN_FLAGS.items():
        if key not in recipe.get(group, {}):
            continue
        given = option_value(train, flag) if flag in train else defaults.get(key, "<fairseq's default>")
        got, wanted = value(given), value(recipe[group][key])
        assert got == (pytest.approx(wanted) if isinstance(got, float) else wanted), \
            f"README's fairseq-train: {flag} {given!r}, the recipe's {group}.{key} is {recipe[group][key]!r}"
    model = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[option_value(train, "--arch")](model)
    for key, wanted in recipe["model"].items():
        flag = "--" + key.replace("_", "-")
        given = (flag in train) if isinstance(wanted, bool) else \
            value(option_value(train, flag)) if flag in train else getattr(model, key)
        assert given == wanted, f"README's fairseq-train: model {key} is {given!r}, the recipe's is {wanted!r}"


def option_value(command: List[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def replace_option(command: List[str], flag: str, value: str) -> List[str]:
    command = list(command)
    command[command.index(flag) + 1] = value
    return command


def tiny(command: List[str], data_bin: Path) -> List[str]:
    """The README's command on the shipped sample at a tiny size (the last value of a repeated flag wins)."""
    if command[0] in ("fairseq-train", "fairseq-generate"):
        command = [str(BIN / command[0]), str(data_bin), *replace_option(command, "--user-dir", USER_DIR)[2:]]
        extra = {**TINY_MODEL, **TINY_TRAIN, "cpu": None} if command[0].endswith("train") else \
            {"max_len_a": 0, "max_len_b": 8, "cpu": None}
        for key, value in extra.items():
            command += [f"--{key.replace('_', '-')}"] + ([] if value is None else [str(value)])
        return command
    assert command[:2] == ["bash", "scripts/train.sh"], command
    overrides = {f"model.{k}": v for k, v in TINY_MODEL.items()}
    overrides.update({"optimization.max_update": 2, "dataset.num_workers": 0, "lr_scheduler.warmup_updates": 1,
                      "task.source_lang": "zh", "task.target_lang": "en", "common.cpu": "true"})
    kept = [arg for arg in command[2:] if arg.split("=")[0] not in overrides]  # the README's own overrides
    command = ["bash", str(REPO / "scripts" / "train.sh"), *replace_option(kept, "--data", str(data_bin))]
    return command + ["--max-tokens", "1024", "--effective-tokens", "1024"] + [f"{k}={v}" for k, v in overrides.items()]


@pytest.fixture(scope="module")
def joined_sample(tmp_path_factory) -> Path:
    """The shipped zh-en sample with one joined dictionary (the examples share all embeddings)."""
    out = tmp_path_factory.mktemp("sample")
    run(["bash", str(REPO / "data-prep" / "prepare-sample.sh"), "--out", str(out / "prep"), "--joined-dictionary",
         "--bpe-tokens", "1000"])
    return out / "prep" / "data-bin"


@pytest.mark.parametrize(
    "example", [pytest.param(e, id=example_id(e), marks=() if example_id(e) in FAST_EXAMPLES else pytest.mark.slow)
                for e in EXAMPLES],
)
def test_readme_example_trains_and_translates(example, joined_sample, tmp_path):
    outputs = []
    for command in example:
        outputs.append(run(tiny(command, joined_sample), cwd=tmp_path).stdout)
    checkpoint = tmp_path / option_value(example[-1], "--path")
    assert checkpoint.exists(), f"the example's fairseq-generate --path {checkpoint} is not where training wrote it"
    translated = re.findall(r"^H-\d+\t", outputs[-1], re.M)
    assert len(translated) == 500, f"expected the 500 test sentences, got {len(translated)}"


@pytest.fixture(scope="module")
def quickstart_like(tmp_path_factory) -> Path:
    """What ``bash scripts/quickstart.sh`` leaves in runs/quickstart, at a tiny size: the sample prepared as the
    quickstart prepares it (separate BPE codes code.zh / code.en) and a transformer_gaussian_local checkpoint.
    40 updates (a few seconds): enough for short outputs, where 2 updates decode 200 tokens a sentence."""
    work = tmp_path_factory.mktemp("quickstart")
    run(["bash", str(REPO / "data-prep" / "prepare-sample.sh"), "--out", str(work / "data"), "--bpe-tokens", "1000"])
    train_like_quickstart(work, "transformer_gaussian_local")
    return work


def train_like_quickstart(work: Path, arch: str) -> Path:
    """A tiny ``arch`` checkpoint trained as ``quickstart_like`` trains its own, on its data, into work/ARCH."""
    overrides = {**{f"model.{k}": v for k, v in TINY_MODEL.items()}, "optimization.max_update": 40,
                 "dataset.num_workers": 0, "lr_scheduler.warmup_updates": 1, "common.cpu": "true"}
    run(["bash", str(REPO / "scripts" / "train.sh"), "sample_zh_en_tiny", arch,
         "--data", str(work / "data" / "data-bin"), "--save-dir", str(work / arch),
         "--max-tokens", "1024", "--effective-tokens", "1024", *[f"{k}={v}" for k, v in overrides.items()]])
    return work / arch


def readme_translate_block(language: str) -> str:
    """The README's one ``language`` code block (bash, python) of its 'Translate with a trained model' section."""
    section = re.search(r"<!-- translate-example -->\n(.*?)<!-- /translate-example -->", text(README), re.S)
    assert section, "README.md needs the <!-- translate-example --> section"
    (block,) = re.findall(rf"```{language}\n(.*?)```", section.group(1), re.S)
    return block


@pytest.mark.parametrize("arch", ["transformer_dman", "transformer_sman"])
def test_readme_python_example_loads_man_checkpoints(quickstart_like, arch, tmp_path):
    """The README says that the Python example's ``LocalnessTransformerModel.from_pretrained`` builds whichever model
    the checkpoint holds, DMAN/SMAN included (their own registered model class): the example, pointed at a MAN
    checkpoint, builds that class and prints one translation."""
    train_like_quickstart(quickstart_like, arch)
    python = readme_translate_block("python").replace("runs/quickstart/transformer_gaussian_local", f"runs/quickstart/{arch}")
    python = python.replace("runs/quickstart", str(quickstart_like))
    python += "\nprint(type(model.models[0]).__name__)\n"
    out = run([str(BIN / "python"), "-c", python], cwd=tmp_path).stdout.splitlines()
    assert len(out) == 2 and out[0].strip(), f"expected one translation and the model's class, got {out!r}"
    assert out[1] == "MANTransformerModel", f"{arch}'s checkpoint was built as {out[1]}, not as the MAN model"


def test_readme_translation_example_runs(quickstart_like, tmp_path):
    """The README's 'Translate with a trained model' commands, run as written on a quickstart-like directory:
    the shell pipeline prints one English line, the Python example one string."""
    shell, python = readme_translate_block("bash"), readme_translate_block("python")
    assert "runs/quickstart/" in shell and "runs/quickstart/" in python
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # python, fairseq-interactive, subword-nmt
    for kind, command in (("shell", ["bash", "-eo", "pipefail", "-c", shell]), ("python", [str(BIN / "python"), "-c", python])):
        command = [part.replace("runs/quickstart", str(quickstart_like)) for part in command]
        out = run(command, cwd=tmp_path, env=env).stdout
        lines = out.splitlines()
        assert len(lines) == 1 and lines[0].strip(), f"the {kind} example should print one translation, got: {out!r}"
