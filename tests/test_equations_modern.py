"""The recent position methods from their papers' equations: ALiBi, T5's relative biases, KERPLE, FIRE and RoPE.

For each method: the bias (RoPE: the rotation) of 3 positions and 2 heads written out by hand from the paper's
equation, in the encoder (bidirectional) and the decoder (causal); then the whole attention of an identity-projection
block on a padded batch against ``hand_attention`` (positions count real tokens). The method-specific rules follow:
ALiBi's slopes for any number of heads, T5's buckets, KERPLE's parameter ranges, FIRE's max(L, i), RoPE's
relative property (Eq. 16) and cached keys. Incremental decoding of one block with beam reorders is in
tests/test_equations_core.py, of whole models in tests/test_modern.py.
"""

import math

import pytest
import torch

from fairseq_localness.attention import AttentionContext, LocalityConfigError
from fairseq_localness.methods.alibi import Alibi, AlibiOptions, alibi_slopes
from fairseq_localness.methods.fire import Fire, FireOptions
from fairseq_localness.methods.kerple import Kerple, KerpleOptions
from fairseq_localness.methods.rope import RopeOptions, RotaryPositions, rotate
from fairseq_localness.methods.t5bias import T5BiasOptions, T5RelativeBias, t5_bucket
from localness_testing import (
    PADDED_LENGTH,
    assert_attention,
    causal_mask,
    hand_attention,
    identity_attention,
    padded_inputs,
    padded_positions,
)

DIM, HEADS = 4, 2
D = DIM // HEADS
ATTN_TYPES = ["encoder", "decoder"]


def three_positions(attn_type, heads=HEADS, dim=DIM):
    """The context of one unpadded sentence of 3 tokens (positions 0, 1, 2) seeing itself."""
    zeros = torch.zeros(1, heads, 3, dim // heads)
    return AttentionContext(
        q=zeros, k=zeros, v=zeros, query_input=torch.zeros(1, 3, dim), key_input=None, key_padding_mask=None,
        attn_mask=None, causal=attn_type == "decoder", attn_type=attn_type, layer=1, scaling=1.0,
    )


def assert_bias(method, attn_type, expected):
    """method's bias of 3 positions equals ``expected`` [head][i][j]; in the decoder only keys j <= i count."""
    bias = method.logit_bias(three_positions(attn_type))[0]
    expected = torch.tensor(expected, dtype=torch.float32)
    if attn_type == "decoder":
        seen = torch.ones(3, 3, dtype=torch.bool).tril()
        bias, expected = bias[:, seen], expected[:, seen]
    torch.testing.assert_close(bias, expected, atol=1e-6, rtol=0)


def hand_check_attention(method_cls, options, attn_type, extra, setup=None, seed=0):
    """The identity-projection block on the padded batch equals hand_attention with ``extra(b, h, i, j)`` added,
    where extra receives sentence positions (not indices of the padded rows)."""
    attention = identity_attention([(method_cls, options)], DIM, HEADS, attn_type)
    if setup is not None:
        setup(attention.locality[0])
    x, padding = padded_inputs(DIM, attn_type, seed)

    def support(b, h, i):
        pos = padded_positions(b, attn_type)
        return [j for j in pos if attn_type == "encoder" or j <= i] if i in pos else []

    def logit(b, h, i, j):
        pos = padded_positions(b, attn_type)
        return extra(b, h, pos[i], pos[j], x[i, b, h * D:(h + 1) * D], x[j, b, h * D:(h + 1) * D])

    weights, out = hand_attention(x, x, HEADS, support, extra=logit)
    rows = {b: list(padded_positions(b, attn_type)) for b in (0, 1)}
    mask = causal_mask(PADDED_LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows, key_padding_mask=padding, attn_mask=mask)
    return attention


# ------------------------------------------------------------------------------------------------------- ALiBi


def test_alibi_slopes_are_the_papers_geometric_sequence():
    # Section 3: 8 heads 1/2, 1/4, ..., 1/256; 16 heads start at 1/2^0.5
    assert alibi_slopes(8) == [2.0 ** -h for h in range(1, 9)]
    assert alibi_slopes(16)[:3] == [2 ** -0.5, 2 ** -1.0, 2 ** -1.5]
    assert alibi_slopes(2) == [2 ** -4, 2 ** -8]
    # not a power of two: H' = 4 slopes, then every other of 8 heads' (2^-1, 2^-3), in between the first ones
    assert alibi_slopes(6) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]
    assert alibi_slopes(12) == [2.0 ** -h for h in range(1, 9)] + [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5]
    assert alibi_slopes(3) == [2 ** -4, 2 ** -8, 2 ** -2]


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_alibi_bias_by_hand(attn_type):
    m1, m2 = 2 ** -4, 2 ** -8  # two heads
    method = Alibi(AlibiOptions(attention=attn_type), identity_attention([], DIM, HEADS).spec)
    if attn_type == "decoder":  # -m (i - j), j <= i
        expected = [[[0, 0, 0], [-m1, 0, 0], [-2 * m1, -m1, 0]], [[0, 0, 0], [-m2, 0, 0], [-2 * m2, -m2, 0]]]
    else:  # our reading: -m |i - j|
        expected = [[[0, -m1, -2 * m1], [-m1, 0, -m1], [-2 * m1, -m1, 0]],
                    [[0, -m2, -2 * m2], [-m2, 0, -m2], [-2 * m2, -m2, 0]]]
    assert_bias(method, attn_type, expected)
    assert not list(method.parameters())


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_alibi_attention_on_a_padded_batch(attn_type):
    slopes = [2 ** -4, 2 ** -8]
    distance = (lambda i, j: i - j) if attn_type == "decoder" else (lambda i, j: abs(i - j))
    hand_check_attention(Alibi, AlibiOptions(attention=attn_type), attn_type,
                         lambda b, h, i, j, q, k: -slopes[h] * distance(i, j))


