"""The GPU run's result files: pytest outcomes (also of a run cut short) and the train stage's causes of failure."""

import json

import pytest

from fairseq_localness.gpu.record import error_cause, main, pytest_outcomes, outcome_records, train_records

XDIST_LOG = """\
tests/test_gpu.py::test_a[x-encoder] 
tests/test_gpu.py::test_a[y-decoder] 
[gw1] [ 10%] PASSED tests/test_gpu.py::test_a[x-encoder] 
tests/test_flex.py::test_b 
[gw0] [ 20%] FAILED tests/test_gpu.py::test_a[y-decoder] 
[gw0] [ 30%] PASSED tests/test_flex.py::test_b 
tests/test_gpu.py::test_c[transformer_rope] 
"""

PLAIN_LOG = """\
tests/test_flex.py::test_b PASSED                                         [ 50%]
tests/test_flex.py::test_d SKIPPED (needs a CUDA GPU)                     [100%]
"""


def test_outcomes_of_an_xdist_run_cut_short():
    assert pytest_outcomes(XDIST_LOG) == {
        "tests/test_gpu.py::test_a[x-encoder]": "passed",
        "tests/test_gpu.py::test_a[y-decoder]": "failed",
        "tests/test_flex.py::test_b": "passed",
        "tests/test_gpu.py::test_c[transformer_rope]": "not finished",  # started, never reported
    }


def test_outcomes_of_a_plain_run():
    assert pytest_outcomes(PLAIN_LOG) == {"tests/test_flex.py::test_b": "passed", "tests/test_flex.py::test_d": "skipped"}


def test_a_later_log_replaces_an_outcome_but_not_with_not_finished(tmp_path):
    first, second = tmp_path / "1.log", tmp_path / "2.log"
    first.write_text(XDIST_LOG)
    second.write_text("[gw0] [ 1%] PASSED tests/test_gpu.py::test_a[y-decoder] \ntests/test_flex.py::test_b \n")
    records = {(r["test"], r["params"]): r["outcome"] for r in outcome_records([first, second])}
    assert records[("tests/test_gpu.py::test_a", "y-decoder")] == "passed"
    assert records[("tests/test_flex.py::test_b", "")] == "passed"


def test_error_cause_is_the_last_exception_line():
    log = ("Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n    return g()\n           ^^^\n"
           "ValueError: first\n\nDuring handling...\n  File \"y.py\"\nAttributeError: 'NoneType' object has no "
           "attribute 'xla_device'\n")
    assert error_cause(log) == "AttributeError: 'NoneType' object has no attribute 'xla_device'"
    assert error_cause("no exception here\nlast line") == "last line"


def test_train_records_read_the_cause_from_the_run_log(tmp_path):
    (tmp_path / "train_t_iwslt_de_en_bf16.log").write_text("cmd\n\nTraceback\nAttributeError: no xla\n")
    (tmp_path / "gpu_suite.json").write_text(json.dumps({"train": {
        "t_iwslt_de_en fp16": {"first_loss": 10.5, "last_loss": 6.5, "updates": 300, "overflows": 2},
        "t_iwslt_de_en bf16": {"error": "python -m ... failed (1); see LOG:\n(cut)"}}}))
    assert train_records(tmp_path / "gpu_suite.json") == [
        {"arch": "t_iwslt_de_en", "dtype": "fp16", "first_loss": 10.5, "last_loss": 6.5, "updates": 300, "overflows": 2},
        {"arch": "t_iwslt_de_en", "dtype": "bf16", "error": "AttributeError: no xla"}]


def test_the_result_file_has_the_docs_fields(tmp_path):
    log = tmp_path / "tests.log"
    log.write_text(XDIST_LOG)
    out = tmp_path / "gpu" / "run.json"
    assert main(["tests", str(log), "--out", str(out), "--machine", "GPU X", "--torch", "2.11", "--command", "pytest -v",
                 "--date", "2026-11-26"]) == 0
    run = json.loads(out.read_text())
    assert {k: run[k] for k in ("date", "machine", "torch", "command")} == {
        "date": "2026-11-26", "machine": "GPU X", "torch": "2.11", "command": "pytest -v"}
    assert len(run["records"]) == 4 and run["source"]


