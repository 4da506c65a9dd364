"""The analyses (fairseq_localness/analyses) on tiny models with set parameters, against values computed by hand
from the papers' equations: Yang 2018 Eq. 11 (head windows), Eq. 6-7 (centre/window), Xu 2019 Eq. 5 (gate),
Fan 2021 Eq. 13 (windowed attention mass), Nguyen 2020 Eq. 9 (window width), and n-gram precisions."""

from __future__ import annotations

import json
import math

import pytest
import torch

from fairseq_localness.analyses.attention import mass_table, windowed_mass
from fairseq_localness.analyses.bleu import length_buckets, ngram_gap, read_translations, sweep
from fairseq_localness.analyses.gates import gate_by_tag, gate_layers, group_pieces, word_gates
from fairseq_localness.analyses.loading import AnalysisError, LoadedModel, PassOptions, locality_modules
from fairseq_localness.analyses.output import Outputs, Table
from fairseq_localness.analyses.windows import collect_scopes, head_windows, scopes_tables, soft_window_width
from fairseq_localness.methods.diffwin import soft_window_mask
from localness_testing import build_model, preprocess, write_synthetic_corpus

QUIET = PassOptions(split="valid", quiet=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    write_synthetic_corpus(raw, train=50)
    return raw, preprocess(raw, tmp_path_factory.mktemp("bin"))


def loaded(arch, data_bin, overrides=None) -> LoadedModel:
    model, task = build_model(arch, data_bin, overrides)
    return LoadedModel(path=f"<{arch}>", label=arch, model=model, task=task, device=torch.device("cpu"), arch=arch)


def valid_lengths(tiny: LoadedModel):
    tiny.task.load_dataset("valid")
    return [int(n) for n in tiny.task.dataset("valid").src_sizes]  # real tokens, end-of-sentence included


# --- Yang 2018 ---------------------------------------------------------------------------------------------------


@torch.no_grad()
def test_head_windows_are_n_sigmoid_z(corpus):
    tiny = loaded("transformer_gaussian_local", corpus[1], {"gaussian_window": "head"})
    z = {}
    for block, method in locality_modules(tiny.model, "gaussian"):
        z[block.spec.layer] = [-2.0 + block.spec.layer, 0.0, 1.5, -0.5 * block.spec.layer]
        method.z.copy_(torch.tensor(z[block.spec.layer]))
    table, fig = head_windows([tiny])
    assert sorted({row["layer"] for row in table.rows}) == [1, 2, 3]  # paper placement: encoder layers 1-3
    for row in table.rows:
        expected = 50.0 / (1.0 + math.exp(-z[row["layer"]][row["head"] - 1]))  # D_m = N sigmoid(z_m), N = 50
        assert row["window_D"] == pytest.approx(expected, abs=1e-4)
    assert fig is not None


def test_head_windows_needs_the_head_model(corpus):
    tiny = loaded("transformer_gaussian_local", corpus[1])  # query-specific windows
    with pytest.raises(AnalysisError, match=r"no 'gaussian' method with --gaussian-window head.*gaussian \(encoder\)"):
        head_windows([tiny])
    with pytest.raises(AnalysisError, match="has no 'hybrid' method"):
        gate_layers([tiny], QUIET)


@torch.no_grad()
def test_scopes_of_fixed_window_and_centre_half_length(corpus):
    """D = the fixed window everywhere; U_p = 0 gives P = I sigmoid(0) = I / 2 (Eq. 6)."""
    tiny = loaded("transformer_gaussian_local", corpus[1], {"gaussian_window": "fixed", "gaussian_fixed_window": 7})
    for _, method in locality_modules(tiny.model, "gaussian"):
        method.u_p.weight.zero_()
    summary, samples = scopes_tables({"fixed": collect_scopes(tiny, QUIET, sample_per_layer=50)})
    lengths = valid_lengths(tiny)
    heads = 4
    for row in summary.rows:
        assert row["mean_D"] == pytest.approx(7.0) and row["p10_D"] == pytest.approx(7.0)
        assert row["query_heads"] == sum(lengths) * heads
        # every real query of a sentence of length I has D / I = 7 / I
        assert row["mean_D_over_I"] == pytest.approx(7.0 * len(lengths) / sum(lengths), rel=1e-5)
    assert len(samples.rows) == 3 * 50
    for row in samples.rows:
        assert row["centre_P"] == pytest.approx(row["length_I"] / 2, abs=1e-5)
        assert row["length_I"] in lengths


# --- Fan 2021 Eq. 13 -----------------------------------------------------------------------------------------------


def test_windowed_mass_by_hand_and_padding():
    head1 = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    head2 = torch.eye(3)
    probs = torch.stack([head1, head2])[None]  # (1, 2, 3, 3)
    valid = torch.ones(1, 3, dtype=torch.bool)
    # head mean s-bar; w = 1: rows sum 0.8, 1.0, 0.8 (head 1) and 1, 1, 1 (head 2)
    expected = ((0.8 + 1.0 + 0.8) / 3 + 1.0) / 2
    assert float(windowed_mass(probs, valid, 1)) == pytest.approx(expected)
    assert float(windowed_mass(probs, valid, 2)) == pytest.approx(1.0)
    assert float(windowed_mass(probs, valid, 0)) == pytest.approx(((0.5 + 0.6 + 0.6) / 3 + 1.0) / 2)
    padded = torch.zeros(1, 2, 5, 5)
    padded[:, :, 2:, 2:] = probs  # two left-padding positions, as fairseq pads sources
    mask = torch.tensor([[False, False, True, True, True]])
    assert float(windowed_mass(padded, mask, 1)) == pytest.approx(expected)


@torch.no_grad()
def test_attention_mass_of_hand_made_dman_mask(corpus):
    """M = 1 within one token and ~0 beyond (Eq. 12 with W = 0, U = 0, P = +-30), zero queries: DMAN attends
    uniformly to its neighbours (attn_s = 100 %) and SAN uniformly to the sentence, (1/T) sum_j |{k: |k-j|<=w}| / T."""
    tiny = loaded("transformer_dman", corpus[1])
    for name, module in tiny.model.encoder.named_modules():
        if hasattr(module, "q_proj"):
            module.q_proj.weight.zero_()
            module.q_proj.bias.zero_()
    for _, mask in locality_modules(tiny.model, "dman", "encoder"):
        mask.context_weight.zero_()
        mask.head_bias.zero_()
        distance = torch.arange(mask.distance_bias.numel()) - mask.max_distance
        mask.distance_bias.copy_(torch.where(distance.abs() <= 1, 30.0, -30.0))
    table = mass_table([tiny], QUIET, windows=(1, 2), layers=(1, 3))
    lengths = valid_lengths(tiny)

    def uniform(length, w):
        return sum(min(j + w, length - 1) - max(j - w, 0) + 1 for j in range(length)) / length**2

    got = {(r["kind"], r["layer"], r["w"]): r for r in table.rows}
    assert set(got) == {(k, l, w) for k in ("dman", "san") for l in (1, 3) for w in (1, 2)}
    for layer in (1, 3):
        for w in (1, 2):
            assert got[("dman", layer, w)]["attn_s_percent"] == pytest.approx(100.0, abs=1e-6)
            expected = 100.0 * sum(uniform(n, w) for n in lengths) / len(lengths)
            assert got[("san", layer, w)]["attn_s_percent"] == pytest.approx(expected, rel=1e-5)
    # the published value beside ours, with its place in the paper (configs/analyses_published.yaml)
    assert got[("dman", 1, 1)]["published_percent"] == 76.58
    assert got[("san", 3, 2)]["published_percent"] == 45.62
    assert got[("san", 3, 2)]["published_from"] == "Table 5, row SAN, w=2, column #3"


# --- Xu 2019 Eq. 5 --------------------------------------------------------------------------------------------------


@torch.no_grad()
def test_gate_per_layer_and_per_tag(corpus, tmp_path):
    """With W_Q = 0 the query projection is its bias b, so g = sigmoid(W_g b / sqrt(d)) (Eq. 5, gate from the query
    scaled by the head dimension's d^-0.5, as the authors' released gate reads it)."""
    raw, data_bin = corpus
    tiny = loaded("transformer_hybrid_local", data_bin, {"hybrid_gate_input": "query"})
    weight = {1: 0.5, 2: -0.25}
    for block, method in locality_modules(tiny.model, "hybrid"):
        block.q_proj.weight.zero_()
        block.q_proj.bias.fill_(0.1)
        method.gate_proj.weight.fill_(weight[block.spec.layer])
    head_dim = tiny.model.encoder.layers[0].self_attn.head_dim
    expected = {layer: 1 / (1 + math.exp(-w * 0.1 * 32 / math.sqrt(head_dim))) for layer, w in weight.items()}
    table, _ = gate_layers([tiny], QUIET)
    lengths = valid_lengths(tiny)
    assert [r["layer"] for r in table.rows] == [1, 2]
    for row in table.rows:
        assert row["mean_gate"] == pytest.approx(expected[row["layer"]], abs=1e-6)
        assert row["tokens"] == sum(lengths)

    sentences = (raw / "valid.src").read_text().splitlines()
    tags = [["NUM" if int(word[1:]) % 2 else "NOUN" for word in line.split()] for line in sentences]
    (tmp_path / "tags").write_text("\n".join(" ".join(t) for t in tags) + "\n")
    result = gate_by_tag(tiny, QUIET, str(tmp_path / "tags"), layer=2)
    assert result["NUM"] == pytest.approx((expected[2], sum(t.count("NUM") for t in tags)), abs=1e-6)
    assert result["NOUN"][1] == sum(t.count("NOUN") for t in tags)
    (tmp_path / "bad").write_text("NOUN\n" * len(sentences))
    with pytest.raises(AnalysisError, match=r"--tags .*bad line \d+: 1 tags for \d+ words"):
        gate_by_tag(tiny, QUIET, str(tmp_path / "bad"))


def test_pieces_back_to_words():
    assert group_pieces(["the", "cat@@", "s", "sat"]) == [[0], [1, 2], [3]]
    assert group_pieces(["\u2581the", "\u2581ca", "ts", "\u2581sat"]) == [[0], [1, 2], [3]]
    assert group_pieces(["a@@", "b"], "none") == [[0], [1]]
    assert word_gates(["the", "cat@@", "s", "sat"], [0.2, 0.4, 0.8, 1.0]) == pytest.approx([0.2, 0.6, 1.0])


# --- Nguyen 2020 Eq. 9 ----------------------------------------------------------------------------------------------


def test_soft_window_width_by_hand():
    left = torch.tensor([[0.0, 1.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0, 0.0]])
    right = torch.tensor([[0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0]])
    # window [1, 3] has 3 tokens; l in {0, 2} with r = 2: E|r - l| + 1 = 0.5 * 2 + 1 = 2
    assert soft_window_width(left, right).tolist() == pytest.approx([3.0, 2.0])
    # the same from Eq. 9's mask: sum_j M_j minus P(l = r), which both of its terms count
    phi = torch.cat([left, right]).view(1, 2, 2, 5)  # (B, 2H, T, S) with H = 1, T = 2
    mask = soft_window_mask(phi)[0, 0]
    assert (mask.sum(-1) - (left * right).sum(-1)).tolist() == pytest.approx([3.0, 2.0])


# --- translations: n-gram gaps, length buckets, sweeps ---------------------------------------------------------------


def test_ngram_gap_by_hand(tmp_path):
    ref = "a b c d e f g h i"
    (tmp_path / "ref").write_text(ref + "\n")
    (tmp_path / "sys").write_text(ref + "\n")
    (tmp_path / "base").write_text("a b c d x f g h i\n")
    table, _ = ngram_gap({"local": str(tmp_path / "sys")}, str(tmp_path / "base"), str(tmp_path / "ref"))
    # 9 words, one wrong (the 5th): of the 10 - n n-grams of order n, those covering word 5 miss
    covering = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 4, 7: 3, 8: 2}
    for row in table.rows:
        n = row["n"]
        total = 10 - n
        assert row["precision"] == pytest.approx(100.0)
        assert row["baseline_precision"] == pytest.approx(100.0 * (total - covering[n]) / total)
        assert row["gap"] == pytest.approx(100.0 * covering[n] / total)


