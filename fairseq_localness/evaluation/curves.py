"""Learning curves: validation loss against updates, read from fairseq-train logs, as CSV and PNG.

Command line::

    python -m fairseq_localness.evaluation.curves --run Transformer=tf/train.log --run DMAN=dman/train.log \
        --csv curves.csv [--png curves.png] [--title TEXT]

Each ``--run LABEL=LOG`` is a fairseq-train log (``--log-format simple`` or ``json``, as written to
stdout); its ``valid on 'valid' subset`` lines give one point each (the loss fairseq reports, base 2,
label-smoothed). A log without any validation line is an error naming the file.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path
from typing import Dict, List, Mapping, Sequence, Tuple

from ..provenance import result_file_problem

CSV_FIELDS = ("model", "updates", "valid_loss", "valid_nll_loss")

_SIMPLE = re.compile(r"\| valid on 'valid' subset \|(?P<fields>.*)$")


def _field(fields: str, name: str) -> str:
    match = re.search(rf"\|\s*{name} ([^|\s]+)", "|" + fields)
    if match is None:
        raise ValueError(f"no '{name}' in validation line: {fields.strip()}")
    return match.group(1)


def validation_losses(log_text: str) -> List[Tuple[int, float, float]]:
    """(updates, loss, nll_loss) of every validation on the 'valid' subset, by updates, one point per update count.

    fairseq validates at the end of an epoch and every ``--validate-interval-updates``; when both fall
    on the same update the later line is kept (the two are the same model).
    """
    points: Dict[int, Tuple[float, float]] = {}
    for line in log_text.splitlines():
        match = _SIMPLE.search(line)
        if match:
            fields = match.group("fields")
            points[int(_field(fields, "num_updates"))] = (float(_field(fields, "loss")), float(_field(fields, "nll_loss")))
            continue
        start = line.find('{"epoch"')
        if start >= 0 and '"valid_loss"' in line:  # --log-format json
            record = json.loads(line[start:])
            points[int(record["valid_num_updates"])] = (float(record["valid_loss"]), float(record["valid_nll_loss"]))
    return [(updates, loss, nll) for updates, (loss, nll) in sorted(points.items())]


def write_curves_csv(runs: Mapping[str, Path], out: Path) -> List[Dict[str, object]]:
    """One row per (model, validation) to ``out``; raises ValueError naming a log without validations."""
    rows = []
    for label, log in runs.items():
        points = validation_losses(Path(log).read_text(encoding="utf-8", errors="replace"))
        if not points:
            raise ValueError(f"{log}: no \"valid on 'valid' subset\" line; is it a fairseq-train log of a run that validated?")
        rows += [dict(model=label, updates=u, valid_loss=loss, valid_nll_loss=nll) for u, loss, nll in points]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def read_curves_csv(path: Path) -> Dict[str, List[Tuple[int, float]]]:
    curves: Dict[str, List[Tuple[int, float]]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            curves.setdefault(row["model"], []).append((int(row["updates"]), float(row["valid_loss"])))
    return curves


def plot_curves(csv_path: Path, png_path: Path, title: str = "") -> None:
    """Validation loss against updates, one line per model of ``csv_path``."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for label, points in read_curves_csv(csv_path).items():
        updates, losses = zip(*points)
        ax.plot(updates, losses, marker="o", markersize=3, label=label)
    ax.set_xlabel("updates")
    ax.set_ylabel("validation loss (label-smoothed, base 2)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path)
    plt.close(fig)


def _run_arg(text: str) -> Tuple[str, Path]:
    label, sep, log = text.partition("=")
    if not sep or not label or not log:
        raise argparse.ArgumentTypeError(f"--run wants LABEL=LOG, got {text!r}")
    if not Path(log).is_file():
        raise argparse.ArgumentTypeError(f"--run {text}: no such file {log}")
    return label, Path(log)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=_run_arg, action="append", required=True, metavar="LABEL=LOG")
    p.add_argument("--csv", type=Path, required=True, help="CSV to write (model, updates, valid_loss, valid_nll_loss)")
    p.add_argument("--png", type=Path, help="figure to write from the CSV")
    p.add_argument("--title", default="")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --csv or --png")
    a = p.parse_args(argv)
    for flag, path in (("--csv", a.csv), ("--png", a.png)):  # before any log is read: nothing is replaced unasked
        problem = path is not None and result_file_problem(str(path), flag, a.overwrite)
        if problem:
            p.error(problem)
    try:
        write_curves_csv(dict(a.run), a.csv)
    except ValueError as err:
        p.error(str(err))
    if a.png:
        plot_curves(a.csv, a.png, a.title)


if __name__ == "__main__":
    main()
