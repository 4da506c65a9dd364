"""Measure DMAN at initialisation, as docs/dman.md section 2-3 reports it, and write a result file.

At the slow test's recipe (``test_dman_real.RECIPE``: 256-dim 3+3 layers, 4 heads, FFN 512, seed 1), one batch
of the Multi30k validation set (the first ``--max-tokens`` of fairseq's batching) goes through freshly built
models, post-norm and pre-norm:

- the first encoder layer's DMAN mask M (Eq. 12) over the real (non-padding) positions of every sentence: its
  range and mean; each row normalised to a distribution over keys, its entropy over the row's maximum entropy
  (log of its length) and its weight on ``|t - s| <= 1``, beside that of a uniform row;
- the gradient norm of every encoder layer's parameters after one backward pass of the training loss
  (label-smoothed cross-entropy summed over tokens, as fairseq trains; dropout on, its draw seeded), for DMAN and
  the Transformer.

Run: ``python tests/measure_dman_init.py --data runs/data/multi30k_de_en/data-bin --run-json
docs/results/dman/initial-mask.json``. Not collected by pytest (not a ``test_*.py`` file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from test_dman_real import RECIPE  # noqa: E402  (the slow test's recipe, one copy)

from fairseq_localness.provenance import command_line, machine_description, utc_now  # noqa: E402

REPO = HERE.parent


def build(data: Path, arch: str, norm: str):
    """(model, criterion, task) as fairseq-train builds them (the user dir imported by the parser), seed 1."""
    from fairseq import options, tasks

    flags = [str(data), "--user-dir", str(REPO / "fairseq_localness"), "--arch", arch, *RECIPE]
    if arch == "transformer_dman":
        flags += ["--man-norm", norm]
    else:
        flags += ["--encoder-normalize-before", "--decoder-normalize-before"] if norm == "pre" else []
    args = options.parse_args_and_arch(options.get_training_parser(), flags)
    torch.manual_seed(args.seed)
    task = tasks.setup_task(args)
    task.load_dataset("valid")
    model = task.build_model(args)
    criterion = task.build_criterion(args)
    return model, criterion, task


def first_batch(task, max_tokens: int):
    iterator = task.get_batch_iterator(dataset=task.dataset("valid"), max_tokens=max_tokens, seed=1)
    return next(iter(iterator.next_epoch_itr(shuffle=False)))


def mask_statistics(model, sample) -> dict:
    """Statistics of the first encoder layer's mask M over each sentence's real positions (every head)."""
    from fairseq_localness.attention.core import capture_locality

    model.eval()  # no dropout: the mask as the layer computes it
    with torch.no_grad(), capture_locality(model) as captured:
        model(**sample["net_input"])
    layers = captured.by_layer("dman_log_mask", "encoder")
    log_mask = layers[min(layers)]  # the first encoder layer, (B, H, T, S)
    tokens = sample["net_input"]["src_tokens"]
    real = tokens.ne(model.encoder.padding_idx)
    values, entropy_ratios, near, uniform_near = [], [], [], []
    for b in range(tokens.size(0)):
        keep = real[b].nonzero().squeeze(1)
        mask = log_mask[b][:, keep][:, :, keep].exp()  # (H, n, n)
        n = keep.numel()
        values.append(mask.flatten())
        rows = mask / mask.sum(-1, keepdim=True)
        if n > 1:
            entropy = -(rows * rows.clamp_min(1e-30).log()).sum(-1) / torch.log(torch.tensor(float(n)))
            entropy_ratios.append(entropy.flatten())
        offsets = (torch.arange(n).view(-1, 1) - torch.arange(n).view(1, -1)).abs()
        local = offsets.le(1).to(rows.dtype)
        near.append((rows * local).sum(-1).flatten())
        uniform_near.append((local.sum(-1) / n).expand(rows.size(0), n).flatten())
    values = torch.cat(values)
    return {"mask_min": values.min().item(), "mask_max": values.max().item(), "mask_mean": values.mean().item(),
            "row_entropy_over_max": torch.cat(entropy_ratios).mean().item(),
            "row_weight_within_1": torch.cat(near).mean().item(),
            "uniform_row_weight_within_1": torch.cat(uniform_near).mean().item(),
            "sentences": tokens.size(0)}


def encoder_gradient_norms(model, criterion, sample) -> list:
    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)  # the same dropout draw for every model built the same way
    loss, _size, _log = criterion(model, sample)
    loss.backward()
    return [torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in layer.parameters() if p.grad is not None])).item()
            for layer in model.encoder.layers]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="Multi30k data-bin (data-prep/prepare-multi30k.sh)")
    parser.add_argument("--max-tokens", type=int, default=2048, help="the batch: the recipe's 2,048 tokens")
    parser.add_argument("--run-json", type=Path, required=True, help="result file to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --run-json file")
    opts = parser.parse_args(argv)
    if opts.run_json.exists() and not opts.overwrite:
        parser.error(f"--run-json {opts.run_json} exists; give --overwrite to replace it")
    if not (opts.data / "dict.de.txt").is_file():
        parser.error(f"--data {opts.data}: no dict.de.txt (prepare it with data-prep/prepare-multi30k.sh)")
    torch.set_num_threads(1)
    started = utc_now()
    records = []
    for arch in ("transformer_dman", "transformer_localness"):
        for norm in ("post", "pre"):
            model, criterion, task = build(opts.data, arch, norm)
            sample = first_batch(task, opts.max_tokens)
            record = {"arch": arch, "norm": norm, "encoder_layer_grad_norms": encoder_gradient_norms(model, criterion, sample)}
            if arch == "transformer_dman":
                record.update(mask_statistics(model, sample))
            records.append(record)
            print(json.dumps(record), flush=True)
    run = {"date": started.date().isoformat(), "time": f"{started:%H:%M}-{utc_now():%H:%M} UTC",
           "machine": machine_description(0), "torch": torch.__version__,
           "command": command_line("python tests/measure_dman_init.py", argv if argv is not None else sys.argv[1:]),
           "source": "written by the command (--run-json)", "records": records}
    opts.run_json.parent.mkdir(parents=True, exist_ok=True)
    opts.run_json.write_text(json.dumps(run, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