def test_an_existing_result_file_or_a_bad_suite_file_is_refused(tmp_path, capsys):
    """--out that exists is kept unless --overwrite, checked before the inputs are read; a train input that is not
    JSON names the file, without a traceback."""
    log = tmp_path / "tests.log"
    log.write_text(XDIST_LOG)
    out = tmp_path / "run.json"
    out.write_text("mine\n")
    common = ["--machine", "GPU X", "--torch", "2.11", "--command", "pytest -v"]
    with pytest.raises(SystemExit) as refused:
        main(["tests", str(log), "--out", str(out), *common])
    assert refused.value.code == 2 and out.read_text() == "mine\n"
    assert f"--out {out} exists; pass --overwrite" in capsys.readouterr().err
    assert main(["tests", str(log), "--out", str(out), "--overwrite", *common]) == 0
    assert len(json.loads(out.read_text())["records"]) == 4
    suite = tmp_path / "gpu_suite.json"
    suite.write_text('{"train": {"transformer fp16": ')  # cut short
    with pytest.raises(SystemExit) as refused:
        main(["train", str(suite), "--out", str(tmp_path / "train.json"), *common])
    assert refused.value.code == 2 and not (tmp_path / "train.json").exists()
    assert f"{suite}: not a gpu_suite.json" in capsys.readouterr().err


def test_curve_of_a_training_log(tmp_path):
    log = tmp_path / "hydra_train.log"
    log.write_text(
        "[t][train_inner][INFO] - epoch 001:     25 / 126 loss=9.1, wps=60000.5, ups=18, num_updates=25\n"
        "[t][train_inner][INFO] - epoch 001:     50 / 126 loss=8.1, wps=90000.0, ups=27, num_updates=50\n"
        "[t][train_inner][INFO] - epoch 001:     75 / 126 loss=7.9, wps=70000.0, ups=20, num_updates=75\n"
        "[t][valid][INFO] - epoch 001 | valid on 'valid' subset | loss 8.139 | nll_loss 7.3 | num_updates 124\n"
        "[t][valid][INFO] - epoch 002 | valid on 'valid' subset | loss 6.918 | nll_loss 5.9 | num_updates 250 | best_loss 6.918\n")
    from fairseq_localness.gpu.record import curve_records
    assert curve_records(log) == {"records": [{"epoch": 1, "updates": 124, "valid_loss": 8.139},
                                              {"epoch": 2, "updates": 250, "valid_loss": 6.918}],
                                  "train_wps_median": 70000.0}


def test_curve_of_a_comparison_progress_log(tmp_path):
    """The comparison command's own log (one run): its epoch lines, and no words per second."""
    log = tmp_path / "compare.log"
    log.write_text(
        "[09:12:35] [1/1] transformer_dman (pre-norm, seed 1): training\n"
        "[09:13:57] [1/1] transformer_dman (pre-norm, seed 1): epoch 001 done, update 125, valid loss 8.104\n"
        "[09:14:02] [1/1] transformer_dman (pre-norm, seed 1): epoch 002, update 200 (5.55 updates/s)\n"
        "[09:14:06] [1/1] transformer_dman (pre-norm, seed 1): epoch 002 done, update 251, valid loss 6.964 (best 6.964)\n")
    from fairseq_localness.gpu.record import curve_records
    assert curve_records(log) == {"records": [{"epoch": 1, "updates": 125, "valid_loss": 8.104},
                                              {"epoch": 2, "updates": 251, "valid_loss": 6.964}],
                                  "train_wps_median": None}


BENCHMARK_LOG = """\
device cuda (NVIDIA H200), dtype fp16, threads 16, torch 2.11.0+cu130; vocab 32000, batch 4096 tokens
[1/2] L=1024 transformer: train 100,000 tok/s, peak 4,000 MB (11.2 s)
[1/2] L=1024 transformer_dman@locality_attention_backend=flex: train 5,000 tok/s, peak 5,000 MB (67.5 s)
[2/2] L=1024 transformer_dman@locality_attention_backend=flex: train 7,000 tok/s, peak 5,000 MB (60.1 s)
[2/2] L=1024 transformer: train 120,000 tok/s, peak 4,000 MB (10.2 s)
[2/2] L=1024 transformer_dman@locality_attention_backend=flex: train 6,000 tok/s, peak 6,000 MB (61.0 s)
[1/2] L=256 transformer_dman@locality_attention_backend=sdpa: train - tok/s, peak - MB (1.0 s)
"""


def test_backend_records_are_medians_with_ratios_to_the_baseline(tmp_path):
    """Lines of the benchmark's subprocess mode, as printed (a run stopped early keeps them): the median over
    repeats per model and length, divided by the baseline's median at that length."""
    from fairseq_localness.gpu.record import backend_records
    log = tmp_path / "backends.log"
    log.write_text(BENCHMARK_LOG)
    records = {(r["arch"], r["options"], r["seq_len"]): r for r in backend_records(log, "transformer")}
    dman = records[("transformer_dman", "locality_attention_backend=flex", 1024)]
    # speeds 5,000 / 7,000 / 6,000 -> median 6,000; the baseline's two repeats -> upper median 120,000
    assert (dman["train_tokens_per_s"], dman["repeats"], dman["train_ratio"]) == (6000.0, 3, 0.05)
    assert (dman["peak_mem_mb"], dman["memory_ratio"]) == (5000.0, 1.25)
    unmeasured = records[("transformer_dman", "locality_attention_backend=sdpa", 256)]
    assert unmeasured["train_ratio"] is None and unmeasured["train_tokens_per_s"] is None  # no baseline at 256 either