def test_ngram_gap_pools_seeds_and_lowercases(tmp_path):
    ref = "a b c d e f g h i"
    (tmp_path / "ref").write_text(ref + "\n")
    (tmp_path / "seed1").write_text(ref.upper() + "\n")  # every n-gram right once lowercased
    (tmp_path / "seed2").write_text("a b c d x f g h i\n")  # the 5th word wrong
    (tmp_path / "base").write_text(ref + "\n")
    table, _ = ngram_gap({"local": [str(tmp_path / "seed1"), str(tmp_path / "seed2")]}, [str(tmp_path / "base")],
                         str(tmp_path / "ref"), lowercase=True)
    covering = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 4, 7: 3, 8: 2}
    for row in table.rows:
        total = 10 - row["n"]  # per seed; pooled: twice as many n-grams, the second seed missing `covering`
        assert row["precision"] == pytest.approx(100.0 * (2 * total - covering[row["n"]]) / (2 * total))
        assert row["gap"] == pytest.approx(-100.0 * covering[row["n"]] / (2 * total))
    assert "Seed-pooled: local 2 files, baseline 1 files" in table.caption and "lowercased" in table.caption
    cased, _ = ngram_gap({"local": str(tmp_path / "seed1")}, str(tmp_path / "base"), str(tmp_path / "ref"))
    assert [row["precision"] for row in cased.rows] == [0.0] * 8  # not lowercased: "A" is not "a"
    (tmp_path / "short").write_text("")
    with pytest.raises(AnalysisError, match=f"local {tmp_path / 'short'}: 0 sentences"):
        ngram_gap({"local": [str(tmp_path / "seed1"), str(tmp_path / "short")]}, str(tmp_path / "base"), str(tmp_path / "ref"))


