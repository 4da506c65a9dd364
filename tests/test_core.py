"""The shared attention core: layer specs, registry, placement, checkpoint loading (the docs' example method: test_docs.py)."""

import argparse

import numpy as np
import pytest
import torch

from fairseq_localness.attention import LocalityConfigError, LocalityPlan, parse_layer_spec
from fairseq_localness.compat import checkpoint_safe_globals


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


def test_checkpoint_classes_are_allow_listed(tmp_path):
    assert argparse.Namespace in checkpoint_safe_globals()
    path = tmp_path / "ns.pt"  # tests write only into temporary directories
    torch.save({"args": argparse.Namespace(arch="x"), "best": np.float64(1.5), "array": np.arange(3)}, path)
    loaded = torch.load(path)  # weights_only=True is torch's default
    assert loaded["args"].arch == "x" and loaded["best"] == 1.5 and loaded["array"].tolist() == [0, 1, 2]


def test_fairseq_does_not_log_the_imported_plugin_as_imported_again(caplog):
    """Code that imports the package and then passes --user-dir (compare, analyses) got fairseq's INFO line
    "--user-dir=... has already been imported"; the package now tells fairseq it is imported."""
    import logging

    from fairseq import utils

    from fairseq_localness.cli import user_dir

    with caplog.at_level(logging.INFO, logger="fairseq.utils"):
        utils.import_user_module(argparse.Namespace(user_dir=user_dir()))
    assert "already been imported" not in caplog.text
    assert user_dir() in utils.import_user_module.memo


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
