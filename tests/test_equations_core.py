"""The shared attention core by hand: padding-aware positions, visible lengths, and incremental decoding of
one attention block (keys cached step by step, beam reordering) equal to the full forward, per method.

The methods' equations read sentence positions (j - i, the length I): fairseq left-pads sources and
right-pads targets, so positions count real tokens from each sentence's first one.
"""

import pytest
import torch

from fairseq_localness.attention import AttentionContext
from fairseq_localness.methods.alibi import Alibi, AlibiOptions
from fairseq_localness.methods.baselines import LocalHard, LocalHardOptions, Neighbor, NeighborOptions
from fairseq_localness.methods.csan import Csan1d, Csan1dOptions, Csan2d, Csan2dOptions
from fairseq_localness.methods.diffwin import (
    DiffWinCross,
    DiffWinCrossOptions,
    DiffWinDecoder,
    DiffWinDecoderOptions,
)
from fairseq_localness.methods.fire import Fire, FireOptions
from fairseq_localness.methods.gaussian import GaussianLocalness, GaussianOptions
from fairseq_localness.methods.hybrid import HybridLocalGlobal, HybridOptions
from fairseq_localness.methods.kerple import Kerple, KerpleOptions
from fairseq_localness.methods.mask_attention import DMANOptions, DynamicMask, SMANOptions, StaticMask
from fairseq_localness.methods.relative_position import RelativePositionOptions, RelativePositions
from fairseq_localness.methods.rope import RopeOptions, RotaryPositions
from fairseq_localness.methods.t5bias import T5BiasOptions, T5RelativeBias
from localness_testing import causal_mask, identity_attention


def context(padding, tgt_len=None, attn_type="encoder", query_offset=None):
    batch, src_len = padding.shape
    tgt_len = tgt_len or src_len
    zeros = torch.zeros(batch, 1, src_len, 2)
    return AttentionContext(
        q=torch.zeros(batch, 1, tgt_len, 2), k=zeros, v=zeros, query_input=torch.zeros(batch, tgt_len, 2),
        key_input=None, key_padding_mask=padding, attn_mask=None, causal=attn_type == "decoder", attn_type=attn_type,
        layer=1, scaling=1.0, query_offset=query_offset,
    )


def test_positions_count_real_tokens_from_the_first_one():
    padding = torch.tensor([[True, True, False, False, False], [False, False, False, True, True]])  # left, right
    ctx = context(padding)
    assert ctx.key_valid.tolist() == [[False, False, True, True, True], [True, True, True, False, False]]
    assert ctx.key_lengths.tolist() == [3, 3]
    assert ctx.key_positions[0, 2:].tolist() == [0, 1, 2] and ctx.key_positions[1, :3].tolist() == [0, 1, 2]
    assert ctx.query_positions[0, 2:].tolist() == [0, 1, 2]
    assert ctx.visible_lengths.tolist() == [[3.0] * 5, [3.0] * 5]  # I: the sentence length
    assert ctx.relative_positions[0, 3, 2:].tolist() == [-1, 0, 1]  # j - i
    decoder = context(torch.tensor([[False, False, False, True]]), attn_type="decoder")
    assert decoder.visible_lengths[0, :3].tolist() == [1.0, 2.0, 3.0]  # the prefix length i + 1
    last = context(torch.zeros(1, 4, dtype=torch.bool), tgt_len=1, attn_type="decoder")
    assert last.query_positions.tolist() == [[3]] and last.visible_lengths.tolist() == [[4.0]]  # one step, 4 keys


def test_cross_attention_query_positions_follow_the_decoding_step():
    ctx = context(torch.zeros(2, 5, dtype=torch.bool), tgt_len=1, attn_type="cross", query_offset=torch.tensor([[3], [3]]))
    assert ctx.query_positions.tolist() == [[3], [3]]
    assert ctx.visible_lengths.tolist() == [[5.0], [5.0]]
    full = context(torch.zeros(1, 5, dtype=torch.bool), tgt_len=3, attn_type="cross")
    assert full.query_positions.tolist() == [[0, 1, 2]]


