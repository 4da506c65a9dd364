"""Real-data slow suite: small models of every method family trained on Multi30k de-en (``pytest -m slow``).

Each family's model (3+3 layers, 64 dimensions, 4 heads: small enough for one CPU core) trains for
``UPDATES`` updates on the real Multi30k training set (data-prep/prepare-multi30k.sh, run once per session
into a temporary directory, or read from ``$LOCALNESS_MULTI30K_BIN``), then translates the 1,000-sentence
test2016 set through the project's evaluation (scripts/evaluate.sh) and must reach a BLEU floor. The floors
are measured runs minus a margin (see FLOORS). Also: a checkpoint saved and reloaded gives identical outputs,
and a training resumed from a mid-run checkpoint ends with exactly the parameters of an uninterrupted run
(which needs the optimizer's moments, the learning-rate schedule and the data position restored).

Tests marked ``ci`` as well form the fast subset that the default ``pytest`` run includes (see
docs/testing.md). Tests skip themselves, with the reason, when the corpus is not at ../shared/data.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, Sequence

import pytest
import torch

from fairseq_localness.experiments.doc_tables import slow_suite_floors
from localness_testing import BIN, REPO, USER_DIR, run

UPDATES = 300

#: the small model every family shares; method options keep their paper defaults (layers 1-3 fit 3 layers)
SMALL = [
    "--encoder-layers", "3", "--decoder-layers", "3", "--encoder-embed-dim", "64", "--decoder-embed-dim", "64",
    "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128", "--encoder-attention-heads", "4",
    "--decoder-attention-heads", "4", "--share-all-embeddings", "--dropout", "0.1",
]

#: one architecture per method family (the 2D CSAN covers the 1D one, its N = 1 case; Local_Hard the window
#: baselines) -> its BLEU floor on test2016 after UPDATES updates: the BLEU of a measured run with this file's
#: recipe minus a margin for run-to-run and platform differences, both from the result file that docs/testing.md's
#: table is generated from (docs/results/testing/slow-suite-bleu.json). A model that learned nothing scores below 1.
FLOORS: Dict[str, float] = slow_suite_floors()


@pytest.fixture(scope="session")
def multi30k_bin(multi30k_prepared) -> Path:
    """Binarised Multi30k de-en with joint BPE (conftest's ``multi30k_prepared``: prepared once per session)."""
    return multi30k_prepared / "data-bin"


def train(data_bin: Path, save_dir: Path, arch: str, updates: int = UPDATES, extra: Sequence[str] = ()) -> str:
    """fairseq-train the small model; returns the log."""
    cmd = [
        str(BIN / "fairseq-train"), str(data_bin), "--user-dir", USER_DIR, "--arch", arch, *SMALL,
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.002", "--lr-scheduler", "inverse_sqrt",
        "--warmup-updates", "100", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--max-tokens", "4096", "--max-update", str(updates), "--save-dir", str(save_dir), "--seed", "1",
        "--disable-validation", "--no-epoch-checkpoints", "--no-progress-bar", "--log-interval", "50",
        "--num-workers", "0", *extra,
    ]
    return run(cmd).stdout


def evaluate(save_dir: Path, data_bin: Path, out: Path, checkpoint: str = "checkpoint_last.pt",
             extra: Sequence[str] = ()) -> Dict:
    """The project's evaluation (prep-info.json defaults: lowercased tokenised BLEU against tok/test.en)."""
    run(["bash", str(REPO / "scripts" / "evaluate.sh"), str(save_dir), str(data_bin), "--checkpoint", checkpoint,
         "--beam", "4", "--cpu", "--batch-size", "128", "--no-sacrebleu", "--bootstrap-samples", "0", "--out", str(out),
         *extra])
    return json.loads((out / "scores.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("arch", list(FLOORS))
def test_family_learns_multi30k(multi30k_bin, tmp_path, arch):
    train(multi30k_bin, tmp_path / "ckpt", arch)
    scores = evaluate(tmp_path / "ckpt", multi30k_bin, tmp_path / "eval")
    bleu = scores["tokenized_bleu"]["score"]
    print(f"{arch}: BLEU {bleu:.2f} after {UPDATES} updates (floor {FLOORS[arch]})")
    assert scores["sentences"] == 1000
    assert bleu >= FLOORS[arch], f"{arch}: BLEU {bleu:.2f} below the floor {FLOORS[arch]}"


def parameters(checkpoint: Path) -> Dict[str, torch.Tensor]:
    return torch.load(checkpoint, map_location="cpu", weights_only=False)["model"]


@pytest.mark.slow
@pytest.mark.ci
def test_resume_restores_optimizer_and_scheduler(multi30k_bin, tmp_path):
    """40 updates in one run == 20 updates, stop, resume to 40: identical parameters.

    Adam's moments, the inverse-sqrt schedule (still warming up at update 20) and the position in the
    epoch must come back from the checkpoint for that; a resume with --reset-optimizer
    --reset-lr-scheduler (the control) ends elsewhere.
    """
    arch, small_batches = "transformer_gaussian_local", ["--max-tokens", "1024"]
    straight, interrupted, reset = tmp_path / "straight", tmp_path / "interrupted", tmp_path / "reset"
    train(multi30k_bin, straight, arch, updates=40, extra=small_batches)
    train(multi30k_bin, interrupted, arch, updates=20, extra=small_batches)
    shutil.copytree(interrupted, reset)
    log = train(multi30k_bin, interrupted, arch, updates=40, extra=small_batches)
    assert "Loaded checkpoint" in log and "(epoch 1 @ 20 updates)" in log, log[-3000:]
    train(multi30k_bin, reset, arch, updates=20, extra=small_batches + ["--reset-optimizer", "--reset-lr-scheduler"])
    final = parameters(straight / "checkpoint_last.pt")
    resumed = parameters(interrupted / "checkpoint_last.pt")
    assert final.keys() == resumed.keys()
    assert any(".locality." in name for name in final)  # the method's own parameters are saved and resumed too
    for name in final:
        torch.testing.assert_close(resumed[name], final[name], atol=1e-6, rtol=0, msg=lambda m: f"{name}: {m}")
    restarted = parameters(reset / "checkpoint_last.pt")
    assert max((restarted[n] - final[n]).abs().max().item() for n in final) > 1e-3


def load_and_translate(checkpoint: Path, data_bin: Path, seed: int, sentences: int = 64):
    """Load a checkpoint as fairseq-generate does (after seeding the RNG with ``seed``); return the decoder's
    output scores on the first test sentences and their beam-4 translations."""
    import fairseq_localness  # noqa: F401  (registers the architectures)
    from fairseq import checkpoint_utils
    from fairseq.dataclass.configs import GenerationConfig

    torch.manual_seed(seed)  # a parameter missing from the checkpoint would be initialised differently
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)], arg_overrides={"data": str(data_bin)})
    model = models[0].eval()
    task.load_dataset("test")
    dataset = task.dataset("test")
    batch = dataset.collater([dataset[i] for i in range(sentences)])
    generator = task.build_generator(models, GenerationConfig(beam=4))
    with torch.no_grad():
        scores = model(**batch["net_input"])[0]
        hypotheses = task.inference_step(generator, models, batch)
    return scores, [h[0]["tokens"].tolist() for h in hypotheses]


@pytest.mark.slow
@pytest.mark.ci
def test_save_reload_round_trip(multi30k_bin, tmp_path):
    """A trained model, loaded and saved again from its own state_dict, gives identical outputs and translations."""
    save_dir = tmp_path / "ckpt"
    train(multi30k_bin, save_dir, "transformer_hybrid_local", updates=20, extra=["--max-tokens", "1024"])
    import fairseq_localness  # noqa: F401  (registers the architectures)
    from fairseq import checkpoint_utils

    checkpoint = save_dir / "checkpoint_last.pt"
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)], arg_overrides={"data": str(multi30k_bin)})
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)  # as fairseq-train wrote it
    assert any(".locality." in name for name in state["model"])  # the hybrid gates are in the checkpoint
    state["model"] = models[0].state_dict()  # save what was loaded
    checkpoint_utils.torch_persistent_save(state, str(save_dir / "resaved.pt"))
    scores, translations = load_and_translate(checkpoint, multi30k_bin, seed=1)
    scores_again, translations_again = load_and_translate(save_dir / "resaved.pt", multi30k_bin, seed=7)
    assert torch.equal(scores, scores_again)
    assert translations == translations_again and any(len(t) > 2 for t in translations)
