"""fairseq-generate's decoding options over one tiny model per architecture family, and the diverse beam search fix.

One untrained checkpoint per family is written once per module (a random
model finishes hypotheses at varied steps, which is what pruning needs);
fairseq-generate and fairseq-interactive run in-process. Every option set runs
through each family's incremental decoding (the plugin's cached state reordered
by beam search, sampling and diverse groups). Where an untrained model lets an
option's promise be seen, it is checked: lengths, prefixes, repeated n-grams,
alignments, constraints. The sampling, diverse-beam, length- and unknown-penalty
sets are checked for their n-best counts only, and `--retain-dropout` only runs
(these models have no dropout).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import torch

from fairseq_localness.compat import batch_row_diverse_beam_search, diverse_beam_search_is_broken
from fairseq_localness.gpu.families import architecture_families
from localness_testing import TINY, USER_DIR, build_model, flags, preprocess, write_synthetic_corpus

TEST_SENTENCES = 8  # the synthetic test split, cut to keep 17 families x 7 decodes fast
SMALL = {"encoder_embed_dim": 16, "decoder_embed_dim": 16, "encoder_ffn_embed_dim": 16, "decoder_ffn_embed_dim": 16}


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("generate-options")
    write_synthetic_corpus(root / "raw", train=20)
    for side in ("src", "tgt"):
        test = root / "raw" / f"test.{side}"
        test.write_text("".join(test.read_text().splitlines(keepends=True)[:TEST_SENTENCES]))
    return preprocess(root / "raw", root / "bin")


def decodes_through_methods(arch: str) -> bool:
    """Whether ``arch`` places a method in decoder self- or cross-attention (what decoding options can reach)."""
    from fairseq_localness.attention.placement import LocalityPlan
    from fairseq_localness.modelbuild import parse_model_args

    return any(kind != "encoder" for kind, _layer in LocalityPlan.from_args(parse_model_args(arch)).placements)


#: every family; those whose methods sit in the encoder only decode through fairseq's own decoder path (the
#: plain transformer_localness covers it by default), so they run with the slow suite
FAMILIES = [
    arch if arch == "transformer_localness" or decodes_through_methods(arch) else pytest.param(arch, marks=pytest.mark.slow)
    for arch in architecture_families()
]


def write_checkpoint(model, args, path: Path) -> Path:
    """A checkpoint laid out as fairseq-train saves one (``checkpoint_utils.save_state``)."""
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True, enum_to_str=True)
    state = {
        "cfg": cfg, "args": None, "model": model.state_dict(),
        "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam",
                               "lr_scheduler_state": {"best": None}, "num_updates": 0}],
        "extra_state": {"train_iterator": {"epoch": 1}},
    }
    torch.save(state, path)
    return path


@pytest.fixture(scope="module")
def checkpoints(data_bin, tmp_path_factory):
    """checkpoints(arch): the family's tiny untrained checkpoint, written on first use."""
    from fairseq import options, tasks

    root = tmp_path_factory.mktemp("checkpoints")
    paths: Dict[str, Path] = {}

    def checkpoint(arch: str) -> Path:
        if arch not in paths:
            args = options.parse_args_and_arch(options.get_training_parser(), [
                str(data_bin), "--arch", arch, "--user-dir", USER_DIR, "--task", "translation", *flags({**TINY, **SMALL})])
            torch.manual_seed(3)
            model = tasks.setup_task(args).build_model(args)
            paths[arch] = write_checkpoint(model, args, root / f"{arch}.pt")
        return paths[arch]

    return checkpoint


#: {(parser, argv): fairseq's config of a decoding command line}: the conversion (Hydra composes an override per
#: option) takes seconds, ten times the tiny decoding, and no option here depends on the family, whose
#: architecture comes from the checkpoint. Each decode names its checkpoint (and output) in the one config: a
#: copy of an OmegaConf config costs seconds too, and fairseq's decoding mains change theirs only to fill in
#: defaults (interactive's batch size 1), the same at every call
_CONFIGS: Dict[Tuple[str, Tuple[str, ...]], Any] = {}