def test_ngram_gap_writes_a_result_file_the_docs_table_reads(tmp_path, monkeypatch):
    """``--json`` records the table's rows with the command, the baseline's name and every file a pattern matched;
    the docs' generated table renders it; a result file already there is refused before anything is scored."""
    from fairseq_localness.analyses import cli
    from fairseq_localness.experiments.doc_tables import ngram_gap_table

    ref = "a b c d e f g h i"
    (tmp_path / "ref").write_text(ref + "\n")
    for seed, line in ((1, ref), (2, "a b c d x f g h i")):
        (tmp_path / f"seed{seed}").mkdir()
        (tmp_path / f"seed{seed}" / "local.txt").write_text(line + "\n")
    (tmp_path / "base.txt").write_text(ref + "\n")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the command would record it (pytest-xdist sets it)
    result = tmp_path / "results" / "gap.json"
    argv = ["ngram-gap", "--ref", str(tmp_path / "ref"), "--baseline", str(tmp_path / "base.txt"),
            "--baseline-name", "transformer", "--hyp", f"local={tmp_path}/seed*/local.txt", "--max-order", "2",
            "--out", str(tmp_path / "out"), "--json", str(result), "--note", "Two seeds of a toy system."]
    written = cli.main(argv)
    assert written["json"] == str(result)
    run = json.loads(result.read_text())
    assert run["command"] == "python scripts/analyze.py " + " ".join(
        f"'{a}'" if "*" in a or " " in a else a for a in argv)
    assert {"date", "time", "machine", "load_average"} <= set(run)
    assert run["baseline"] == "transformer" and run["note"] == "Two seeds of a toy system."
    assert run["files"] == {"transformer": [str(tmp_path / "base.txt")],
                            "local": [f"{tmp_path}/seed1/local.txt", f"{tmp_path}/seed2/local.txt"]}
    assert "over the baseline transformer" in run["caption"] and "transformer 1 files" in run["caption"]
    # pooled by hand: seed 1 all right, seed 2 misses the n-grams over its 5th word (1 of 9 unigrams, 2 of 8 bigrams)
    assert [(r["system"], r["n"], round(r["gap"], 4)) for r in run["records"]] == [
        ("local", 1, round(-100 * 1 / 18, 4)), ("local", 2, round(-100 * 2 / 16, 4))]
    assert ngram_gap_table([run], []).splitlines()[2:] == [
        "| `transformer` (p_n) | 100.00 | 100.00 |", "| `local` (gap) | -5.56 | -12.50 |"]
    # the markdown table's caption says when, where and by which command it was measured, as the result file does
    caption = (tmp_path / "out" / "ngram-gap.md").read_text().split("\n")[0]
    assert caption.startswith(run["caption"] + " Measured " + run["date"] + " " + run["time"][:5] + " UTC on ")
    assert caption.endswith(f"{run['machine']}; command: `{run['command']}`.")
    before = result.read_text()
    with pytest.raises(AnalysisError, match="--json .*gap.json exists; pass --overwrite"):
        cli.main([*argv[:-4], "--out", str(tmp_path / "elsewhere"), "--json", str(result)])
    assert result.read_text() == before and not (tmp_path / "elsewhere").exists()
    for bad, why in ((["--hyp", f"local={tmp_path}/seed9*/local.txt"], "--hyp local=.*seed9.*: no file matches"),
                     (["--baseline", f"{tmp_path}/nothing*.txt"], "--baseline .*nothing.*: no file matches"),
                     (["--note", "x"], "--note is recorded in the --json result file")):
        with pytest.raises(AnalysisError, match=why):
            cli.main(["ngram-gap", "--ref", str(tmp_path / "ref"), "--baseline", str(tmp_path / "base.txt"),
                      "--hyp", f"local={tmp_path}/seed1/local.txt", "--out", str(tmp_path / "bad"), *bad])
    assert not (tmp_path / "bad").exists()