DECODER_METHODS = [
    (GaussianLocalness, GaussianOptions(attention="decoder", window="query")),
    (GaussianLocalness, GaussianOptions(attention="decoder", window="layer")),
    (RelativePositions, RelativePositionOptions(attention="decoder", max_distance=2)),
    (Csan1d, Csan1dOptions(attention="decoder", window=3, implementation="dense")),
    (Csan1d, Csan1dOptions(attention="decoder", window=5, implementation="banded", block_size=2)),
    (Csan2d, Csan2dOptions(attention="decoder", window=3, decoder_window="centred", implementation="banded")),
    (HybridLocalGlobal, HybridOptions(attention="decoder", window=1)),
    (HybridLocalGlobal, HybridOptions(attention="decoder", window=1, combine="concat")),
    (DiffWinDecoder, DiffWinDecoderOptions(mode="mul", renormalize=True)),
    (DiffWinDecoder, DiffWinDecoderOptions(mode="add")),
    (DynamicMask, DMANOptions(attention="decoder")),
    (StaticMask, SMANOptions(attention="decoder")),
    (Neighbor, NeighborOptions(attention="decoder")),
    (LocalHard, LocalHardOptions(attention="decoder", window=2.0)),
    # the recent position methods (tests/test_equations_modern.py); RoPE's keys enter the cache rotated
    (Alibi, AlibiOptions(attention="decoder")),
    (T5RelativeBias, T5BiasOptions(attention="decoder", num_buckets=4, max_distance=3)),
    (Kerple, KerpleOptions(attention="decoder", kernel="log")),
    (Kerple, KerpleOptions(attention="decoder", kernel="power")),
    (Fire, FireOptions(attention="decoder", init_l=2.0)),
    (RotaryPositions, RopeOptions(attention="decoder")),
]


@pytest.mark.parametrize("method", DECODER_METHODS, ids=lambda m: f"{m[0].name}-{m[1]}")
def test_incremental_decoder_self_attention_equals_full_forward(method):
    torch.manual_seed(0)
    attention = identity_attention([method], dim=8, heads=4, attn_type="decoder")
    with torch.no_grad():  # generic projections: keys, values and queries differ
        for proj in (attention.q_proj, attention.k_proj, attention.v_proj):
            proj.weight.copy_(torch.randn(8, 8) / 3)
    x = torch.randn(6, 3, 8)
    state: dict = {}
    new_order = torch.tensor([2, 0, 1])
    with torch.no_grad():
        for t in range(6):
            if t == 3:  # a beam reorder: cached keys and the methods' caches move with their hypotheses
                attention.reorder_incremental_state(state, new_order)
                x = x[:, new_order]
            step, _ = attention(x[t:t + 1], x[t:t + 1], x[t:t + 1], incremental_state=state, need_weights=False)
            full, _ = attention(x[: t + 1], x[: t + 1], x[: t + 1], attn_mask=causal_mask(t + 1), need_weights=False)
            torch.testing.assert_close(step[0], full[t], atol=1e-5, rtol=0, msg=lambda m: f"step {t}: {m}")


CROSS_METHODS = [
    (GaussianLocalness, GaussianOptions(attention="cross", window="layer")),
    (LocalHard, LocalHardOptions(attention="cross", window=2.0)),
    (DiffWinCross, DiffWinCrossOptions(mode="mul", renormalize=True, segment_size=2)),
    (DiffWinCross, DiffWinCrossOptions()),
]


@pytest.mark.parametrize("method", CROSS_METHODS, ids=lambda m: f"{m[0].name}-{m[1]}")
def test_incremental_cross_attention_equals_full_forward(method):
    torch.manual_seed(1)
    attention = identity_attention([method], dim=8, heads=4, attn_type="cross")
    source, target = torch.randn(7, 2, 8), torch.randn(4, 2, 8)
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, :3] = True  # a left-padded source
    state: dict = {}
    with torch.no_grad():
        full, _ = attention(target, source, source, key_padding_mask=padding, need_weights=False)
        for t in range(4):
            step, _ = attention(target[t:t + 1], source, source, key_padding_mask=padding, incremental_state=state,
                                static_kv=True, need_weights=False)
            torch.testing.assert_close(step[0], full[t], atol=1e-5, rtol=0, msg=lambda m: f"step {t}: {m}")
