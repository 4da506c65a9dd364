"""The Fan et al. (2021) recipes (configs/benchmark/fan2021_*.yaml) keep the MAN models stable at their peak rates.

Each recipe's optimiser (Adam(0.9, 0.98), its weight decay), its inverse-sqrt schedule with its peak
learning rate (7e-3 / 1e-2 / 1.5e-2) and its model options (dropout, pre-norm as the authors' released
models) drive a MAN model of the recipe's architecture and depth (6 + 6 layers; hidden size 64 so that
the test is fast) on a tiny copy task. The schedule is fairseq's own, fast-forwarded: its warmup is
replayed in 4 updates, then it continues from the peak. The loss must stay finite and bounded; the
same run at 100 x the peak rate must blow up, which shows the check can fail.
"""

from __future__ import annotations

import math

import pytest
import torch

from fairseq_localness.experiments import launch, tables

RECIPES = [
    ("fan2021_iwslt14_de_en", "transformer_dman_iwslt_de_en"),
    ("fan2021_wmt14_en_de_base", "transformer_dman_wmt_en_de"),
    ("fan2021_wmt14_en_de_big", "transformer_dman_wmt_en_de_big"),
]
VOCAB, BATCH, LENGTH, WIDTH, UPDATES = 20, 32, 8, 64, 16


def train_losses(setting: str, arch: str, lr_scale: float = 1.0) -> list:
    from fairseq import optim
    from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.optim import lr_scheduler

    from fairseq_localness.modelbuild import build_translation_model, parse_model_args, synthetic_dictionary

    recipe = launch.benchmark_values(setting)
    optimizer, schedule = recipe["optimizer"], recipe["lr_scheduler"]
    peak = recipe["optimization"]["lr"][0] * lr_scale
    width = ["--encoder-embed-dim", str(WIDTH), "--decoder-embed-dim", str(WIDTH),
             "--encoder-ffn-embed-dim", str(2 * WIDTH), "--decoder-ffn-embed-dim", str(2 * WIDTH)]
    training = ["--optimizer", "adam", "--adam-betas", str(optimizer["adam_betas"]).replace(" ", ""),
                "--adam-eps", str(optimizer["adam_eps"]), "--weight-decay", str(optimizer["weight_decay"]),
                "--lr", str(peak), "--lr-scheduler", "inverse_sqrt",
                "--warmup-updates", str(schedule["warmup_updates"]), "--warmup-init-lr", str(schedule["warmup_init_lr"])]
    args = parse_model_args(arch, tables.setting_model_flags(setting) + width + training)
    assert args.encoder_normalize_before and args.decoder_normalize_before  # the recipe's pre-norm reached the model
    torch.manual_seed(0)
    dictionary = synthetic_dictionary(VOCAB - 4)
    _, model = build_translation_model(args, dictionary, dictionary)
    cfg = convert_namespace_to_omegaconf(args)
    adam = optim.build_optimizer(cfg.optimizer, list(model.parameters()))
    scheduler = lr_scheduler.build_lr_scheduler(cfg.lr_scheduler, adam)
    warmup = args.warmup_updates
    batches = torch.Generator().manual_seed(0)
    losses, rates = [], []
    model.train()
    for update in range(1, UPDATES + 1):
        source = torch.randint(dictionary.nspecial, len(dictionary), (BATCH, LENGTH), generator=batches)
        previous = torch.cat([torch.full((BATCH, 1), dictionary.eos()), source[:, :-1]], dim=1)
        logits = model(source, torch.full((BATCH,), LENGTH), previous)[0]
        lprobs = torch.log_softmax(logits.float(), dim=-1).view(-1, logits.size(-1))
        loss, _ = label_smoothed_nll_loss(lprobs, source.reshape(-1), 0.1)
        adam.zero_grad()
        loss.backward()
        adam.step()
        rates.append(scheduler.step_update(warmup * update // 4 if update <= 4 else warmup + update - 4))
        losses.append(loss.item() / source.numel())
    assert rates[3] == pytest.approx(peak, rel=1e-3)  # at the recipe's peak after 4 updates
    return losses


@pytest.mark.parametrize("setting,arch", RECIPES)
def test_man_models_stay_stable_at_the_recipes_peak_rate(setting, arch):
    losses = train_losses(setting, arch)
    uniform = math.log(VOCAB)
    assert all(math.isfinite(x) for x in losses), losses
    assert max(losses) < max(losses[0], uniform) + 1.0, losses
    assert losses[-1] < uniform + 0.5, losses


def test_the_check_catches_a_diverging_rate():
    losses = train_losses(*RECIPES[2], lr_scale=100.0)
    assert not all(math.isfinite(x) for x in losses) or max(losses) > 3 * math.log(VOCAB), losses