# -------------------------------------------------------------------------------------------------------- T5


def test_t5_buckets_by_hand():
    """n = i - j; bidirectional: 16 buckets per side, exact below 8; causal: 32 buckets, exact below 16;
    log-spaced above up to max_distance 128, then the last bucket."""
    def bidirectional(rel):
        return t5_bucket(torch.tensor(rel), bidirectional=True).tolist()

    def causal(rel):
        return t5_bucket(torch.tensor(rel), bidirectional=False).tolist()

    assert bidirectional(list(range(-7, 8))) == [7, 6, 5, 4, 3, 2, 1, 0, 17, 18, 19, 20, 21, 22, 23]
    # 8 + floor(log(n / 8) / log(128 / 8) * 8): n = 8 -> 8, 16 -> 10, 32 -> 12, 64 -> 14, 127 -> 15, 128, 500 -> 15
    assert bidirectional([-8, -16, -32, -64, -127, -128, -500]) == [8, 10, 12, 14, 15, 15, 15]
    assert bidirectional([8, 16, 127, 500]) == [24, 26, 31, 31]
    assert causal([3, 0, -1, -15]) == [0, 0, 1, 15]  # keys after the query share bucket 0
    # 16 + floor(log(n / 16) / log(128 / 16) * 16): n = 16 -> 16, 20 -> 17, 64 -> 26, 128 -> 32, capped at 31
    assert causal([-16, -20, -64, -128, -1000]) == [16, 17, 26, 31, 31]
    for n in range(8, 300):  # the log-spaced buckets, against the formula in double precision
        expected = min(8 + math.floor(math.log(n / 8) / math.log(16) * 8 + 1e-9), 15)
        assert bidirectional([-n]) == [expected], n