def decoding_config(parser: str, argv: List[str], checkpoint: Path):
    """fairseq's config of ``argv`` (``--path`` left out) for the ``parser`` ('generation' or 'interactive'),
    converted once per command line, with ``checkpoint`` as its model. No data-loading worker: a worker process
    per decode takes seconds to start and join, beside a decoding of 8 sentences."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    key = (parser, tuple(argv))
    if key not in _CONFIGS:
        make = {"generation": options.get_generation_parser, "interactive": options.get_interactive_generation_parser}
        args = options.parse_args_and_arch(make[parser](), [*argv, "--path", "CHECKPOINT", "--num-workers", "0"])
        _CONFIGS[key] = convert_namespace_to_omegaconf(args)
    cfg = _CONFIGS[key]
    cfg.common_eval.path = str(checkpoint)
    return cfg


def generate(data_bin: Path, checkpoint: Path, extra: List[str], out: Path) -> List[str]:
    """fairseq-generate in-process; the lines of its output file."""
    from fairseq_cli.generate import main

    cfg = decoding_config("generation", [
        str(data_bin), "--user-dir", USER_DIR, "--batch-size", "16", "--max-len-a", "0", "--max-len-b", "12",
        "--seed", "1", *extra], checkpoint)
    cfg.common_eval.results_path = str(out)
    main(cfg)
    return (out / "generate-test.txt").read_text().splitlines()


def hypotheses(lines: List[str]) -> Dict[int, List[List[str]]]:
    found: Dict[int, List[List[str]]] = {}
    for line in lines:
        if line.startswith("H-"):
            tag, _score, text = line.split("\t")
            found.setdefault(int(tag[2:]), []).append(text.split())
    return found


def references(lines: List[str]) -> Dict[int, List[str]]:
    return {int(line.split("\t")[0][2:]): line.split("\t")[1].split() for line in lines if line.startswith("T-")}


#: option set -> check of the output lines
def check_beam(lines, nbest=1):
    hyps = hypotheses(lines)
    assert len(hyps) == TEST_SENTENCES and all(len(h) == nbest for h in hyps.values()), lines[-5:]
    return hyps


def check_constrained_lengths(lines):
    hyps = check_beam(lines, nbest=2)
    refs = references(lines)
    for index, sentence_hyps in hyps.items():
        for hyp in sentence_hyps:
            # --min-len 3 / max-len-b 6 count tokens before the eos
            assert 3 <= len(hyp) <= 6, hyp
            bigrams = list(zip(hyp, hyp[1:]))
            assert len(bigrams) == len(set(bigrams)), f"repeated bigram despite --no-repeat-ngram-size 2: {hyp}"
            assert hyp[0] == refs[index][0], "--prefix-size 1 must keep the reference's first token"
    assert any(line.startswith("A-") for line in lines), "--print-alignment printed no alignment"


OPTION_SETS = {
    "beam_lenpen_unkpen_retain_dropout": (["--beam", "3", "--lenpen", "0.6", "--unkpen", "2", "--retain-dropout"], check_beam),
    "nbest_prefix_minmax_norepeat_alignment": (
        ["--beam", "3", "--nbest", "2", "--prefix-size", "1", "--max-len-b", "6", "--min-len", "3",
         "--no-repeat-ngram-size", "2", "--print-alignment"], check_constrained_lengths),
    "sampling_topk": (["--sampling", "--sampling-topk", "3", "--beam", "2", "--nbest", "2"], lambda lines: check_beam(lines, 2)),
    "sampling_topp": (["--sampling", "--sampling-topp", "0.5", "--beam", "2", "--nbest", "2"], lambda lines: check_beam(lines, 2)),
    "diverse_beam": (["--beam", "4", "--nbest", "4", "--diverse-beam-groups", "2", "--diverse-beam-strength", "0.5"],
                     lambda lines: check_beam(lines, 4)),
    "diversity_rate": (["--beam", "3", "--diversity-rate", "0.5"], check_beam),
}


@pytest.mark.parametrize("arch", FAMILIES)
def test_generate_option_matrix(arch, data_bin, checkpoints, tmp_path):
    for name, (extra, check) in OPTION_SETS.items():
        lines = generate(data_bin, checkpoints(arch), extra, tmp_path / name)
        try:
            check(lines)
        except AssertionError as err:
            raise AssertionError(f"{arch} with {' '.join(extra)}: {err}") from None
    assert constrained_translations(data_bin, checkpoints(arch), tmp_path), arch


def constrained_translations(data_bin: Path, checkpoint: Path, tmp_path: Path) -> bool:
    """fairseq-interactive --constraints: every output contains its constraint token."""
    from fairseq_cli.interactive import main

    source = tmp_path / "input.txt"
    source.write_text("w1 w2 w3\tW3\nw4 w5\tW9\n")
    cfg = decoding_config("interactive", [
        str(data_bin), "--user-dir", USER_DIR, "--source-lang", "src", "--target-lang", "tgt", "--beam", "3",
        "--constraints", "ordered", "--max-len-a", "0", "--max-len-b", "8"], checkpoint)
    cfg.interactive.input = str(source)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        main(cfg)
    hyps = [line.split("\t")[2].split() for line in stdout.getvalue().splitlines() if line.startswith("H-")]
    assert len(hyps) == 2, stdout.getvalue()[-2000:]
    assert "W3" in hyps[0] and "W9" in hyps[1], hyps
    return True


# --- diverse beam search: the compat fix ---------------------------------------------------------------------------


def diverse_generate(model, task, src, lengths, ids, search_class, prunes: List[int]):
    """fairseq's SequenceGenerator with ``search_class`` (diverse beam, 2 groups of 2), counting batch prunes."""
    from fairseq.sequence_generator import SequenceGenerator

    class Counting(search_class):
        def prune_sentences(self, batch_idxs):
            prunes.append(int(batch_idxs.numel()))
            super().prune_sentences(batch_idxs)

    search = Counting(task.target_dictionary, num_groups=2, diversity_strength=0.5)
    generator = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=12, search_strategy=search)
    sample = {"id": ids, "net_input": {"src_tokens": src, "src_lengths": lengths}}
    with torch.no_grad():
        return [[(h["tokens"].tolist(), round(float(h["score"]), 5)) for h in hyps] for hyps in generator.generate([model], sample)]


