"""Bad input to the user-facing commands: refused with a message that names the flag or file, before anything
expensive runs (a training, a checkpoint load), and with no Python traceback; nothing a user had is changed.

Each case here once ended otherwise: in a traceback, in a failure only after hours of training, or in a silent
success on input that could not be meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localness_testing import BIN, REPO, run

PYTHON = str(BIN / "python")
SHARED_MULTI30K = REPO.parent / "shared" / "data" / "multi30k" / "tok"
MULTI30K_RECIPE = ["compare_multi30k_de_en", "transformer"]


def refused(argv, *said, code=2, cwd=None):
    """Run ARGV: it exits with CODE, says every one of SAID (stdout or stderr), and prints no traceback."""
    proc = run(argv, check=False, cwd=cwd)
    output = proc.stdout + proc.stderr
    assert proc.returncode == code, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    for text in said:
        assert text in output, output[-3000:]
    return proc


@pytest.fixture
def user_file(tmp_path) -> Path:
    """A file of the user's, where a command wants a directory: it must come out unchanged."""
    path = tmp_path / "notes.md"
    path.write_text("the user's notes\n")
    yield path
    assert path.read_text() == "the user's notes\n"


def test_an_output_directory_is_refused_where_it_or_a_path_above_it_is_a_file(user_file, tmp_path):
    from fairseq_localness.provenance import directory_problem

    assert directory_problem(tmp_path, "--out") is None
    assert directory_problem(tmp_path / "new" / "deeper", "--out") is None
    assert directory_problem(user_file, "--out") == f"--out {user_file}: a file, not a directory"
    # making it would fail only after the work: refused up front, naming the file in the way
    assert directory_problem(user_file / "run" / "seed1", "--work") == (
        f"--work {user_file / 'run' / 'seed1'}: {user_file} is a file, not a directory")
    # a link to nothing: its name is taken, and nothing can be made below it
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert directory_problem(tmp_path / "dangling", "--out") == (
        f"--out {tmp_path / 'dangling'}: a link to {tmp_path / 'nowhere'}, which does not exist")
    assert directory_problem(tmp_path / "dangling" / "run", "--out") == (
        f"--out {tmp_path / 'dangling' / 'run'}: {tmp_path / 'dangling'} is a link to nothing, not a directory")
    # the path as the kernel walks it: '..' after a file does not climb back out of it
    assert directory_problem(f"{user_file}/../out", "--out") == (
        f"--out {user_file}/../out: {user_file} is a file, not a directory")
    assert directory_problem(f"{tmp_path}/missing/../notes.md/run", "--out") == (
        f"--out {tmp_path}/missing/../notes.md/run: {user_file} is a file, not a directory")
    assert directory_problem(f"{tmp_path}/missing/../notes.md/../out", "--out") == (
        f"--out {tmp_path}/missing/../notes.md/../out: {user_file} is a file, not a directory")
    assert directory_problem(f"{tmp_path}/missing/../new/run", "--out") is None
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert directory_problem(tmp_path / "loop", "--out") == (
        f"--out {tmp_path / 'loop'}: a link to {tmp_path / 'loop'}, in a loop of links that leads to nothing")
    assert directory_problem(tmp_path / "loop" / "run", "--out") == (
        f"--out {tmp_path / 'loop' / 'run'}: {tmp_path / 'loop'} is a link in a loop, not a directory")
    # a result file is written where its path, as given, leads: the directory 'missing' is made, and '..' leaves it
    from fairseq_localness.provenance import result_file_problem, write_result_file
    given = f"{tmp_path}/missing/../result.json"
    assert result_file_problem(given, "--json", overwrite=False) is None
    write_result_file(given, {"bleu": 1.0})
    assert json.loads((tmp_path / "result.json").read_text()) == {"bleu": 1.0}


def test_the_comparison_refuses_a_file_for_its_directories(tiny_data_bin, user_file, tmp_path):
    compare = [PYTHON, "-m", "fairseq_localness.experiments.compare", "--data", str(tiny_data_bin),
               "--recipe", "compare_multi30k_de_en", "--archs", "transformer", "--seeds", "1"]
    refused(compare + ["--work", str(tmp_path / "w"), "--publish", str(user_file)],
            f"--publish {user_file}: a file, not a directory")
    refused(compare + ["--work", str(user_file)], f"--work {user_file}: a file, not a directory")
    refused(compare + ["--work", str(user_file / "runs")], f"--work {user_file / 'runs'}: {user_file} is a file")