@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (64, 256), (16, 64)])
@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_with_t5xs_eps_are_mesh_tensorflows_without_it(num_buckets, max_distance, bidirectional):
    """The eps inside the log (T5X) moves no offset into another bucket than Mesh TensorFlow's eps-free float32
    computation gives: n = -(j - i), halved buckets and |n| when bidirectional, n >= 0 when causal."""
    import numpy as np

    relative = np.arange(-5000, 5001)
    n = -relative
    expected = np.zeros_like(n)
    buckets = num_buckets
    if bidirectional:
        buckets //= 2
        expected += (n < 0) * buckets
        n = np.abs(n)
    else:
        n = np.maximum(n, 0)
    exact = buckets // 2
    with np.errstate(divide="ignore"):  # log(0) of the exact buckets, which np.where discards
        large = exact + (np.log(n.astype(np.float32) / np.float32(exact)) / np.float32(np.log(max_distance / exact))
                         * np.float32(buckets - exact)).astype(np.int64)
    expected += np.where(n < exact, n, np.minimum(large, buckets - 1))
    got = t5_bucket(torch.from_numpy(relative), bidirectional, num_buckets, max_distance).numpy()
    assert (got == expected).all(), relative[got != expected][:10]


def t5_table(method):
    with torch.no_grad():  # w[bucket, h] = bucket + 100 h: every entry tells its bucket and head
        method.table.weight.copy_(torch.arange(32.0)[:, None] + 100.0 * torch.arange(HEADS)[None, :])


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_t5_bias_by_hand(attn_type):
    method = T5RelativeBias(T5BiasOptions(attention=attn_type), identity_attention([], DIM, HEADS).spec)
    t5_table(method)
    if attn_type == "decoder":  # causal buckets of j - i = 0, -1, -2: 0, 1, 2
        head0 = [[0, 0, 0], [1, 0, 0], [2, 1, 0]]
    else:  # bidirectional: j - i = +1, +2 -> 17, 18
        head0 = [[0, 17, 18], [1, 0, 17], [2, 1, 0]]
    assert_bias(method, attn_type, [head0, [[w + 100 for w in row] for row in head0]])


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_t5_attention_on_a_padded_batch(attn_type):
    def bucket(i, j):  # written out, not t5_bucket: distances below 8 have one exact bucket each (Raffel et al.)
        assert abs(j - i) < 8, "the padded batch is short: every distance is an exact bucket"
        if attn_type == "encoder":  # 16 buckets per direction, keys to the right after the left ones
            return i - j if j <= i else 16 + (j - i)
        return max(i - j, 0)  # causal: the future is masked, bucket 0 stands for it

    hand_check_attention(T5RelativeBias, T5BiasOptions(attention=attn_type), attn_type,
                         lambda b, h, i, j, q, k: (bucket(i, j) + 100.0 * h) / 50.0,
                         setup=lambda m: (t5_table(m), m.table.weight.data.div_(50.0)))


# ---------------------------------------------------------------------------------------------------- KERPLE


def set_r(method, r1, r2):
    with torch.no_grad():
        method.r1.copy_(torch.tensor(r1))
        method.r2.copy_(torch.tensor(r2))


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
@pytest.mark.parametrize("kernel", ["log", "power"])
def test_kerple_bias_by_hand(attn_type, kernel):
    method = Kerple(KerpleOptions(attention=attn_type, kernel=kernel), identity_attention([], DIM, HEADS).spec).eval()
    if kernel == "log":  # -r1 log(1 + r2 |i - j|), r1 = (0.5, 2), r2 = (1, 0.3)
        set_r(method, [0.5, 2.0], [1.0, 0.3])
        one, two = [-0.5 * math.log(2.0), -2.0 * math.log(1.3)], [-0.5 * math.log(3.0), -2.0 * math.log(1.6)]
    else:  # -r1 |i - j|^r2, r1 = (0.5, 1.5), r2 = (1, 2)
        set_r(method, [0.5, 1.5], [1.0, 2.0])
        one, two = [-0.5, -1.5], [-1.0, -6.0]
    expected = [[[0, one[h], two[h]], [one[h], 0, one[h]], [two[h], one[h], 0]] for h in range(HEADS)]
    assert_bias(method, attn_type, expected)


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_kerple_attention_on_a_padded_batch(attn_type):
    r1, r2 = [0.7, 1.9], [0.4, 1.3]
    hand_check_attention(Kerple, KerpleOptions(attention=attn_type, kernel="power"), attn_type,
                         lambda b, h, i, j, q, k: -r1[h] * abs(i - j) ** r2[h],
                         setup=lambda m: (m.eval(), set_r(m, r1, r2)))