def test_generate_output_and_length_buckets(tmp_path):
    generate = "S-1\tx y z\nT-1\tc d e f\nH-1\t-0.5\tc d e f\nS-0\tx\nT-0\ta b\nH-0\t-0.1\ta q\n"
    (tmp_path / "gen.txt").write_text(generate)
    assert read_translations(str(tmp_path / "gen.txt")) == ["a q", "c d e f"]
    assert read_translations(str(tmp_path / "gen.txt"), "T") == ["a b", "c d e f"]
    table, _ = length_buckets({"sys": str(tmp_path / "gen.txt")}, str(tmp_path / "gen.txt"), str(tmp_path / "gen.txt"), [2])
    rows = {r["bucket"]: r for r in table.rows}
    assert rows["1-2"]["sentences"] == 1 and rows[">2"]["sentences"] == 1  # source lengths 1 and 3
    assert rows[">2"]["bleu"] == pytest.approx(100.0)  # "c d e f" == "c d e f"
    assert rows["1-2"]["bleu"] == pytest.approx(0.0)  # "a q" against "a b": no bigram


def test_sweep_reads_scores(tmp_path):
    points = []
    for m, bleu in ((1, 30.5), (3, 31.0)):
        run = tmp_path / f"m{m}" / "eval"
        run.mkdir(parents=True)
        (run / "scores.json").write_text(json.dumps({"sacrebleu": {"score": bleu}, "tokenized_bleu": {"score": bleu + 1}}))
        points.append(("M", float(m), str(tmp_path / f"m{m}")))
    table, _ = sweep(points, "M", gates={str(tmp_path / "m1"): 0.4})
    assert [(r["x"], r["bleu"], r["mean_gate"]) for r in table.rows] == [(1.0, 30.5, 0.4), (3.0, 31.0, None)]
    with pytest.raises(AnalysisError, match="2 scores.json files"):
        sweep([("M", 5.0, str(tmp_path))], "M")  # two below it: ambiguous, refused
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnalysisError, match="no scores.json"):
        sweep([("M", 5.0, str(tmp_path / "empty"))], "M")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "scores.json").write_text("{not json")
    with pytest.raises(AnalysisError, match="broken/scores.json cannot be read as scores.json"):
        sweep([("M", 5.0, str(tmp_path / "broken"))], "M")