def test_the_comparison_checks_the_decoding_options_before_it_trains(tiny_data_bin, tmp_path):
    refused([PYTHON, "-m", "fairseq_localness.experiments.compare", "--data", str(tiny_data_bin), "--recipe",
             "compare_multi30k_de_en", "--archs", "transformer", "--seeds", "1", "--work", str(tmp_path / "w"),
             "--eval-args", "--beam abc"], "--eval-args: evaluate.sh refuses the decoding options",
            "argument --beam: expected an integer, got 'abc'")
    assert not list((tmp_path / "w").rglob("checkpoints"))


def test_the_published_grid_takes_only_jobs_and_raw_root(tmp_path):
    refused(["bash", str(REPO / "scripts" / "compare-published.sh"), "--dry-run"],
            "unknown argument '--dry-run': it takes --jobs N and --raw-root DIR only")
    refused(["bash", str(REPO / "scripts" / "compare-published.sh"), "--jobs", "0"], "--jobs needs a number of 1")
    refused(["bash", str(REPO / "scripts" / "compare-published.sh"), "--raw-root", str(tmp_path / "none")],
            f"--raw-root needs a directory (got '{tmp_path / 'none'}')")
    # a relative --raw-root is the caller's, not the checkout's: accepted from where it exists (then --help stops)
    (tmp_path / "corpora").mkdir()
    refused(["bash", str(REPO / "scripts" / "compare-published.sh"), "--raw-root", "corpora", "--help"],
            "--raw-root DIR", code=0, cwd=tmp_path)


def test_reproduce_checks_every_row_before_the_first_trains(tmp_path):
    reproduce = [PYTHON, str(REPO / "scripts" / "reproduce.py"), "yang2018", "1", "--dry-run", "--work",
                 str(tmp_path / "w")]
    refused(reproduce + ["--train-args", "optimization.nosuch=1"], "reproduce.sh: error: row ", "optimization.nosuch")
    refused(reproduce + ["--eval-args", "--beam abc"], "--eval-args '--beam abc'", "expected an integer")
    refused(reproduce + ["--max-tokens", "0"], "argument --max-tokens: 0: must be 1 or more")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")  # refused, not followed and its target made
    refused(reproduce + ["--work", str(tmp_path / "dangling")],
            f"--work {tmp_path / 'dangling'}: a link to {tmp_path / 'nowhere'}, which does not exist")
    assert not (tmp_path / "nowhere").exists()


def test_train_sh_refuses_bad_batches_and_a_file_for_its_save_dir(tiny_data_bin, user_file):
    train = ["bash", str(REPO / "scripts" / "train.sh"), *MULTI30K_RECIPE, "--data", str(tiny_data_bin)]
    refused(train + ["--save-dir", str(user_file), "--dry-run"], f"--save-dir {user_file}: a file, not a directory")
    refused(train + ["--max-tokens", "0", "--dry-run"], "argument --max-tokens: 0: must be 1 or more")
    refused(train + ["--effective-tokens", "-4096", "--dry-run"], "argument --effective-tokens: -4096: must be 1")
    refused(train + ["--cpu-procs", "0", "--dry-run"], "argument --cpu-procs: 0: must be 1 or more")


def test_train_sh_refuses_a_data_bin_without_a_training_split(tiny_data_bin, tmp_path):
    partial = tmp_path / "data-bin"
    partial.mkdir()
    for path in tiny_data_bin.iterdir():  # the dictionaries and the test split only
        if path.name.startswith(("dict.", "test.")):
            (partial / path.name).write_bytes(path.read_bytes())
    refused(["bash", str(REPO / "scripts" / "train.sh"), *MULTI30K_RECIPE, "--data", str(partial), "--save-dir",
             str(tmp_path / "run")], f"--data {partial}: no training split there (train*.idx)")
    assert not (tmp_path / "run").exists()


def test_train_sh_refuses_a_data_bin_of_other_languages(tiny_data_bin, tmp_path):
    """The recipe's task languages must have their dictionaries in the data-bin: fairseq's translation task would
    stop only when the run starts."""
    refused(["bash", str(REPO / "scripts" / "train.sh"), "compare_multi30k_de_en", "transformer", "--data",
             str(tiny_data_bin), "--save-dir", str(tmp_path / "run")],
            f"--data {tiny_data_bin}: no dict.de.txt or dict.en.txt for the recipe's languages de->en "
            "(task.source_lang/target_lang); it has dict.src.txt, dict.tgt.txt")
    assert not (tmp_path / "run").exists()


