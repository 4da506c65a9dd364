"""Data-parallel training of every architecture family: two gloo ranks through PyTorch's DistributedDataParallel,
as fairseq wraps a model for ``--distributed-world-size 2`` (``find_unused_parameters`` off, fairseq's default).

Each rank takes half of a 4-sentence batch. After each of two updates the averaged gradients must equal the
gradients of one process on the whole batch, parameter by parameter. This catches what single-process tests
cannot: a parameter that gets no gradient (DDP then fails on the next update, so a family could not train on
several GPUs), a buffer or a random draw that differs between ranks, and a method whose output depends on which
sentences share its batch. The sentences differ in length, padded as fairseq pads them (sources on the left,
targets on the right), each rank's half to its own longest sentence: a method that reads padding, or positions
counted from the padded edge, sees other padding on a rank than in the whole batch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from fairseq_localness.gpu.families import architecture_families
from test_half_precision import small_model

SENTENCES, UPDATES = 4, 2
#: per sentence; rank 0 takes the first two (longest source 9, target 9), rank 1 the last two (8 and 7), the whole
#: batch pads to 9 and 9
SOURCE_LENGTHS, TARGET_LENGTHS = (9, 7, 5, 8), (9, 6, 7, 4)
PAD, EOS = 1, 2  # fairseq's Dictionary
#: relative to the largest gradient, after two updates. The models run in float64, where summing 2 vs 4 sentences
#: leaves < 1e-9; the Gaussian, KERPLE, FIRE, Local_Hard and neighbour biases are computed in float32 by design
#: (half-precision safety), which leaves up to ~3e-5. A rank-dependent draw or a batch-dependent method gives > 1e-2.
TOLERANCE = 1e-4


def batch(sentences: slice = slice(None)):
    """(source, source lengths, previous output tokens, target lengths) of ``sentences``, padded to their own
    longest source (on the left) and target (on the right), as fairseq's collater batches them."""
    gen = torch.Generator().manual_seed(7)
    sources = [torch.cat([torch.randint(4, 24, (n - 1,), generator=gen), torch.tensor([EOS])]) for n in SOURCE_LENGTHS]
    targets = [torch.cat([torch.tensor([EOS]), torch.randint(4, 24, (n - 1,), generator=gen)]) for n in TARGET_LENGTHS]
    sources, targets = sources[sentences], targets[sentences]
    longest_source, longest_target = max(len(s) for s in sources), max(len(s) for s in targets)
    src = torch.stack([torch.cat([torch.full((longest_source - len(s),), PAD), s]) for s in sources])
    prev = torch.stack([torch.cat([s, torch.full((longest_target - len(s),), PAD)]) for s in targets])
    return src, torch.tensor([len(s) for s in sources]), prev, torch.tensor([len(s) for s in targets])


def loss_of(model, src, lengths, prev, target_lengths):
    """The mean over sentences of a fixed token's log-probability summed over the real target positions (a real
    loss would do the same: padding positions carry no loss)."""
    logits = model(src, lengths, prev)[0]
    real = torch.arange(prev.size(1))[None, :] < target_lengths[:, None]
    return (logits.log_softmax(-1)[:, :, 5] * real).sum(-1).mean()


def worker(rank: int, world: int, store: str, archs, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", world_size=world, rank=rank)
    from torch.nn.parallel import DistributedDataParallel

    whole = batch()
    share = batch(slice(rank * SENTENCES // world, (rank + 1) * SENTENCES // world))
    report = {}
    for arch in archs:
        try:
            model = small_model(arch).double().train()  # dropout 0: train mode changes nothing but DDP's hooks
            reference = small_model(arch).double().train()
            wrapped = DistributedDataParallel(model, find_unused_parameters=False)
            sgd = torch.optim.SGD(wrapped.parameters(), lr=0.1)
            sgd_reference = torch.optim.SGD(reference.parameters(), lr=0.1)
            worst, missing = 0.0, []
            for _ in range(UPDATES):
                sgd.zero_grad()
                sgd_reference.zero_grad()
                loss_of(wrapped, *share).backward()
                loss_of(reference, *whole).backward()
                for (name, param), ref in zip(model.named_parameters(), reference.parameters()):
                    if ref.grad is None:
                        continue
                    if param.grad is None:
                        missing.append(name)
                        continue
                    scale = max(ref.grad.abs().max().item(), 1e-3)
                    worst = max(worst, (param.grad - ref.grad).abs().max().item() / scale)
                sgd.step()
                sgd_reference.step()
            report[arch] = {"relative_error": worst, "missing": sorted(set(missing))}
        except Exception as err:  # reported per family: one failure must not hide the others
            report[arch] = {"error": f"{type(err).__name__}: {err}"}
    if rank == 0:
        Path(out).write_text(json.dumps(report, indent=1))
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def ddp_report(tmp_path_factory):
    work = tmp_path_factory.mktemp("ddp")
    archs = architecture_families()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(worker, args=(2, str(work / "store"), archs, str(work / "report.json")), nprocs=2, join=True)
    return json.loads((work / "report.json").read_text())


def test_each_rank_pads_its_half_less_than_the_whole_batch():
    """The batch this file trains on: rank 1's half is padded to 8 source and 7 target tokens, the whole batch to
    9 and 9, so its sentences see other padding on their rank."""
    src, lengths, prev, target_lengths = batch()
    assert src.shape == prev.shape == (4, 9) and lengths.tolist() == [9, 7, 5, 8]
    assert src[2].tolist()[:4] == [PAD] * 4 and src[2, -1] == EOS and prev[3].tolist()[4:] == [PAD] * 5
    half_src, _, half_prev, _ = batch(slice(2, 4))
    assert half_src.shape == (2, 8) and half_prev.shape == (2, 7)
    assert torch.equal(half_src, src[2:, 1:]) and torch.equal(half_prev, prev[2:, :7])


@pytest.mark.parametrize("arch", architecture_families())
def test_two_ranks_average_to_the_whole_batchs_gradients(ddp_report, arch):
    result = ddp_report[arch]
    assert "error" not in result, f"{arch} under DistributedDataParallel: {result.get('error')}"
    assert not result["missing"], f"{arch}: no gradient under DDP for {result['missing']}"
    assert result["relative_error"] <= TOLERANCE, f"{arch}: gradients differ by {result['relative_error']:.3g}"
