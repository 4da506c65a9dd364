"""CNNs before self-attention (Yu et al. 2018, as the "Cnns" row of Yang et al. 2019 Table 1)."""

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_localness.attention import AttentionSpec, LocalityAttention, LocalityConfigError
from fairseq_localness.methods.cnns import CNNs, CNNsOptions, ConvSubLayer
from localness_testing import assert_incremental_parity, assert_padding_invariance, build_model, train_and_generate


def spec(dim=8, heads=2):
    return AttentionSpec(embed_dim=dim, num_heads=heads, attn_type="encoder", layer=1, kdim=dim, max_positions=64)


def test_conv_sublayer_by_hand():
    """c + ReLU(Conv_3(LayerNorm(c))) on two channels, three positions, weights chosen by hand."""
    layer = ConvSubLayer(2, kernel_size=3, separable=False)
    with torch.no_grad():
        layer.conv.weight.zero_()
        layer.conv.weight[0, 0] = torch.tensor([1.0, 2.0, 3.0])  # out 0 <- in 0 at offsets -1, 0, +1
        layer.conv.weight[1, 1] = torch.tensor([0.0, -1.0, 0.0])  # out 1 <- -in 1 at offset 0
        layer.conv.bias.copy_(torch.tensor([0.5, 0.0]))
    # LayerNorm over two features maps (a, b) with a < b to (-1, 1) (up to eps)
    c = torch.tensor([[[0.0, 5.0, 2.0], [1.0, 3.0, 4.0]]])  # (B=1, C=2, T=3): columns (0,1), (5,3), (2,4)
    out = layer(c, None)
    # normed channel 0 is (-1, 1, -1), channel 1 (1, -1, 1); channel 0: 0.5 + 1*n[t-1] + 2*n[t] + 3*n[t+1], zero borders
    conv0 = [0.5 + 2 * -1 + 3 * 1, 0.5 + 1 * -1 + 2 * 1 + 3 * -1, 0.5 + 1 * 1 + 2 * -1]
    conv1 = [-1.0, 1.0, -1.0]
    expected = c + torch.tensor([[[max(v, 0.0) for v in conv0], [max(v, 0.0) for v in conv1]]])
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("num_convs,kernel,separable", [(1, 3, False), (2, 3, False), (2, 5, True)])
def test_receptive_field_is_n_times_half_kernel(num_convs, kernel, separable):
    """Output i depends on input j exactly when |i - j| <= N * (k // 2)."""
    torch.manual_seed(0)
    method = CNNs(CNNsOptions(num_convs=num_convs, kernel_size=kernel, separable=separable), spec())
    length, radius = 12, num_convs * (kernel // 2)
    x = torch.randn(length, 1, 8, requires_grad=True)
    out = method.transform_input(x, None)
    for i in range(length):
        (grad,) = torch.autograd.grad(out[i].sum(), x, retain_graph=True)
        reached = grad.abs().sum(dim=(1, 2)) > 0
        assert reached.tolist() == [abs(i - j) <= radius for j in range(length)], i


def test_padding_is_zeroed_before_each_convolution():
    """A left-padded sentence gets the same outputs as the sentence alone; padding rows are left as they were."""
    torch.manual_seed(0)
    method = CNNs(CNNsOptions(num_convs=2, kernel_size=3), spec())
    sentence = torch.randn(5, 1, 8)
    padded = torch.cat([torch.full((3, 1, 8), 7.0), sentence])
    mask = torch.tensor([[True] * 3 + [False] * 5])
    out = method.transform_input(padded, mask)
    torch.testing.assert_close(out[3:], method.transform_input(sentence, None))
    torch.testing.assert_close(out[:3], padded[:3])


def test_attention_reads_the_conv_output_and_the_residual_carries_it():
    """LocalityAttention(x) = Attn(c) + (c - x) with c the conv stack's output: the layer computes c + Attn(c)."""
    torch.manual_seed(0)
    attention = LocalityAttention(8, 2, spec(), [(CNNs, CNNsOptions(num_convs=2, kernel_size=3))], self_attention=True).eval()
    plain = MultiheadAttention(8, 2, self_attention=True).eval()
    plain.load_state_dict({k: v for k, v in attention.state_dict().items() if not k.startswith("locality.")})
    x = torch.randn(6, 2, 8)
    c = attention.locality[0].transform_input(x, None)
    out, _ = attention(x, x, x, need_weights=False)
    expected, _ = plain(c, c, c, need_weights=False)
    torch.testing.assert_close(out, expected + (c - x), atol=1e-5, rtol=0)


def test_parameters_added(tiny_data_bin):
    """Per layer N x (k C^2 + C conv, 2C LayerNorm); separable: k C + C^2 + C. TINY: C=32, lower 3 layers."""
    reference = sum(p.numel() for p in build_model("transformer_localness", tiny_data_bin)[0].parameters())
    full = sum(p.numel() for p in build_model("transformer_cnns", tiny_data_bin)[0].parameters()) - reference
    separable = sum(p.numel() for p in build_model("transformer_cnns", tiny_data_bin, {"cnns_separable": True})[0].parameters())
    assert full == 3 * 4 * (7 * 32 * 32 + 32 + 2 * 32)
    assert separable - reference == 3 * 4 * (7 * 32 + 32 * 32 + 32 + 2 * 32)


def test_model_padding_invariance_and_decoding(tiny_data_bin):
    model, task = build_model("transformer_cnns", tiny_data_bin, {"cnns_num_convs": 2, "cnns_kernel_size": 3})
    assert_padding_invariance(model, task)
    assert_incremental_parity(model, task)  # encoder-only: decoding through the cached encoder output


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"cnns_attention": "decoder"}, "cnns is not defined for decoder attention"),
        ({"cnns_kernel_size": 4}, "--cnns-kernel-size must be a positive odd number"),
        ({"cnns_num_convs": 0}, "--cnns-num-convs must be >= 1"),
    ],
)
def test_bad_flags(tiny_data_bin, overrides, message):
    with pytest.raises(LocalityConfigError, match=message):
        build_model("transformer_cnns", tiny_data_bin, overrides)


def test_train_and_generate(tiny_data_bin, tmp_path):
    train_and_generate(tiny_data_bin, tmp_path, "transformer_cnns", ["--cnns-num-convs", "2", "--cnns-kernel-size", "3"], updates=20)