def test_evaluate_refuses_a_beam_of_zero_and_names_a_file_given_for_a_directory(tiny_data_bin, tmp_path):
    checkpoints = tmp_path / "ck"
    checkpoints.mkdir()
    (checkpoints / "checkpoint_best.pt").write_bytes(b"")
    evaluate = ["bash", str(REPO / "scripts" / "evaluate.sh")]
    refused(evaluate + [str(checkpoints), str(tiny_data_bin), "--beam", "0"], "argument --beam: 0: must be 1 or more")
    refused(evaluate + [str(checkpoints / "checkpoint_best.pt"), str(tiny_data_bin)],
            f"checkpoint directory {checkpoints / 'checkpoint_best.pt'} is a file: give the directory that holds it",
            code=1)


def test_averaging_names_a_checkpoint_cut_short(tmp_path):
    checkpoints = tmp_path / "ck"
    checkpoints.mkdir()
    (checkpoints / "checkpoint1.pt").write_bytes(b"")
    (checkpoints / "checkpoint2.pt").write_bytes(b"")
    refused([PYTHON, "-m", "fairseq_localness.evaluation.average", str(checkpoints), "--last", "2", "--output",
             str(tmp_path / "avg.pt")], "not a readable checkpoint", "cut short", code=1)
    assert not (tmp_path / "avg.pt").exists()


def test_the_launchers_small_commands_name_their_bad_input(tmp_path):
    launch = [PYTHON, str(REPO / "scripts" / "launch.py")]
    refused(launch + ["stats", str(tmp_path / "nonexistent")], "no such directory")
    refused(launch + ["progress", "run", "0"], "argument total: 0: must be 1 or more")
    save, evaluation = tmp_path / "save", tmp_path / "eval"
    save.mkdir()
    evaluation.mkdir()
    (evaluation / "scores.json").write_text("")
    refused(launch + ["compare", str(tmp_path / "out.md"), f"a={save}:{evaluation}"],
            f"{evaluation / 'scores.json'} is not JSON")


