"""The probing classifier: an MLP on frozen sentence vectors, early-stopped on the validation partition.

Xu et al. (2019, Section 5.1) "set the hyper parameters of these tasks following the configuration of
Conneau et al. (2018)", with "mini-batch size 1k samples" and training that "early-stops with the
accuracy on the validation set". Conneau et al.'s configuration is SentEval's (README, "SentEval
parameters"; ``senteval/tools/classifier.py`` and ``validation.py``), reproduced here:

* MLP ``Linear(d, nhid) -> Dropout -> Sigmoid -> Linear(nhid, classes)``, cross-entropy loss;
  "for probing tasks, we used an MLP with a Sigmoid nonlinearity and tuned the nhid (in [50, 100,
  200]) and dropout (in [0.0, 0.1, 0.2]) on the dev set" (SentEval README);
* L2 penalty (Adam's weight decay) tuned over 1e-5, 1e-4, 1e-3, 1e-2 on the dev set
  (``SplitClassifier``: ``10**t for t in range(-5, -1)``);
* Adam with PyTorch's defaults (lr 1e-3), the "default config" of the README;
* one evaluation on dev after every ``epoch_size`` = 4 passes over the training set; the best
  model on dev is kept; training stops at the (``tenacity`` + 1)-th evaluation without a new best
  (tenacity 5; SentEval counts these without resetting) or after ``max_epoch`` = 200 passes;
* labels are mapped to classes in sorted order of the training labels (``senteval/probing.py``).

The grid point with the best dev accuracy (first one on ties) is reported on test.
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

import torch
from torch import Tensor, nn


@dataclass
class ClassifierConfig:
    """Hyper-parameters and the grid searched on dev (defaults: SentEval / Xu et al. 2019, see module doc)."""

    hidden: Sequence[int] = (50, 100, 200)
    dropout: Sequence[float] = (0.0, 0.1, 0.2)
    l2: Sequence[float] = (1e-5, 1e-4, 1e-3, 1e-2)
    batch_size: int = 1000
    lr: float = 1e-3
    epoch_size: int = 4
    tenacity: int = 5
    max_epoch: int = 200
    seed: int = 1111  # SentEval's default seed

    def grid(self) -> List[Tuple[int, float, float]]:
        return list(itertools.product(self.hidden, self.dropout, self.l2))


def build_mlp(dim: int, hidden: int, classes: int, dropout: float) -> nn.Sequential:
    """SentEval's MLP (``senteval/tools/classifier.py``); ``hidden`` 0 gives logistic regression."""
    if hidden == 0:
        return nn.Sequential(nn.Linear(dim, classes))
    return nn.Sequential(nn.Linear(dim, hidden), nn.Dropout(p=dropout), nn.Sigmoid(), nn.Linear(hidden, classes))


@torch.no_grad()
def predict(model: nn.Module, x: Tensor, batch_size: int = 4096) -> Tensor:
    model.eval()
    return torch.cat([model(x[i:i + batch_size]).argmax(dim=-1) for i in range(0, len(x), batch_size)]) \
        if len(x) else torch.empty(0, dtype=torch.long)


def accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    return int(predict(model, x).eq(y).sum()) / len(y) if len(y) else 0.0  # exact fraction (no float32 mean)


@dataclass
class FitResult:
    model: nn.Module
    dev_accuracy: float
    passes: int
    hidden: int
    dropout: float
    l2: float


def fit(x_train: Tensor, y_train: Tensor, x_dev: Tensor, y_dev: Tensor, classes: int, hidden: int, dropout: float,
        l2: float, cfg: ClassifierConfig) -> FitResult:
    """Train one MLP with SentEval's early stopping on dev accuracy; the best model on dev is returned."""
    torch.manual_seed(cfg.seed)
    generator = torch.Generator().manual_seed(cfg.seed)
    model = build_mlp(x_train.size(1), hidden, classes, dropout).to(x_train.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=l2)
    loss_fn = nn.CrossEntropyLoss()
    best, best_state, passes, misses = -1.0, None, 0, 0
    while passes <= cfg.max_epoch:
        model.train()
        for _ in range(cfg.epoch_size):
            permutation = torch.randperm(len(x_train), generator=generator).to(x_train.device)
            for i in range(0, len(x_train), cfg.batch_size):
                idx = permutation[i:i + cfg.batch_size]
                optimizer.zero_grad()
                loss_fn(model(x_train[idx]), y_train[idx]).backward()
                optimizer.step()
        passes += cfg.epoch_size
        dev = accuracy(model, x_dev, y_dev)
        if dev > best:
            best, best_state = dev, copy.deepcopy(model.state_dict())
        else:
            if misses >= cfg.tenacity:
                break
            misses += 1
    model.load_state_dict(best_state)
    return FitResult(model.eval(), best, passes, hidden, dropout, l2)


@dataclass
class ProbeResult:
    """One task's outcome."""

    task: str
    labels: List[str]
    test_accuracy: float
    dev_accuracy: float
    hidden: int
    dropout: float
    l2: float
    passes: int
    predictions: List[str] = field(default_factory=list)
    grid: List[Dict[str, float]] = field(default_factory=list)


def probe_features(task: str, labels: Sequence[str], x: Dict[str, Tensor], y: Dict[str, Tensor],
                   cfg: ClassifierConfig) -> ProbeResult:
    """Grid search on dev (``va``), then accuracy of the best model on test (``te``)."""
    runs = [fit(x["tr"], y["tr"], x["va"], y["va"], len(labels), h, d, l2, cfg) for h, d, l2 in cfg.grid()]
    best = max(runs, key=lambda r: r.dev_accuracy)  # max keeps the first of equal values
    predicted = predict(best.model, x["te"]).cpu()
    return ProbeResult(
        task=task, labels=list(labels), test_accuracy=int(predicted.eq(y["te"].cpu()).sum()) / max(1, len(predicted)),
        dev_accuracy=best.dev_accuracy, hidden=best.hidden, dropout=best.dropout, l2=best.l2, passes=best.passes,
        predictions=[labels[k] for k in predicted.tolist()],
        grid=[{"hidden": r.hidden, "dropout": r.dropout, "l2": r.l2, "dev_accuracy": r.dev_accuracy, "passes": r.passes}
              for r in runs],
    )
