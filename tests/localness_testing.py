"""Shared test utilities: tiny synthetic corpus, model building through fairseq's parser,
incremental-decoding parity with beam reordering, padding invariance, and the real CLI.

Every method's tests use these so that each behaviour is checked the same way.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

import torch

REPO = Path(__file__).resolve().parents[1]
USER_DIR = str(REPO / "fairseq_localness")
BIN = Path(sys.executable).parent


def published_comparison_output(path: Path) -> bool:
    """A markdown file the comparison wrote under docs/results/compare/LABEL/: its output, dated in its own
    caption, not a page of the manual (the folder's README.md is a page)."""
    parts = path.relative_to(REPO / "docs").parts
    return parts[:2] == ("results", "compare") and len(parts) > 3

#: a tiny model: 3 encoder and 3 decoder layers, so paper placements such as "1-3" fit
TINY = {
    "encoder_layers": 3, "decoder_layers": 3,
    "encoder_embed_dim": 32, "decoder_embed_dim": 32,
    "encoder_ffn_embed_dim": 64, "decoder_ffn_embed_dim": 64,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "dropout": 0.0, "attention_dropout": 0.0,
}


#: how the docs write a small count in words ("Run A holds eight models")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def assert_page_says(page: str, phrases: Sequence[str], source: str = "its result files") -> None:
    """Each of ``phrases`` occurs in the page ``page`` (a path from the repository root), whitespace normalised so
    that a phrase may wrap across lines: the docs' prose numbers, rebuilt from ``source`` by the caller."""
    body = " ".join((REPO / page).read_text(encoding="utf-8").split())
    missing = [phrase for phrase in phrases if phrase not in body]
    assert not missing, f"{page} no longer says what {source} hold(s): {missing}"


def write_synthetic_corpus(directory: Path, train: int = 600, seed: int = 0) -> None:
    """A reversal task with a 40-word vocabulary: learnable in a few hundred updates."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    directory.mkdir(parents=True, exist_ok=True)
    for split, size in (("train", train), ("valid", 40), ("test", 40)):
        with open(directory / f"{split}.src", "w") as src, open(directory / f"{split}.tgt", "w") as tgt:
            for _ in range(size):
                sentence = [rng.choice(words) for _ in range(rng.randint(3, 12))]
                src.write(" ".join(sentence) + "\n")
                tgt.write(" ".join(w.upper() for w in reversed(sentence)) + "\n")


def preprocess(raw: Path, dest: Path, joined: bool = True) -> Path:
    cmd = [
        str(BIN / "fairseq-preprocess"), "--source-lang", "src", "--target-lang", "tgt",
        "--trainpref", str(raw / "train"), "--validpref", str(raw / "valid"), "--testpref", str(raw / "test"),
        "--destdir", str(dest), "--workers", "1",
    ] + (["--joined-dictionary"] if joined else [])
    run(cmd)
    return dest


def run(
    cmd: Sequence[str], cwd: Optional[Path] = None, check: bool = True, env: Optional[Dict[str, str]] = None,
    stdin: Optional[str] = None,
) -> subprocess.CompletedProcess:
    environment = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    environment.update(env or {})
    proc = subprocess.run(list(cmd), cwd=cwd or REPO, capture_output=True, text=True, env=environment, input=stdin)
    if check and proc.returncode != 0:
        raise AssertionError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


def flags(options: Dict[str, object]) -> List[str]:
    """{'encoder_layers': 3, 'cnns_separable': True} -> ['--encoder-layers', '3', '--cnns-separable', 'True']:
    every option gets a value, as the plugin's flags take one (its booleans parse true/false). fairseq's own
    valueless switches (``--share-all-embeddings``) have no place here: a value after them is a stray argument."""
    out: List[str] = []
    for key, value in options.items():
        out += ["--" + key.replace("_", "-"), str(value)]
    return out


def build_model(arch: str, data_bin: Path, overrides: Optional[Dict[str, object]] = None, seed: int = 0):
    """Build a model exactly as fairseq-train does (parser, arch function, task)."""
    import fairseq_localness  # noqa: F401
    from fairseq import options, tasks

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [str(data_bin), "--arch", arch, "--user-dir", USER_DIR, "--task", "translation"]
        + flags({**TINY, **(overrides or {})}),
    )
    torch.manual_seed(seed)
    task = tasks.setup_task(args)
    model = task.build_model(args)
    return model.eval(), task


def random_batch(task, batch: int = 4, src_len: int = 9, tgt_len: int = 7, seed: int = 1):
    """Left-padded sources of varied length and right-padded-free target prefixes."""
    gen = torch.Generator().manual_seed(seed)
    src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
    lengths = torch.randint(3, src_len + 1, (batch,), generator=gen)
    lengths[0] = src_len
    src = torch.full((batch, src_len), src_dict.pad(), dtype=torch.long)
    for b, n in enumerate(lengths.tolist()):
        src[b, src_len - n : -1] = torch.randint(src_dict.nspecial, len(src_dict), (n - 1,), generator=gen)
        src[b, -1] = src_dict.eos()
    prev = torch.randint(tgt_dict.nspecial, len(tgt_dict), (batch, tgt_len), generator=gen)
    prev[:, 0] = tgt_dict.eos()
    return src, lengths, prev


@torch.no_grad()
def assert_incremental_parity(model, task, atol: float = 1e-5, reorder_at: int = 3, beam: int = 2) -> None:
    """Step-by-step decoding equals the full-sequence forward, including after a beam reorder.

    Like beam search, every source sentence appears ``beam`` times with its own
    target prefixes, and the reorder moves hypotheses only within a sentence's
    beam (fairseq's cross attention relies on that).
    """
    src, lengths, _ = random_batch(task, batch=2)
    src, lengths = src.repeat_interleave(beam, dim=0), lengths.repeat_interleave(beam, dim=0)
    _, _, prev = random_batch(task, batch=src.size(0), seed=2)
    steps = prev.size(1)
    # hypothesis 1 of sentence 0 fills its whole beam; sentence 1's two hypotheses swap
    new_order = torch.tensor([1, 1, 3, 2])

    encoder_out = model.encoder(src, src_lengths=lengths)
    state: Dict = {}
    rows = torch.arange(src.size(0))
    for t in range(steps):
        if t == reorder_at:
            rows = rows.index_select(0, new_order)
            encoder_out = model.encoder.reorder_encoder_out(encoder_out, new_order)
            model.decoder.reorder_incremental_state_scripting(state, new_order)
        step_logits, _ = model.decoder(prev[rows, : t + 1], encoder_out=encoder_out, incremental_state=state)
        full = model(src[rows], lengths[rows], prev[rows, : t + 1])[0]
        torch.testing.assert_close(step_logits[:, -1], full[:, -1], atol=atol, rtol=0, msg=lambda m: f"step {t}: {m}")


@torch.no_grad()
def assert_padding_invariance(model, task, atol: float = 1e-5) -> None:
    """Adding padding (a longer sentence in the batch) changes no output at real positions."""
    src, lengths, prev = random_batch(task, batch=3, src_len=10)
    full_logits = model(src, lengths, prev)[0]
    for b in range(src.size(0)):
        n = int(lengths[b])
        alone = model(src[b : b + 1, -n:], lengths[b : b + 1], prev[b : b + 1])[0]
        torch.testing.assert_close(full_logits[b : b + 1], alone, atol=atol, rtol=0)
        # right padding on the target side too
        padded_prev = torch.cat([prev[b : b + 1], prev.new_full((1, 3), task.target_dictionary.pad())], dim=1)
        padded = model(src[b : b + 1, -n:], lengths[b : b + 1], padded_prev)[0][:, : prev.size(1)]
        torch.testing.assert_close(padded, alone, atol=atol, rtol=0)


def train_command(data_bin: Path, save_dir: Path, arch: str, extra: Iterable[str] = (), updates: int = 30) -> List[str]:
    return [
        str(BIN / "fairseq-train"), str(data_bin), "--user-dir", USER_DIR, "--arch", arch,
        *flags(TINY), "--optimizer", "adam", "--lr", "0.003", "--lr-scheduler", "inverse_sqrt",
        "--warmup-updates", "10", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--max-tokens", "600", "--max-update", str(updates), "--save-dir", str(save_dir),
        "--no-progress-bar", "--log-interval", "10", "--seed", "1", "--no-epoch-checkpoints", *extra,
    ]


def generate_command(data_bin: Path, checkpoint: Path, extra: Iterable[str] = ()) -> List[str]:
    return [
        str(BIN / "fairseq-generate"), str(data_bin), "--user-dir", USER_DIR, "--path", str(checkpoint),
        "--beam", "3", "--max-len-b", "20", "--scoring", "sacrebleu", "--batch-size", "16", *extra,
    ]


def train_and_generate(data_bin: Path, work: Path, arch: str, extra: Iterable[str] = (), updates: int = 30) -> str:
    """Train through fairseq-train and translate the test set with fairseq-generate; return its output."""
    save_dir = work / arch
    run(train_command(data_bin, save_dir, arch, extra, updates))
    out = run(generate_command(data_bin, save_dir / "checkpoint_last.pt")).stdout
    hypotheses = [line for line in out.splitlines() if line.startswith("H-")]
    assert len(hypotheses) == 40, out[-2000:]
    assert "BLEU" in out.splitlines()[-1], out[-2000:]
    return out


# --- hand computation of attention (tests/test_equations_*.py) ----------------------------------------------------


def identity_attention(methods, dim: int = 4, heads: int = 2, attn_type: str = "encoder", max_positions: int = 64):
    """A LocalityAttention whose q/k/v/out projections are the identity: head h of q, k and v is x[..., h*d:(h+1)*d].

    Hand computations then read the attention directly off the inputs.
    """
    from fairseq_localness.attention import AttentionSpec, LocalityAttention

    spec = AttentionSpec(embed_dim=dim, num_heads=heads, attn_type=attn_type, layer=1, kdim=dim, max_positions=max_positions)
    kind = {"encoder_decoder_attention": True} if attn_type == "cross" else {"self_attention": True}
    attention = LocalityAttention(dim, heads, spec, methods, **kind).eval()
    with torch.no_grad():
        for proj in (attention.q_proj, attention.k_proj, attention.v_proj, attention.out_proj):
            proj.weight.copy_(torch.eye(dim))
            proj.bias.zero_()
    return attention


def causal_mask(length: int) -> torch.Tensor:
    """fairseq's future mask: -inf above the diagonal."""
    return torch.triu(torch.full((length, length), float("-inf")), diagonal=1)


def hand_attention(queries, keys, heads: int, support, extra=None, factor=None, renormalize: bool = False):
    """Attention computed key by key with math.exp, from the definition.

    queries (T, B, C), keys (S, B, C) (keys double as values); ``support(b, h, i)`` lists the keys j query i
    of head h may see; ``extra(b, h, i, j)`` adds to the logit q_i.k_j / sqrt(d); ``factor(b, h, i, j)``
    multiplies the normalised weight afterwards (divided again by the row's sum when ``renormalize``).
    Returns weights (B, H, T, S), zero outside the support, and the output (T, B, C) = sum_j w_ij v_j per head.
    """
    import math

    tgt_len, batch, dim = queries.shape
    src_len = keys.size(0)
    d = dim // heads
    weights = torch.zeros(batch, heads, tgt_len, src_len, dtype=torch.float64)
    out = torch.zeros(tgt_len, batch, dim, dtype=torch.float64)
    for b in range(batch):
        for h in range(heads):
            cols = slice(h * d, (h + 1) * d)
            for i in range(tgt_len):
                keys_i = list(support(b, h, i))
                if not keys_i:
                    continue
                q = queries[i, b, cols].double()
                logits = {}
                for j in keys_i:
                    logits[j] = float(q @ keys[j, b, cols].double()) / math.sqrt(d)
                    if extra is not None:
                        logits[j] += float(extra(b, h, i, j))
                top = max(logits.values())
                total = sum(math.exp(s - top) for s in logits.values())
                for j, s in logits.items():
                    w = math.exp(s - top) / total
                    if factor is not None:
                        w *= float(factor(b, h, i, j))
                    weights[b, h, i, j] = w
                if factor is not None and renormalize:
                    weights[b, h, i] /= weights[b, h, i].sum()
                out[i, b, cols] = (weights[b, h, i, :, None] * keys[:, b, cols].double()).sum(0)
    return weights, out


def assert_attention(attention, x, expected_weights, expected_out, rows, key_padding_mask=None, attn_mask=None,
                     atol: float = 1e-5, keys=None):
    """The module's head weights and output (explicit path) and its output without weights (fast or banded path)
    equal the hand computation at the real query positions ``rows`` ({batch: [query index, ...]}).

    ``keys`` (S, B, C): the keys and values of cross attention (default: self-attention over ``x``)."""
    keys = x if keys is None else keys
    fast, _ = attention(x, keys, keys, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=False)
    out, weights = attention(x, keys, keys, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_head_weights=True)
    weights = weights.transpose(0, 1)  # (B, H, T, S)
    for b, queries in rows.items():
        for i in queries:
            torch.testing.assert_close(weights[b, :, i].double(), expected_weights[b, :, i], atol=atol, rtol=0,
                                       msg=lambda m: f"weights of batch {b}, query {i}: {m}")
            torch.testing.assert_close(out[i, b].double(), expected_out[i, b], atol=atol, rtol=0,
                                       msg=lambda m: f"output of batch {b}, query {i}: {m}")
            torch.testing.assert_close(fast[i, b].double(), expected_out[i, b], atol=atol, rtol=0,
                                       msg=lambda m: f"output without weights, batch {b}, query {i}: {m}")


# --- the equation tests' padded batch -----------------------------------------------------------------
#: two sentences of PADDED_LENGTH tokens; sentence 1 has PADDED_PAD padding tokens, on the left in the encoder
#: (sources) and on the right in the decoder (targets), as fairseq pads them
PADDED_LENGTH, PADDED_PAD = 7, 2


def padded_inputs(dim: int, attn_type: str, seed: int = 0):
    """(x of shape (T, 2, dim), key padding mask (2, T)) for the padded batch."""
    torch.manual_seed(seed)
    x = torch.randn(PADDED_LENGTH, 2, dim)
    padding = torch.zeros(2, PADDED_LENGTH, dtype=torch.bool)
    if attn_type == "encoder":
        padding[1, :PADDED_PAD] = True
    else:
        padding[1, PADDED_LENGTH - PADDED_PAD:] = True
    return x, padding


def padded_positions(b: int, attn_type: str):
    """{index in the padded row: position in the real sentence} of sentence ``b`` of the padded batch."""
    if b == 0:
        return {j: j for j in range(PADDED_LENGTH)}
    if attn_type == "encoder":
        return {j: j - PADDED_PAD for j in range(PADDED_PAD, PADDED_LENGTH)}
    return {j: j for j in range(PADDED_LENGTH - PADDED_PAD)}


def padded_rows(attn_type: str):
    """{sentence: its real query rows}: the rows whose weights the equation tests compare."""
    return {b: list(padded_positions(b, attn_type)) for b in (0, 1)}


def padded_support(attn_type: str, keep=lambda b, h, i, j: True):
    """support(b, h, i) for ``hand_attention``: the real keys query i sees (j <= i in the decoder), narrowed by
    ``keep(b, h, i, j)`` (a method's own mask); a padded query sees nothing."""
    def support(b, h, i):
        pos = padded_positions(b, attn_type)
        if i not in pos:
            return []
        return [j for j in pos if (attn_type == "encoder" or j <= i) and keep(b, h, i, j)]
    return support


#: a process that holds a save directory's training lock until a line arrives on its stdin
HOLD_LOCK = ("import sys\nfrom pathlib import Path\nfrom fairseq_localness.experiments.rundir import training_lock\n"
             "with training_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n    sys.stdin.readline()\n")


def hold_lock(save_dir: Path) -> subprocess.Popen:
    """A process that holds ``save_dir``'s training lock (fairseq_localness.experiments.rundir) until
    :func:`release_lock` (or a kill)."""
    holder = subprocess.Popen([str(BIN / "python"), "-c", HOLD_LOCK, str(save_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    return holder


def release_lock(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    holder.stdin.flush()