def test_scoring_and_lead3_name_empty_input(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    refused([PYTHON, "-m", "fairseq_localness.evaluation.scoring", "--hyp", str(empty), "--ref", str(empty)],
            "no hypotheses to score", code=1)
    refused([PYTHON, str(REPO / "scripts" / "lead3.py"), str(empty), str(tmp_path / "out.txt")],
            f"source {empty} is empty")
    source = tmp_path / "source.txt"
    source.write_text("One. Two. Three. Four.\n")
    refused([PYTHON, str(REPO / "scripts" / "lead3.py"), str(source), str(tmp_path / "missing" / "out.txt")],
            f"no directory {tmp_path / 'missing'}")
    assert not (tmp_path / "out.txt").exists()


def test_analyses_and_probing_check_their_options_before_loading(tmp_path, user_file):
    refused([PYTHON, "-m", "fairseq_localness.experiments.run_analyses", str(tmp_path / "c.pt"), str(tmp_path),
             str(user_file)], f"OUT {user_file}: a file, not a directory")
    refused([PYTHON, str(REPO / "scripts" / "analyze.py"), "ngram-gap", "--hyp", "a=x", "--baseline", "x", "--ref",
             "x", "--max-order", "0"], "argument --max-order: 0: must be 1 or more")
    refused([PYTHON, str(REPO / "scripts" / "probe.py"), "evaluate", "--checkpoint", str(tmp_path / "c.pt"),
             "--data", str(tmp_path), "--device", "nosuch"], "argument --device: 'nosuch' is not a device")
    # every name is checked before the first row: no header, no row of the known architecture, then an error
    proc = refused([PYTHON, str(REPO / "scripts" / "param_counts.py"), "--archs", "transformer_gaussian_local,nosuch",
                    "--sizes", "base,big"], "--archs nosuch: unknown architecture 'nosuch'")
    assert "architecture" not in proc.stdout and "transformer_gaussian_local" not in proc.stdout
    # a locality option's bad value, given in --extra, is --extra's (not the architecture's) error
    refused([PYTHON, str(REPO / "scripts" / "param_counts.py"), "--archs", "transformer_gaussian_local", "--sizes",
             "base", "--extra=--gaussian-layers 9"], "--extra: --gaussian-layers: layer(s) [9] out of range")
    refused([PYTHON, str(REPO / "scripts" / "param_counts.py"), "--archs", "transformer_gaussian_local", "--sizes",
             "base", "--extra=--gaussian-fixed-window -1"], "--extra: --gaussian-fixed-window must be > 0")
    refused([PYTHON, str(REPO / "scripts" / "param_counts.py"), "--archs", "transformer_gaussian_local", "--sizes",
             "base", "--extra=--gaussian-windw layer"],
            "--extra: transformer_gaussian_local: --gaussian-windw is not a fairseq option for arch "
            "transformer_gaussian_local (close: --gaussian-window")
    refused([PYTHON, str(REPO / "scripts" / "param_counts.py"), "--archs", "transformer", "--sizes", "base,huge"],
            "--sizes 'base,huge': choose from base, iwslt, big")
    # the recipe shares all embeddings: an architecture without that option is named, not --extra
    refused([PYTHON, str(REPO / "scripts" / "param_counts.py"), "--archs", "fconv", "--sizes", "base"],
            "--archs fconv: fconv: --share-all-embeddings is not a fairseq option for arch fconv")


def test_the_probe_names_a_bpe_model_that_is_not_one(user_file):
    """A file that is not a BPE model, given as one, is named with its flag (sentencepiece's own error names
    neither; subword-nmt's exits the process)."""
    from fairseq_localness.probing.encode import Preprocessing, ProbingError

    with pytest.raises(ProbingError, match=f"--spm-model {user_file}: not a sentencepiece model"):
        Preprocessing(lang="en", tokenizer="none", spm_model=str(user_file)).build()
    with pytest.raises(ProbingError, match=f"--bpe-codes {user_file}: not a subword-nmt codes file"):
        Preprocessing(lang="en", tokenizer="none", bpe_codes=str(user_file)).build()
    # a fairseq dictionary reads as merges to subword-nmt, which would then split every word into characters
    dictionary = user_file.parent / "dict.en.txt"
    dictionary.write_text("the 12\nuser 3\nnotes 1\n")
    with pytest.raises(ProbingError, match=f"--bpe-codes {dictionary}: not a subword-nmt codes file .*: its lines "
                                           "are words and counts"):
        Preprocessing(lang="en", tokenizer="none", bpe_codes=str(dictionary)).build()
    bad_version = user_file.parent / "code.en"
    bad_version.write_text("#version: x\nt h\n")  # subword-nmt raises a bare ValueError on it
    with pytest.raises(ProbingError, match=f"--bpe-codes {bad_version}: not a subword-nmt codes file"):
        Preprocessing(lang="en", tokenizer="none", bpe_codes=str(bad_version)).build()


def test_a_model_flag_fairseq_does_not_know_is_named_with_the_model():
    """parse_model_args names what fairseq's parser left over: an unknown flag (a negative number is its value,
    not a flag), or a value that no option takes; the error carries the words for the caller's flag."""
    from fairseq_localness.modelbuild import ModelOptionError, parse_model_args

    with pytest.raises(ModelOptionError, match=r"^transformer: --bogus is not a fairseq option for arch "
                                               r"transformer \(close: ") as err:
        parse_model_args("transformer", ["--bogus", "-1"])
    assert err.value.options == ["--bogus"]
    with pytest.raises(ModelOptionError, match="^transformer: 3: a value no option of arch transformer takes$"):
        parse_model_args("transformer", ["--encoder-layers", "2", "3"])


def test_gpu_tools_refuse_a_file_for_out_and_an_empty_result(tmp_path, user_file):
    refused([PYTHON, "-m", "fairseq_localness.gpu.suite", "run", "--out", str(user_file)],
            f"--out {user_file}: a file, not a directory")
    empty = tmp_path / "pytest.txt"
    empty.write_text("")
    refused([PYTHON, "-m", "fairseq_localness.gpu.record", "tests", str(empty), "--out", str(tmp_path / "r.json"),
             "--date", "2026-01-01", "--machine", "m", "--torch", "t", "--command", "c"],
            "no tests results in it", "nothing was written")
    assert not (tmp_path / "r.json").exists()


def test_compare_readme_names_the_page_without_its_markers(tmp_path):
    page = tmp_path / "other.md"
    page.write_text("# a page without the results markers\n")
    refused([PYTHON, "-m", "fairseq_localness.experiments.compare_readme", "--readme", str(page)], str(page),
            "<!-- compare-results -->", code=1)


def test_quickstart_and_data_prep_refuse_before_they_start(user_file, tmp_path):
    refused(["bash", str(REPO / "scripts" / "quickstart.sh"), "--cpu-procs", "0"],
            "--cpu-procs must be a positive integer")
    # 2,048 tokens per update do not split over 3 processes (train.sh would refuse it after the data step)
    refused(["bash", str(REPO / "scripts" / "quickstart.sh"), "--cpu-procs", "3", "--work", str(tmp_path / "q")],
            "--cpu-procs 3 does not divide the 2048 tokens of an update")
    assert not (tmp_path / "q").exists()
    refused(["bash", str(REPO / "data-prep" / "prepare-multi30k.sh"), "--raw-dir", str(SHARED_MULTI30K), "--out",
             str(user_file)], f"--out {user_file}: a file, not a directory", code=1)
