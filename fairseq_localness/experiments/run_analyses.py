"""What the papers read from trained attention, computed for every finished comparison run while its checkpoint
is at hand.

A comparison publishes no checkpoints (their size), so the analyses of trained models run when a run has been
evaluated, on its best checkpoint, and their tables are published with its scores:

* Fan et al. (2021) Table 5: the attention mass within w tokens (Eq. 13), for every architecture;
* Yang et al. (2018) Fig. 3: the Gaussian's predicted centres and windows per layer;
* Xu et al. (2019) Fig. 3: the hybrid gate per layer;
* Nguyen et al. (2020): the mean width of the learned soft windows per layer.

Each applies where the model holds its method (:class:`RunAnalysis`), and each writes the CSV and markdown of
``fairseq-localness-analyze`` (docs/analyses.md) to ``RUN_DIR/analyses/``. Their figures stay unpublished: a
heatmap prints the corpus's sentences, whose terms need not allow redistributing them. ``analyses/done.json``
names the analyses that applied, so a finished run is analysed once.

    python -m fairseq_localness.experiments.run_analyses CHECKPOINT DATA_BIN OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

ANALYSES_DIR = "analyses"
DONE = f"{ANALYSES_DIR}/done.json"


@dataclass(frozen=True)
class RunAnalysis:
    name: str  #: the analysis of fairseq-localness-analyze, and its files' name
    method: Optional[str]  #: the locality method the model must hold; None: every model
    split: str  #: the data split it reads
    options: Tuple[str, ...] = ()


RUN_ANALYSES = (
    RunAnalysis("attention-mass", None, "test"),
    RunAnalysis("gaussian-scopes", "gaussian", "valid"),
    RunAnalysis("gate-layers", "hybrid", "valid"),
    RunAnalysis("diffwin-windows", "diffwin_enc", "valid"),
)

#: the files a run publishes (relative to its directory): every analysis's tables, and the record of which ran
FILES = (DONE, *(f"{ANALYSES_DIR}/{a.name}.{ext}" for a in RUN_ANALYSES for ext in ("csv", "md")))


def applicable(model) -> List[RunAnalysis]:
    """The analyses whose method ``model`` holds."""
    from ..analyses.loading import locality_modules

    return [a for a in RUN_ANALYSES if a.method is None or locality_modules(model, a.method)]


def analyse(checkpoint: Path, data_bin: Path, out: Path, label: str, command: str = "") -> List[str]:
    """Run every applicable analysis of ``checkpoint`` into ``out``; the names of those that ran. ``done.json``
    records them with the date, machine, load and ``command`` (each table's caption names its own command)."""
    from ..analyses import cli
    from ..analyses.loading import load_checkpoint
    from ..provenance import load_average, run_header, utc_now, write_atomically

    started, load_before = utc_now(), load_average()
    which = applicable(load_checkpoint(str(checkpoint), str(data_bin), label).model)
    out.mkdir(parents=True, exist_ok=True)
    for analysis in which:
        cli.main([analysis.name, "--data", str(data_bin), "--split", analysis.split, "--checkpoint",
                  f"{label}={checkpoint}", "--out", str(out), "--name", analysis.name, "--overwrite",
                  *analysis.options])
    names = [a.name for a in which]
    done = {"analyses": names, "checkpoint": checkpoint.name,
            **run_header(started, load_before, load_average(), command)}
    # whole or not at all: done.json marks the run analysed, for good
    write_atomically(out / Path(DONE).name, json.dumps(done, indent=1) + "\n")
    return names


def analysed(run_dir: Path) -> bool:
    return (run_dir / DONE).is_file()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("data_bin", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--label", default="model", help="the model's name in the tables")
    args = parser.parse_args(argv)
    from ..analyses.loading import AnalysisError
    from ..provenance import command_line, directory_problem

    problem = directory_problem(args.out, "OUT")
    if problem:
        parser.error(problem)

    try:
        command = command_line("python -m fairseq_localness.experiments.run_analyses",
                               sys.argv[1:] if argv is None else argv)
        names = analyse(args.checkpoint, args.data_bin, args.out, args.label, command)
    except AnalysisError as err:
        print(f"run_analyses: error: {err}", file=sys.stderr)
        return 2
    print(f"analysed {args.checkpoint}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
