"""Differentiable Window (Nguyen et al. 2020) from its equations, on hand-made inputs with a non-trivial window.

    phi_l = softmax(q W_L^Q (K W_L^K)^T / sqrt(d)),  phi_r likewise                           (Eq. 7-8)
    m_j = sum_{l, r} phi_l(l) phi_r(r) [1(l <= j <= r) + 1(r <= j <= l)]                        (Eq. 9 as an expectation)
    segments of b tokens: the same over segments, phi^seg(s) = sum of phi over segment s        (Eq. 10-11)
    MW: A = softmax(Q K^T / sqrt(d)) * M, optionally divided by its row sum                    (Eq. 12-13)
    AW: A = softmax(Q K^T / sqrt(d) + s_loc * M / sqrt(d)),  s_loc = Q W_loc^Q (K W_loc^K)^T    (Eq. 14-17)

Pointers land on real keys only, and in decoder self-attention on keys j <= i. Every sum below runs over
explicit index lists (no cumulative sums, no L matrix), so the implementation's cumsum form is checked
against the definition.
"""

import math

import pytest
import torch

from fairseq_localness.methods.diffwin import (
    DiffWinCross,
    DiffWinCrossOptions,
    DiffWinDecoder,
    DiffWinDecoderOptions,
    DiffWinEncoder,
    DiffWinEncoderOptions,
)
from localness_testing import assert_attention, causal_mask, hand_attention, identity_attention

DIM, HEADS, D = 8, 2, 4
TGT, SRC, PAD = 6, 7, 2  # batch row 1: PAD padding tokens (left in sources, right in targets)

PLACEMENTS = {
    "encoder": (DiffWinEncoder, DiffWinEncoderOptions),
    "decoder": (DiffWinDecoder, DiffWinDecoderOptions),
    "cross": (DiffWinCross, DiffWinCrossOptions),
}


def key_positions(b: int, attn_type: str, length: int):
    """{buffer index: sentence position} of the real keys of row b."""
    if b == 0:
        return {j: j for j in range(length)}
    if attn_type == "decoder":
        return {j: j for j in range(length - PAD)}
    return {j: j - PAD for j in range(PAD, length)}


def block(weight: torch.Tensor, index: int, h: int) -> torch.Tensor:
    """Rows of head h in the index-th C x C block (W_L, W_R, W_loc) of a stacked projection."""
    return weight[index * DIM + h * D: index * DIM + (h + 1) * D].double()


def pointer(method, block_index, h, query, keys, allowed):
    """phi over the allowed keys (Eq. 7-8): {j: probability}."""
    q = block(method.query_proj.weight, block_index, h) @ query.double()
    scores = {j: float(q @ (block(method.key_proj.weight, block_index, h) @ keys[j].double())) / math.sqrt(D) for j in allowed}
    top = max(scores.values())
    total = sum(math.exp(s - top) for s in scores.values())
    return {j: math.exp(s - top) / total for j, s in scores.items()}


def window_value(phi_l, phi_r, unit):
    """m for unit u: sum over left/right boundary units of phi_l phi_r [l <= u <= r or r <= u <= l] (Eq. 9)."""
    return sum(pl * pr * ((l <= unit <= r) + (r <= unit <= l)) for l, pl in phi_l.items() for r, pr in phi_r.items())


def pooled(phi, segment_of):
    out = {}
    for j, p in phi.items():
        out[segment_of[j]] = out.get(segment_of[j], 0.0) + p
    return out