def learn_copy_lengths(model, task, steps: int = 60) -> None:
    """A few Adam steps on "translate into the reversed source": hypotheses then end near the source's
    length, so sentences of different lengths finish (and are pruned) at different steps."""
    from localness_testing import random_batch

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model.train()
    for step in range(steps):
        src, lengths, _ = random_batch(task, batch=16, src_len=9, seed=100 + step)
        target = torch.full_like(src, task.target_dictionary.pad())
        for row, length in enumerate(lengths.tolist()):
            target[row, :length] = src[row, -length:].flip(0).roll(-1)  # reversed words, then eos
        prev = torch.cat([target.new_full((src.size(0), 1), task.target_dictionary.eos()), target[:, :-1]], dim=1)
        logits = model(src, lengths, prev)[0]
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, ignore_index=task.target_dictionary.pad())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


@pytest.fixture(scope="module")
def diverse_setup(data_bin):
    from fairseq.search import DiverseBeamSearch

    from localness_testing import random_batch

    model, task = build_model("transformer_localness", data_bin, SMALL, seed=3)
    learn_copy_lengths(model, task)
    src, lengths, _ = random_batch(task, batch=6, src_len=9)
    unfixed = DiverseBeamSearch.__mro__[1] if getattr(DiverseBeamSearch, "indexes_by_batch_row", False) else DiverseBeamSearch
    return model, task, src, lengths, unfixed, batch_row_diverse_beam_search(unfixed)


def test_diverse_beam_fix_equals_fairseq_where_fairseq_works(diverse_setup):
    """Ids 0..n-1 are the batch rows: fairseq's search is right there, pruning included, and the fix changes nothing."""
    model, task, src, lengths, unfixed, fixed = diverse_setup
    ids = torch.arange(src.size(0))
    prunes: List[int] = []
    expected = diverse_generate(model, task, src, lengths, ids, unfixed, [])
    got = diverse_generate(model, task, src, lengths, ids, fixed, prunes)
    assert got == expected
    assert len({len(hyps[0][0]) for hyps in got}) > 1, got
    # sentences finished at different steps: the batch shrank while others went on searching
    assert prunes and 0 < min(prunes) < src.size(0), prunes


