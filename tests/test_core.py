"""The shared attention core: layer specs, registry, placement, the README's example method, checkpoint loading."""

import argparse
import dataclasses
import re

import numpy as np
import pytest
import torch

from fairseq_localness.attention import LOCALITY_METHODS, LocalityConfigError, LocalityPlan, parse_layer_spec
from fairseq_localness.compat import checkpoint_safe_globals
from localness_testing import REPO, assert_incremental_parity, assert_padding_invariance, build_model


@pytest.mark.parametrize(
    "spec,layers",
    [("1-3", {1, 2, 3}), ("1,3,5", {1, 3, 5}), ("2-3,6", {2, 3, 6}), ("all", {1, 2, 3, 4, 5, 6}), ("none", set()), ("", set())],
)
def test_layer_specs(spec, layers):
    assert parse_layer_spec(spec, 6) == layers


@pytest.mark.parametrize("spec,message", [("1-7", "out of range"), ("0", "numbered from 1"), ("3-1", "cannot parse"), ("a", "cannot parse")])
def test_bad_layer_specs(spec, message):
    with pytest.raises(LocalityConfigError, match=message):
        parse_layer_spec(spec, 6)


def plan_args(**kwargs):
    defaults = dict(encoder_layers=6, decoder_layers=6, no_cross_attention=False)
    return argparse.Namespace(**{**defaults, **kwargs})


def test_plan_places_methods_in_order():
    plan = LocalityPlan.from_args(plan_args(locality_methods="gaussian,relpos", gaussian_layers="1-3", relpos_layers="2"))
    assert [m.name for m, _ in plan.methods_for("encoder", 2)] == ["gaussian", "relpos"]
    assert [m.name for m, _ in plan.methods_for("encoder", 1)] == ["gaussian"]
    assert [m.name for m, _ in plan.methods_for("decoder", 2)] == ["relpos"]
    assert plan.methods_for("cross", 1) == []


def test_plan_errors():
    with pytest.raises(LocalityConfigError, match="names a method twice"):
        LocalityPlan.from_args(plan_args(locality_methods="gaussian,gaussian"))
    with pytest.raises(LocalityConfigError, match="has no cross attention"):
        LocalityPlan.from_args(plan_args(locality_methods="gaussian", gaussian_attention="cross", no_cross_attention=True))
    with pytest.raises(LocalityConfigError, match="not one of"):
        LocalityPlan.from_args(plan_args(locality_methods="gaussian", gaussian_window="wide"))
    with pytest.raises(LocalityConfigError, match="relpos-max-distance"):
        LocalityPlan.from_args(plan_args(locality_methods="relpos", relpos_max_distance="many"))


def test_readme_example_method_works(tiny_data_bin):
    """The README's 'Adding a method' example registers, trains a step and decodes incrementally."""
    readme = (REPO / "README.md").read_text()
    example = re.search(r"### Adding a method\n\n```python\n(.*?)```", readme, re.S).group(1)
    if "distance_penalty" not in LOCALITY_METHODS:
        exec(compile(example, "README.md", "exec"), {})
    model, task = build_model(
        "transformer_distance_penalty", tiny_data_bin, {"distance_penalty_attention": "encoder,decoder"}
    )
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


def test_checkpoint_classes_are_allow_listed():
    assert argparse.Namespace in checkpoint_safe_globals()
    path = REPO / "tests" / "_ns.pt"
    try:
        torch.save({"args": argparse.Namespace(arch="x"), "best": np.float64(1.5), "array": np.arange(3)}, path)
        loaded = torch.load(path)  # weights_only=True is torch's default
        assert loaded["args"].arch == "x" and loaded["best"] == 1.5 and loaded["array"].tolist() == [0, 1, 2]
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("max_tokens,max_sentences", [(None, 16), (100, None)])
def test_batching_keeps_every_sentence(max_tokens, max_sentences):
    """ve-fairseq drops a last batch that is not a multiple of 8; the plugin keeps it (43 = 16 + 16 + 8 + 3)."""
    from fairseq.data import data_utils

    indices = np.arange(43)
    batches = data_utils.batch_by_size(
        indices, num_tokens_fn=lambda i: 5, num_tokens_vec=np.full(43, 5), max_tokens=max_tokens,
        max_sentences=max_sentences, required_batch_size_multiple=8,
    )
    assert sorted(np.concatenate(batches).tolist()) == list(range(43))
    assert [len(b) for b in batches] == [16, 16, 8, 3]


def test_readme_documents_every_architecture_and_method_flag():
    import fairseq_localness  # noqa: F401
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY

    readme = (REPO / "README.md").read_text()
    ours = [
        a for a, m in ARCH_MODEL_NAME_REGISTRY.items()
        if m in ("transformer_localness", "transformer_man") and "distance_penalty" not in a  # the README's own example
    ]
    assert ours and [a for a in ours if f"`{a}`" not in readme] == []
    for name, method in LOCALITY_METHODS.items():
        if name == "distance_penalty":  # the README's own example, registered by another test
            continue
        # families may document shared flags once: --csan*-window (csan1d, csan2d), --diffwin-P-mode (enc, dec, cross)
        stems = {name.split("_")[0], name.rstrip("12d")}
        for fld in dataclasses.fields(method.Options):
            option = fld.name.replace("_", "-")
            spellings = {f"--{name.replace('_', '-')}-{option}"}
            spellings |= {f"--{stem}*-{option}" for stem in stems} | {f"--{stem}-P-{option}" for stem in stems}
            assert any(s in readme for s in spellings), f"README does not document --{name}-{option}"