def test_empty_translation_files_are_named(tmp_path):
    for name in ("hyp", "base", "ref"):
        (tmp_path / name).write_text("")
    with pytest.raises(AnalysisError, match=f"--ref {tmp_path / 'ref'}: no sentences"):
        ngram_gap({"x": str(tmp_path / "hyp")}, str(tmp_path / "base"), str(tmp_path / "ref"))


def test_outputs_are_never_overwritten_unless_asked(tmp_path):
    table = Table(["a"], [{"a": 1}])
    out = Outputs(str(tmp_path))
    out.write("x", table)
    assert (tmp_path / "x.csv").read_text() == "a\n1\n" and "| 1 |" in (tmp_path / "x.md").read_text()
    with pytest.raises(AnalysisError, match="exists; pass --overwrite"):
        Outputs(str(tmp_path)).write("x", table)
    Outputs(str(tmp_path), overwrite=True).write("x", Table(["a"], [{"a": 2}]))
    assert (tmp_path / "x.csv").read_text() == "a\n2\n"
    # an extra table that exists stops the write before anything is written, and the command checks it up front
    (tmp_path / "y-samples.csv").write_text("mine\n")
    with pytest.raises(AnalysisError, match="y-samples.csv exists"):
        Outputs(str(tmp_path)).write("y", table, extra_tables={"samples": table})
    assert not (tmp_path / "y.csv").exists() and (tmp_path / "y-samples.csv").read_text() == "mine\n"
    from fairseq_localness.analyses import cli

    with pytest.raises(AnalysisError, match="y-samples.csv exists"):
        cli.main(["gaussian-scopes", "--checkpoint", str(tmp_path / "none.pt"), "--data", str(tmp_path),
                  "--out", str(tmp_path), "--name", "y"])
    (tmp_path / "file").write_text("mine\n")
    with pytest.raises(AnalysisError, match="--out .*file: a file, not a directory"):
        Outputs(str(tmp_path / "file")).check("x")