def test_diverse_beam_fix_ignores_dataset_ids(diverse_setup):
    """Real batches carry dataset ids: fairseq's search crashes (or takes other sentences' penalties); the fix
    translates every sentence exactly as with ids 0..n-1, after pruning too."""
    model, task, src, lengths, unfixed, fixed = diverse_setup
    rows = torch.arange(src.size(0))
    expected = diverse_generate(model, task, src, lengths, rows, fixed, [])
    for ids in (rows + 100, rows.flip(0)):
        assert diverse_generate(model, task, src, lengths, ids, fixed, []) == expected
    if diverse_beam_search_is_broken(unfixed):  # fairseq's own class (the imported one is the patched one)
        with pytest.raises(IndexError):
            diverse_generate(model, task, src, lengths, rows + 100, unfixed, [])


def test_fix_is_applied_only_to_a_broken_fairseq():
    from fairseq import search

    from fairseq_localness import compat

    patched = getattr(search.DiverseBeamSearch, "indexes_by_batch_row", False)
    original = search.DiverseBeamSearch.__mro__[1] if patched else search.DiverseBeamSearch
    assert patched == compat.diverse_beam_search_is_broken(original)  # ve-fairseq 0.12.3: broken, so patched
    assert not compat.diverse_beam_search_is_broken()
    assert compat.fix_diverse_beam_search() is False  # idempotent: a working search is left alone


def test_no_repeat_ngram_fix():
    """fairseq's CPU n-gram blocker reads the padded token buffer; fixed, "5 6 5" bans 6 (bigram "5 6") at step 3,
    and a buffer that already holds later tokens (past the step) changes nothing."""
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    from fairseq_localness import compat

    assert not compat.no_repeat_ngram_is_broken()
    blocker = NGramRepeatBlock(2, use_extension=False)
    lprobs = torch.zeros(2, 8)
    tokens = torch.tensor([[2, 5, 6, 5, 1, 1], [2, 5, 6, 7, 5, 6]])
    blocker(tokens, lprobs, bsz=2, beam_size=1, step=3)
    assert torch.isneginf(lprobs).nonzero().tolist() == [[0, 6]]  # row 1's "7" starts no earlier bigram


# --- decoding speed: static cross-attention caches are not copied on within-sentence beam reorders -----------------


@pytest.mark.parametrize("arch", FAMILIES)
def test_beam_search_unchanged_by_static_cache_reuse(arch, data_bin, monkeypatch):
    """Beam search (with finished sentences dropped mid-search) gives the same hypotheses and scores whether the
    static cross-attention caches are reordered at every step (the reference) or only when sentences are dropped."""
    from fairseq.sequence_generator import SequenceGenerator

    from fairseq_localness.attention.core import LocalityAttention
    from localness_testing import random_batch

    model, task = build_model(arch, data_bin, SMALL, seed=3)
    src, lengths, _ = random_batch(task, batch=5, src_len=9)
    sample = {"id": torch.arange(5), "net_input": {"src_tokens": src, "src_lengths": lengths}}

    def decode():
        generator = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=10)
        with torch.no_grad():
            return [[(h["tokens"].tolist(), float(h["score"])) for h in hyps] for hyps in generator.generate([model], sample)]

    skipped = []
    within = LocalityAttention._within_sentences
    monkeypatch.setattr(LocalityAttention, "_within_sentences", lambda *a: skipped.append(within(*a)) or skipped[-1])
    fast = decode()
    monkeypatch.setattr(LocalityAttention, "_within_sentences", lambda *a: False)
    assert decode() == fast
    has_cross = any(m.encoder_decoder_attention for m in model.modules() if isinstance(m, LocalityAttention))
    assert (True in skipped) == has_cross, arch  # the reuse happened wherever a cross-attention cache exists

    # static cross-attention inputs projected once per sentence (the default) or once per hypothesis (reference)
    beams = []
    one_row = LocalityAttention._one_row_per_sentence
    monkeypatch.setattr(LocalityAttention, "_within_sentences", within)
    monkeypatch.setattr(LocalityAttention, "_one_row_per_sentence",
                        lambda self, key: beams.append(one_row(self, key)[1]) or one_row(self, key))
    assert decode() == fast
    monkeypatch.setattr(LocalityAttention, "_one_row_per_sentence", lambda self, key: (key, 1))
    assert decode() == fast
    assert beams == ([4] * len(beams) if has_cross else []) and (len(beams) > 0) == has_cross, arch