def test_kerple_keeps_r1_r2_in_range_as_the_released_code():
    spec = identity_attention([], DIM, HEADS).spec
    torch.manual_seed(0)
    log, power = Kerple(KerpleOptions(kernel="log"), spec), Kerple(KerpleOptions(kernel="power"), spec)
    # initialisation: log r1 ~ U(0, 2), r2 ~ U(0, 1); power r1 ~ U(0, 1), r2 ~ U(0, 2)
    assert 0 <= log.r1.min() and log.r1.max() <= 2 and 0 <= log.r2.min() and log.r2.max() <= 1
    assert 0 <= power.r1.min() and power.r1.max() <= 1 and 0 <= power.r2.min() and power.r2.max() <= 2
    # an optimiser step left r1 < 0 and r2 > 2: evaluation clamps the values it uses, training projects the parameters
    set_r(power, [-1.0, 0.5], [3.0, 0.001])
    ctx = three_positions("encoder")
    power.eval()
    torch.testing.assert_close(power.logit_bias(ctx)[0, :, 0, 2], torch.tensor([-0.01 * 2.0 ** 2, -0.5 * 2.0 ** 0.01]))
    assert power.r1.tolist() == [-1.0, 0.5]
    power.train()
    power.logit_bias(ctx).sum().backward()
    assert power.r1.tolist() == pytest.approx([0.01, 0.5]) and power.r2.tolist() == pytest.approx([2.0, 0.01])
    assert torch.isfinite(power.r1.grad).all() and torch.isfinite(power.r2.grad).all()  # 0^r2 at i = j
    set_r(log, [-1.0, 1.0], [-1.0, 5.0])
    log.train()
    log.logit_bias(ctx)
    assert log.r1.tolist() == pytest.approx([0.01, 1.0]) and log.r2.tolist() == pytest.approx([0.01, 5.0])  # no cap


# ------------------------------------------------------------------------------------------------------ FIRE


def fire_weights(method, c=0.5, l_multiplier=1.0):
    """f_theta with 2 hidden units: h = relu(W1 x + b1), f = W2 h + b2."""
    fire = method.fire
    with torch.no_grad():
        fire.mlp[0].weight.copy_(torch.tensor([[1.0], [-2.0]]))
        fire.mlp[0].bias.copy_(torch.tensor([0.0, 1.0]))
        fire.mlp[2].weight.copy_(torch.tensor([[1.0, 0.5], [-1.0, 2.0]]))
        fire.mlp[2].bias.copy_(torch.tensor([0.1, -0.2]))
        fire.c.fill_(c)
        fire.l_multiplier.fill_(l_multiplier)