@torch.no_grad()
def test_plain_transformer_attention_is_captured_per_head(corpus):
    """fairseq's own attention returns head-averaged weights from PyTorch's fused kernel; capture gets every head."""
    from fairseq_localness.analyses.loading import capture_attention
    from localness_testing import random_batch

    tiny = loaded("transformer", corpus[1])
    src, lengths, prev = random_batch(tiny.task, batch=3, src_len=8)
    with capture_attention(tiny.model, ("encoder", "cross")) as probs:
        tiny.model(src, lengths, prev)
    assert sorted(probs) == [(t, l, k) for t, k in (("cross", "attn"), ("encoder", "san")) for l in (1, 2, 3)]
    weights = probs[("encoder", 2, "san")]
    assert weights.shape == (3, 4, 8, 8)  # (B, H, T, S)
    real = src.ne(tiny.task.source_dictionary.pad())
    torch.testing.assert_close(weights.sum(-1)[:, :, -1], torch.ones(3, 4))
    assert float(weights.masked_fill(real[:, None, None, :], 0).abs().max()) == 0.0  # nothing on padding keys
    assert not torch.allclose(weights[:, 0], weights[:, 1])  # heads differ: not one averaged map
    assert tiny.model.encoder.layers[0].self_attn.skip_embed_dim_check is False  # restored


