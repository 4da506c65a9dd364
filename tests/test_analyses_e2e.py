"""Every checkpoint-based analysis through the command line, on tiny checkpoints trained here with fairseq-train
(one update each on the synthetic corpus), and the text-file analyses; each must write a non-empty PNG and CSV."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from fairseq_localness.analyses.cli import ANALYSES, main
from fairseq_localness.analyses.loading import AnalysisError
from localness_testing import REPO, preprocess, run, train_command, write_synthetic_corpus

#: name: (architecture, extra flags); the first holds three methods so that one training serves three analyses
CHECKPOINTS = {
    "query": ("transformer_localness", ["--locality-methods", "gaussian,hybrid,diffwin_enc"]),
    "layer": ("transformer_gaussian_local", ["--gaussian-window", "layer"]),
    "head": ("transformer_gaussian_local", ["--gaussian-window", "head"]),
    "dman": ("transformer_dman", []),
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    work = tmp_path_factory.mktemp("analyses")
    write_synthetic_corpus(work / "raw", train=60)
    data_bin = preprocess(work / "raw", work / "bin")
    paths = {}
    for name, (arch, extra) in CHECKPOINTS.items():
        run(train_command(data_bin, work / name, arch, [*extra, "--disable-validation"], updates=1))
        paths[name] = str(work / name / "checkpoint_last.pt")
    return work, data_bin, paths


def test_every_analysis_writes_figure_and_numbers(trained, tmp_path):
    work, data_bin, ckpt = trained
    data = ["--data", str(data_bin), "--quiet"]
    raw = work / "raw"
    tags = tmp_path / "tags.txt"
    tags.write_text("".join(" ".join("NUM" if int(w[1:]) % 2 else "NOUN" for w in line.split()) + "\n"
                            for line in (raw / "valid.src").read_text().splitlines()))
    # translations for the text analyses: the references, and a copy with every third word changed
    refs = (raw / "test.tgt").read_text().splitlines()
    (tmp_path / "sys.txt").write_text((raw / "test.tgt").read_text())
    (tmp_path / "base.txt").write_text("".join(" ".join("X" if i % 3 == 1 else w for i, w in enumerate(line.split())) + "\n"
                                               for line in refs))
    for m, bleu in ((1, 20.0), (3, 21.0)):
        (tmp_path / f"m{m}").mkdir()
        (tmp_path / f"m{m}" / "scores.json").write_text(json.dumps({"sacrebleu": {"score": bleu}}))
    hybrid_run = work / "query" / "eval"
    hybrid_run.mkdir(exist_ok=True)
    (hybrid_run / "scores.json").write_text(json.dumps({"sacrebleu": {"score": 12.0}}))
    commands = {
        "head-windows": ["--checkpoint", ckpt["head"]],
        "gaussian-scopes": ["--checkpoint", f"layer-specific={ckpt['layer']}", "--checkpoint", f"query-specific={ckpt['query']}", *data],
        "ngram-gap": ["--hyp", f"local={tmp_path / 'sys.txt'}", "--baseline", str(tmp_path / "base.txt"), "--ref", str(raw / "test.tgt")],
        "window-sweep": ["--run", f"M:1={tmp_path / 'm1'}", "--run", f"M:3={tmp_path / 'm3'}"],
        "hybrid-sweep": ["--run", f"1={work / 'query'}", "--checkpoint-name", "checkpoint_last.pt", *data],
        "gate-layers": ["--checkpoint", ckpt["query"], *data],
        "gate-pos": ["--checkpoint", ckpt["query"], "--tags", str(tags), *data],
        "attention-mass": ["--checkpoint", ckpt["dman"], "--checkpoint", ckpt["layer"], *data],
        "diffwin-windows": ["--checkpoint", ckpt["query"], "--sentences", "0,5", *data],
        "length-bleu": ["--hyp", f"local={tmp_path / 'sys.txt'}", "--hyp", f"base={tmp_path / 'base.txt'}",
                        "--ref", str(raw / "test.tgt"), "--source", str(raw / "test.src"), "--buckets", "5,8"],
        "attention-heatmap": ["--checkpoint", ckpt["dman"], "--attention", "cross", "--layer", "2", "--head", "3", *data],
    }
    assert set(commands) == set(ANALYSES)
    out = tmp_path / "out"
    for name, args in commands.items():
        written = main([name, "--out", str(out), *args, "--json", str(out / f"{name}.json")])
        for ext in ("png", "csv", "md"):
            path = out / f"{name}.{ext}"
            assert written[ext] == str(path) and path.stat().st_size > 0, (name, ext)
        # the result file holds the CSV's rows, the command and what was read
        result = json.loads((out / f"{name}.json").read_text())
        with open(out / f"{name}.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in result["records"]] == rows, name
        assert result["analysis"] == name and f"analyze.py {name} --out" in result["command"]
        if ANALYSES[name].needs_checkpoint and name != "hybrid-sweep":
            assert result["checkpoints"] and result["split"] == "valid", name
    assert (out / "gaussian-scopes-samples.csv").stat().st_size > 0
    # a second run keeps what the first wrote
    with pytest.raises(Exception, match="exists; pass --overwrite"):
        main(["head-windows", "--out", str(out), "--checkpoint", ckpt["head"]])
    # one head of the soft windows; a head the model lacks is refused before the pass, and nothing is written
    diffwin = ["diffwin-windows", "--checkpoint", ckpt["query"], "--sentences", "0", *data]
    main([*diffwin, "--out", str(out / "head"), "--name", "d", "--head", "2"])
    assert (out / "head" / "d.png").stat().st_size > 0
    with pytest.raises(AnalysisError, match="--head 99: diffwin_enc has 4 heads"):
        main([*diffwin, "--out", str(out / "head99"), "--head", "99"])
    assert not (out / "head99").exists()
    # sentence ids the split cannot hold, before the pass
    with pytest.raises(AnalysisError, match=r"--sentences 999: split valid has sentence ids 0-\d+"):
        main(["diffwin-windows", "--checkpoint", ckpt["query"], "--sentences", "0,999", *data, "--out", str(out / "s")])
    with pytest.raises(AnalysisError, match=r"--sentence 999: split valid has sentence ids 0-\d+"):
        main(["attention-heatmap", "--checkpoint", ckpt["dman"], "--sentence", "999", *data, "--out", str(out / "s")])
    with pytest.raises(AnalysisError, match=r"--layers 0,9: .* has encoder layers 1-\d"):
        main(["attention-mass", "--checkpoint", ckpt["dman"], "--layers", "1,0,9", *data, "--out", str(out / "s")])
    assert not (out / "s").exists()
    # hybrid-sweep finds every run's score and checkpoint before its first pass
    sweep = ["hybrid-sweep", "--checkpoint-name", "checkpoint_last.pt", "--out", str(out / "sweep"), *data]
    (tmp_path / "unscored").mkdir()
    with pytest.raises(AnalysisError, match="no scores.json"):
        main([*sweep, "--run", f"1={work / 'query'}", "--run", f"3={tmp_path / 'unscored'}"])
    with pytest.raises(AnalysisError, match=f"--run {tmp_path / 'm1'}: no checkpoint_last.pt"):
        main([*sweep, "--run", f"1={work / 'query'}", "--run", f"3={tmp_path / 'm1'}"])
    assert not (out / "sweep").exists()


def test_command_line_door_reports_a_missing_method(trained, tmp_path):
    _, data_bin, ckpt = trained
    proc = run([sys.executable, str(REPO / "scripts" / "analyze.py"), "gate-layers",
                "--checkpoint", ckpt["dman"], "--data", str(data_bin), "--out", str(tmp_path)], check=False)
    assert proc.returncode == 2
    assert "gate-layers: checkpoint" in proc.stderr and "has no 'hybrid' method" in proc.stderr and "dman (encoder)" in proc.stderr
    assert not any(tmp_path.iterdir())  # nothing written