def fire_by_hand(h, distance, i, c=0.5, big_l=1.0):
    """f_theta(psi(d) / psi(max(L, i))), psi(x) = log(c x + 1), with the listing's eps = 1e-6."""
    x = math.log(c * distance + 1) / (math.log(c * max(big_l, i) + 1) + 1e-6)
    hidden = [max(0.0, 1.0 * x + 0.0), max(0.0, -2.0 * x + 1.0)]
    return [hidden[0] + 0.5 * hidden[1] + 0.1, -hidden[0] + 2.0 * hidden[1] - 0.2][h]


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_fire_bias_by_hand(attn_type):
    """L = |L_multiplier * init_L| = 1: query 2 is normalised by psi(2), queries 0 and 1 by psi(L) = psi(1)."""
    options = FireOptions(attention=attn_type, mlp_width=2, init_l=1.0)
    method = Fire(options, identity_attention([], DIM, HEADS).spec)
    fire_weights(method, l_multiplier=-1.0)  # L = |-1 * 1|
    distance = (lambda i, j: i - j) if attn_type == "decoder" else (lambda i, j: abs(i - j))
    expected = [[[fire_by_hand(h, max(distance(i, j), 0), i) for j in range(3)] for i in range(3)] for h in range(HEADS)]
    assert_bias(method, attn_type, expected)


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_fire_attention_on_a_padded_batch(attn_type):
    options = FireOptions(attention=attn_type, mlp_width=2, init_l=2.0)  # L = 2: queries beyond 2 use psi(i)
    distance = (lambda i, j: i - j) if attn_type == "decoder" else (lambda i, j: abs(i - j))
    hand_check_attention(Fire, options, attn_type,
                         lambda b, h, i, j, q, k: fire_by_hand(h, distance(i, j), i, big_l=2.0),
                         setup=fire_weights)


def test_fire_defaults_are_the_papers_listing():
    method = Fire(FireOptions(), identity_attention([], 8, 4).spec)
    fire = method.fire
    assert [fire.mlp[0].in_features, fire.mlp[0].out_features, fire.mlp[2].out_features] == [1, 32, 4]
    assert isinstance(fire.mlp[1], torch.nn.ReLU)
    assert fire.c.item() == pytest.approx(0.1) and fire.threshold().item() == 512.0
    assert sum(p.numel() for p in method.parameters()) == 32 + 32 + 32 * 4 + 4 + 2  # f_theta, c, L_multiplier


# ------------------------------------------------------------------------------------------------------ RoPE