def test_bad_values_are_refused_when_the_arguments_are_read(tmp_path, capsys):
    """A device, head, layer or sacreBLEU tokenizer that cannot work stops the command before any checkpoint is read,
    with the flag named (it used to surface as a traceback after loading, or draw a wrong head silently)."""
    from fairseq_localness.analyses import cli

    checkpoint = ["--checkpoint", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "out")]
    for argv, flag, why in ((["attention-heatmap", *checkpoint, "--device", "gpu"], "--device", "is not a device"),
                            (["attention-heatmap", *checkpoint, "--head", "0"], "--head", "counted from 1"),
                            (["attention-heatmap", *checkpoint, "--layer", "0"], "--layer", "counted from 1"),
                            (["diffwin-windows", *checkpoint, "--head", "-1"], "--head", "counted from 1"),
                            (["ngram-gap", "--hyp", "a=x", "--baseline", "x", "--ref", "x", "--tokenize", "bogus"],
                             "--tokenize", "not a sacreBLEU tokenizer: none, zh, 13a")):
        with pytest.raises(SystemExit) as exit:
            cli.main(argv)
        assert exit.value.code == 2
        error = capsys.readouterr().err
        assert f"argument {flag}" in error and why in error, error
    # and before any checkpoint is loaded or any source tagged: one checkpoint where one is drawn, files that exist
    for argv, why in ((["attention-heatmap", *checkpoint, "--checkpoint", str(tmp_path / "b.pt")], "give one --checkpoint"),
                      (["gate-pos", *checkpoint, "--tags", str(tmp_path / "tags.txt")], "--tags .*tags.txt: no such file"),
                      (["gate-pos", *checkpoint, "--tagger", "spacy:en_core_web_sm", "--source-text", "x"],
                       "--checkpoint .*missing.pt: no such file"),
                      # one label twice: length-bleu would silently keep the last; ngram-gap pools, but not a file twice
                      (["length-bleu", "--hyp", f"a={tmp_path}/x", "--hyp", f"a={tmp_path}/y", "--ref", "r",
                        "--out", str(tmp_path / "out")], "--hyp a=.*/y: a is already .*/x"),
                      (["ngram-gap", "--hyp", f"a={tmp_path}/x", "--hyp", f"a={tmp_path}/x", "--baseline", "b",
                        "--ref", "r", "--out", str(tmp_path / "out")], "--hyp a=.*/x: .*/x is given twice for a")):
        with pytest.raises(AnalysisError, match=why):
            cli.main(argv)
    assert not (tmp_path / "out").exists()


def test_attention_mass_without_a_checkout_says_so_before_loading_a_model(monkeypatch, tmp_path):
    """The paper's values (configs/analyses_published.yaml) are a file of the checkout: an install without one
    gets the checkout message as an analysis error, before any checkpoint is loaded."""
    from fairseq_localness.analyses import attention, cli
    from fairseq_localness.paths import CheckoutError

    def no_checkout():
        raise CheckoutError("no configs/benchmark/ and scripts/ here: set FAIRSEQ_LOCALNESS_HOME=CHECKOUT")

    def load(*args, **kwargs):
        raise AssertionError("a model was loaded before the published values were read")

    monkeypatch.setattr(attention, "PUBLISHED_FILE", tmp_path / "analyses_published.yaml")
    monkeypatch.setattr(attention, "require_checkout", no_checkout)
    monkeypatch.setattr(cli, "_models", load)
    with pytest.raises(AnalysisError, match=r"configs/analyses_published.yaml: no configs/benchmark/.*"
                                            r"FAIRSEQ_LOCALNESS_HOME"):
        cli.main(["attention-mass", "--checkpoint", str(tmp_path / "model.pt"), "--data", str(tmp_path),
                  "--out", str(tmp_path / "out")])
    monkeypatch.setattr(attention, "require_checkout", lambda: tmp_path)
    with pytest.raises(AnalysisError, match="is missing from the checkout"):
        attention.published_values()