@pytest.mark.parametrize("arch,placement", [
    ("transformer_csan1d", {"csan1d_attention": "encoder,decoder"}),
    ("transformer_hybrid_local", {"hybrid_attention": "encoder,decoder"}),
    ("transformer_gaussian_local", {"gaussian_attention": "encoder,decoder,cross"}),
    ("transformer_sman", {}), ("transformer_dman", {}), ("transformer_t5bias", {}), ("transformer_alibi", {}),
])
def test_beam_search_through_flex_equals_sdpa(arch, placement, data_bin, monkeypatch):
    """fairseq's beam search with every block on ``--locality-attention-backend flex`` (decoding steps through
    Flex, beam reorders and finished sentences included) gives the hypotheses and scores of the SDPA path."""
    from fairseq.sequence_generator import SequenceGenerator

    from fairseq_localness.attention import core
    from fairseq_localness.attention.core import LocalityAttention
    from localness_testing import random_batch

    steps = []  # the backend of every decoding step under flex (fairseq's alignment layer asks for weights: eager)

    def spy(facts):
        chosen = core_choose(facts)
        if facts.incremental and facts.requested == "flex" and not facts.need_probs:
            steps.append(chosen[0])
        return chosen

    core_choose = core.choose_backend
    monkeypatch.setattr(core, "choose_backend", spy)

    model, task = build_model(arch, data_bin, {**SMALL, **placement}, seed=3)  # decoder placements: steps to test
    src, lengths, _ = random_batch(task, batch=5, src_len=9)
    sample = {"id": torch.arange(5), "net_input": {"src_tokens": src, "src_lengths": lengths}}
    blocks = [m for m in model.modules() if isinstance(m, LocalityAttention)]
    decoded = {}
    for backend in ("sdpa", "flex"):
        for block in blocks:
            block.backend = backend
        generator = SequenceGenerator([model], task.target_dictionary, beam_size=4, max_len_b=10)
        with torch.no_grad():
            decoded[backend] = [[(h["tokens"].tolist(), float(h["score"])) for h in hyps]
                                for hyps in generator.generate([model], sample)]
    assert steps and set(steps) == {"flex"}, arch
    for sdpa_hyps, flex_hyps in zip(decoded["sdpa"], decoded["flex"]):
        assert [tokens for tokens, _ in flex_hyps] == [tokens for tokens, _ in sdpa_hyps], arch
        assert [score for _, score in flex_hyps] == pytest.approx([score for _, score in sdpa_hyps], abs=1e-5), arch


def test_one_row_per_sentence_only_where_rows_repeat():
    """(S, B*beam, C) encoder output -> (S, B, C) only when each sentence's beam rows are identical."""
    from types import SimpleNamespace

    from fairseq_localness.attention.core import LocalityAttention

    attention = SimpleNamespace(beam_size=2)
    sentences = torch.arange(12.0).view(2, 3, 2)  # S=2, B=3, C=2
    repeated = sentences.repeat_interleave(2, dim=1)  # rows 0,0,1,1,2,2
    unique, beam = LocalityAttention._one_row_per_sentence(attention, repeated)
    assert beam == 2 and torch.equal(unique, sentences)
    distinct = repeated.clone()
    distinct[1, 3, 0] += 1.0  # hypothesis 1 of sentence 1 differs at one position
    assert LocalityAttention._one_row_per_sentence(attention, distinct)[1] == 1
    assert LocalityAttention._one_row_per_sentence(SimpleNamespace(beam_size=4), repeated)[1] == 1  # 6 rows, beam 4
    assert LocalityAttention._one_row_per_sentence(SimpleNamespace(beam_size=1), repeated)[1] == 1