def rotation_by_hand(vector, m, base=10000.0):
    """R^d_{Theta,m} x of Eq. 15 written as 2x2 rotations of the pairs (x_1, x_2), (x_3, x_4), ..."""
    d = len(vector)
    out = []
    for k in range(d // 2):
        theta = base ** (-2 * k / d)
        a, b = float(vector[2 * k]), float(vector[2 * k + 1])
        out += [a * math.cos(m * theta) - b * math.sin(m * theta), a * math.sin(m * theta) + b * math.cos(m * theta)]
    return torch.tensor(out, dtype=torch.float64)


def test_rope_rotation_by_hand():
    """d = 4: theta = (1, 10000^-1/2 = 0.01); position 2 turns the first pair by 2 rad, the second by 0.02 rad."""
    x = torch.tensor([1.0, 0.0, 0.0, 1.0]).view(1, 1, 1, 4)
    rotated = rotate(x, torch.tensor([[2]]))[0, 0, 0].double()
    torch.testing.assert_close(rotated, torch.tensor([math.cos(2), math.sin(2), -math.sin(0.02), math.cos(0.02)],
                                                     dtype=torch.float64), atol=1e-6, rtol=0)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(1, 2, 3, 6, generator=gen)  # 2 heads, 3 positions, d = 6
    rotated = rotate(x, torch.tensor([[0, 1, 2]]))
    for h in range(2):
        for m in range(3):
            torch.testing.assert_close(rotated[0, h, m].double(), rotation_by_hand(x[0, h, m], m), atol=1e-6, rtol=0)
    torch.testing.assert_close(rotated[:, :, 0], x[:, :, 0])  # position 0 is the identity


def test_rope_scores_depend_on_the_relative_position_only():
    """Eq. 16: (R_m q)^T (R_n k) = q^T R_{n-m} k, so shifting both positions changes nothing."""
    gen = torch.Generator().manual_seed(4)
    q, k = torch.randn(1, 1, 1, 8, generator=gen), torch.randn(1, 1, 1, 8, generator=gen)
    score = (rotate(q, torch.tensor([[3]])) * rotate(k, torch.tensor([[7]]))).sum()
    relative = (q * rotate(k, torch.tensor([[4]]))).sum()
    shifted = (rotate(q, torch.tensor([[103]])) * rotate(k, torch.tensor([[107]]))).sum()
    torch.testing.assert_close(score, relative, atol=1e-5, rtol=0)
    torch.testing.assert_close(score, shifted, atol=1e-4, rtol=0)


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_rope_scores_by_hand(attn_type):
    """The logits of 3 positions and 2 heads are (R_i q_i) . (R_j k_j) / sqrt(d), values not rotated."""
    attention = identity_attention([(RotaryPositions, RopeOptions(attention=attn_type))], DIM, HEADS, attn_type)
    x = torch.randn(3, 1, DIM, generator=torch.Generator().manual_seed(5))
    mask = causal_mask(3) if attn_type == "decoder" else None
    _, weights = attention(x, x, x, attn_mask=mask, need_head_weights=True)
    for h in range(HEADS):
        cols = slice(h * D, (h + 1) * D)
        for i in range(3):
            keys = range(i + 1) if attn_type == "decoder" else range(3)
            logits = [float(rotation_by_hand(x[i, 0, cols], i) @ rotation_by_hand(x[j, 0, cols], j)) / math.sqrt(D)
                      for j in keys]
            expected = torch.tensor(logits, dtype=torch.float64).softmax(0)
            torch.testing.assert_close(weights[h, 0, i, : len(logits)].double(), expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("attn_type", ATTN_TYPES)
def test_rope_attention_on_a_padded_batch(attn_type):
    def logit(b, h, i, j, q, k):  # replaces q.k / sqrt(d) by the rotated product
        return float(rotation_by_hand(q, i) @ rotation_by_hand(k, j) - q.double() @ k.double()) / math.sqrt(D)

    hand_check_attention(RotaryPositions, RopeOptions(attention=attn_type), attn_type, logit)


def test_rope_caches_keys_rotated_by_their_own_positions():
    """Step by step, each key enters the cache rotated by its own position; a padding step (sentence 1 starts one
    step late) does not count, and the steps equal the full forward."""
    attention = identity_attention([(RotaryPositions, RopeOptions(attention="decoder"))], DIM, HEADS, "decoder")
    x = torch.randn(4, 2, DIM, generator=torch.Generator().manual_seed(6))
    padding = torch.zeros(2, 4, dtype=torch.bool)
    padding[1, 0] = True
    state: dict = {}
    with torch.no_grad():
        full, _ = attention(x, x, x, key_padding_mask=padding, attn_mask=causal_mask(4), need_weights=False)
        for t in range(4):
            step, _ = attention(x[t:t + 1], x[t:t + 1], x[t:t + 1], key_padding_mask=padding[:, t:t + 1],
                                incremental_state=state, need_weights=False)
            rows = [0, 1] if t > 0 else [0]
            torch.testing.assert_close(step[0, rows], full[t, rows], atol=1e-5, rtol=0)
    cached = attention._get_input_buffer(state)["prev_key"]  # (B, H, S, d)
    for b, first in ((0, 0), (1, 1)):
        for h in range(HEADS):
            for t in range(first, 4):
                torch.testing.assert_close(cached[b, h, t].double(),
                                           rotation_by_hand(x[t, b, h * D:(h + 1) * D], t - first), atol=1e-6, rtol=0)


def test_rope_needs_an_even_head_dimension():
    with pytest.raises(LocalityConfigError, match="odd head dimension 3"):
        identity_attention([(RotaryPositions, RopeOptions())], 6, 2, "encoder")


def test_transform_qk_methods_are_refused_in_cross_attention():
    with pytest.raises(LocalityConfigError, match="cross attention does not have"):
        identity_attention([(RotaryPositions, RopeOptions())], DIM, HEADS, "cross")


@pytest.mark.parametrize("options", [AlibiOptions, T5BiasOptions, KerpleOptions, FireOptions, RopeOptions])
def test_cross_attention_is_refused_with_the_reason(options):
    with pytest.raises(LocalityConfigError, match="not defined for cross attention|self-attention only"):
        options(attention="decoder,cross").validate("x")