@pytest.mark.parametrize("name, text, baseline, expected", [
    # ratios need their baseline measured in the same log
    ("backends.log", None, "transformer_wmt_en_de", ["transformer_wmt_en_de", "--baseline"]),
    # the profile group's interleaved round prints a table: the error says which lines the reader needs
    ("backends_profile.log", "| model | length | training tokens/s |\n| transformer | 1024 | 129,302 |\n",
     "transformer", ["no measurement line of the benchmark's subprocess mode", "--profile"]),
])
def test_backend_records_refuse_a_log_they_cannot_turn_into_ratios(tmp_path, name, text, baseline, expected):
    from fairseq_localness.gpu.record import backend_records
    log = tmp_path / name
    log.write_text(BENCHMARK_LOG if text is None else text)
    with pytest.raises(SystemExit) as err:
        backend_records(log, baseline)
    assert all(part in str(err.value) for part in expected), str(err.value)


DECODE_LOG = """\
[1/1] L=64 transformer: train 9,000 tok/s, peak 900 MB, decode 2,000 tok/s (4.1 s)
[1/1] L=64 transformer_dman@locality_attention_backend=flex: train 3,000 tok/s, peak 1,000 MB, decode 500 tok/s (9.0 s)
[1/1] L=64 transformer_dman@locality_attention_backend=sdpa: train 4,500 tok/s, peak 1,200 MB, decode 1,000 tok/s (5.0 s)
"""


def test_backend_records_keep_the_decoding_speed(tmp_path):
    """Lines with ", decode ... tok/s" (the benchmark without --no-decode) give decoding speeds and ratios, and
    the backends table gains their columns; a run without them keeps its columns."""
    from fairseq_localness.experiments.doc_tables import gpu_backends_table
    from fairseq_localness.gpu.record import backend_records

    log = tmp_path / "decode.log"
    log.write_text(DECODE_LOG)
    records = {r["options"]: r for r in backend_records(log, "transformer")}
    flex = records["locality_attention_backend=flex"]
    assert (flex["decode_tokens_per_s"], flex["decode_ratio"], flex["train_ratio"]) == (500.0, 0.25, 0.333)
    sdpa = records["locality_attention_backend=sdpa"]
    assert (sdpa["decode_tokens_per_s"], sdpa["decode_ratio"]) == (1000.0, 0.5)
    table = gpu_backends_table([{"baseline": "transformer", "records": list(records.values())}], None)
    assert table.splitlines()[0].endswith("| decoding tokens/s | decoding ratio |")
    assert "| `transformer_dman` | flex | 64 | 3,000 | 0.33 | 1,000 | 1.11 | 500 | 0.25 |" in table
    log.write_text(BENCHMARK_LOG)
    assert all("decode_tokens_per_s" not in r for r in backend_records(log, "transformer"))
    plain = gpu_backends_table([{"baseline": "transformer", "records": backend_records(log, "transformer")}], None)
    assert "decoding" not in plain


def test_train_records_of_a_suite_stopped_early(tmp_path):
    """Only runs whose log says fairseq finished are results; a run cut short, or one that did not learn, is not
    passed off as one."""
    line = "epoch 001:  {u} / 57 loss={loss}, nll_loss=9.0, num_updates={u}\n"
    (tmp_path / "train_transformer_alibi_iwslt_de_en_bf16.log").write_text(
        line.format(u=30, loss=10.6) + line.format(u=300, loss=6.1) + "done training in 40.1 seconds\n")
    (tmp_path / "train_transformer_dman_iwslt_de_en_fp16.log").write_text(line.format(u=30, loss=10.5))  # cut short
    (tmp_path / "train_transformer_rope_iwslt_de_en_fp16.log").write_text(
        line.format(u=30, loss=10.6) + line.format(u=300, loss=10.9) + "done training in 40.1 seconds\n")
    records = train_records(tmp_path)
    assert records[0] == {"arch": "transformer_alibi_iwslt_de_en", "dtype": "bf16", "first_loss": 10.6,
                          "last_loss": 6.1, "updates": 300, "overflows": 0}
    assert [r["arch"] for r in records] == ["transformer_alibi_iwslt_de_en", "transformer_rope_iwslt_de_en"]
    assert "did not fall" in records[1]["error"]