def hand_window(method, queries, keys, b, h, i, attn_type, segment_size):
    """M_ij for every real key j of row b (visible to query i), from the definition."""
    positions = key_positions(b, attn_type, keys.size(0))
    allowed = [j for j in positions if attn_type != "decoder" or j <= i]
    phi_l = pointer(method, 0, h, queries[i, b], keys[:, b], allowed)
    phi_r = pointer(method, 1, h, queries[i, b], keys[:, b], allowed)
    if segment_size is None:
        return {j: window_value(phi_l, phi_r, j) for j in allowed}
    segment_of = {j: positions[j] // segment_size for j in positions}  # segments count from the first real token
    seg_l, seg_r = pooled(phi_l, segment_of), pooled(phi_r, segment_of)
    return {j: window_value(seg_l, seg_r, segment_of[j]) for j in allowed}


def make(attn_type, seed=0, **options):
    cls, options_cls = PLACEMENTS[attn_type]
    torch.manual_seed(seed)
    attention = identity_attention([(cls, options_cls(**options))], DIM, HEADS, attn_type)
    method = attention.locality[0]
    with torch.no_grad():  # larger pointer scores than the initialisation: sharper, clearly non-uniform windows
        method.query_proj.weight.mul_(3.0)
    torch.manual_seed(seed + 1)
    length = TGT if attn_type != "encoder" else SRC
    x = torch.randn(length, 2, DIM)
    keys = torch.randn(SRC, 2, DIM) if attn_type == "cross" else x
    padding = torch.zeros(2, keys.size(0), dtype=torch.bool)
    if attn_type == "decoder":
        padding[1, keys.size(0) - PAD:] = True
    else:
        padding[1, :PAD] = True
    return attention, method, x, keys, padding


def query_rows(attn_type, length):
    if attn_type == "encoder":
        return {0: list(range(length)), 1: list(range(PAD, length))}
    if attn_type == "decoder":
        return {0: list(range(length)), 1: list(range(length - PAD))}
    return {0: list(range(length)), 1: list(range(length))}  # cross: every decoder query is real


CASES = [  # (placement, mode, masking, renormalise)
    ("encoder", "mul", "token", False),
    ("encoder", "mul", "token", True),
    ("encoder", "mul", "segment", False),
    ("encoder", "add", "token", False),
    ("encoder", "add", "segment", False),
    ("decoder", "mul", "token", False),
    ("decoder", "mul", "token", True),
    ("decoder", "add", "token", False),
    ("cross", "add", "segment", False),
    ("cross", "mul", "segment", True),
    ("cross", "add", "token", False),
]


@pytest.mark.parametrize("attn_type,mode,masking,renormalize", CASES)
def test_window_attention_from_the_definition(attn_type, mode, masking, renormalize):
    segment_size = 3 if masking == "segment" else None
    attention, method, x, keys, padding = make(attn_type, mode=mode, masking=masking, renormalize=renormalize,
                                               segment_size=segment_size or 5)
    windows = {}
    rows = query_rows(attn_type, x.size(0))
    for b, queries in rows.items():
        for h in range(HEADS):
            for i in queries:
                windows[b, h, i] = hand_window(method, x, keys, b, h, i, attn_type, segment_size)
    # the window is far from all-ones (where MW is plain attention): M = M^2 would not pass
    values = torch.tensor([m for w in windows.values() for m in w.values()])
    assert values.min() < 0.5 and (values - values**2).abs().max() > 0.1

    def support(b, h, i):
        return list(windows.get((b, h, i), {}))

    if mode == "mul":
        weights, out = hand_attention(x, keys, HEADS, support, factor=lambda b, h, i, j: windows[b, h, i][j],
                                      renormalize=renormalize)
    else:
        def local(b, h, i, j):  # s_loc * M / sqrt(d) (Eq. 17)
            q = block(method.query_proj.weight, 2, h) @ x[i, b].double()
            return float(q @ (block(method.key_proj.weight, 2, h) @ keys[j, b].double())) / math.sqrt(D) * windows[b, h, i][j]

        weights, out = hand_attention(x, keys, HEADS, support, extra=local)
    mask = causal_mask(x.size(0)) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows, key_padding_mask=padding, attn_mask=mask, keys=keys, atol=2e-5)


def test_the_hand_segment_window_is_constant_per_segment_counted_from_the_first_real_token():
    """The reference that test_window_attention_from_the_definition compares the module with: segments of 3 in a
    left-padded row, buffer keys {2,3,4} and {5,6} (positions 0-2, 3-4), share one value. This checks the reference;
    the module's own segment mask is checked in tests/test_diffwin.py (test_segment_mask_is_constant_within_segments)."""
    attention, method, x, keys, padding = make("encoder", masking="segment", segment_size=3, mode="mul")
    window = hand_window(method, x, keys, 1, 0, 4, "encoder", 3)
    assert window[2] == pytest.approx(window[3]) == pytest.approx(window[4])
    assert window[5] == pytest.approx(window[6])
    assert abs(window[4] - window[5]) > 1e-3
