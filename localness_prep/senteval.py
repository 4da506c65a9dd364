"""SentEval probing files (Conneau et al. 2018): reading, checking, writing.

Format (SentEval's ``data/probing/README.md``): one instance a line, TAB-separated; the first field
is the partition (``tr``/``va``/``te``), the second the class label, the *last* the sentence
(space-delimited, Moses-tokenised). SentEval's loader reads ``line[0]``, ``line[1]`` and
``line[-1]``, so more than three fields are accepted and the last one is the sentence.

Command line (used by data-prep/prepare-senteval-probing.sh)::

    python -m localness_prep.senteval check FILE [FILE ...]
    python -m localness_prep.senteval copy RAW_DIR OUT_DIR [--tasks NAME,NAME]

``copy`` reads and checks every file before it writes anything; an error names the file and line.
Like the whole package, this module imports neither torch nor fairseq.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Sequence, Tuple

from .checks import CheckError

#: SentEval's partition names, in file order
SPLITS = ("tr", "va", "te")

#: the ten files of SentEval's data/probing, with the task names of Conneau et al. (2018) and the
#: column names of Xu et al. (2019) Table 4, in that table's order
TASKS: Dict[str, Tuple[str, str]] = {
    "sentence_length": ("SentLen", "SeLn"),
    "word_content": ("WC", "WC"),
    "tree_depth": ("TreeDepth", "TDep"),
    "top_constituents": ("TopConst", "ToCo"),
    "bigram_shift": ("BShift", "BShif"),
    "past_present": ("Tense", "Tense"),
    "subj_number": ("SubjNum", "SubN"),
    "obj_number": ("ObjNum", "ObjN"),
    "odd_man_out": ("SOMO", "SoMo"),
    "coordination_inversion": ("CoordInv", "CoIn"),
}

#: Conneau et al. (2018)'s three groups, as Xu et al. (2019) Table 3 averages them ("Surf.", "Sync.", "Semc.")
GROUPS: Dict[str, Tuple[str, ...]] = {
    "surface": ("sentence_length", "word_content"),
    "syntactic": ("tree_depth", "top_constituents", "bigram_shift"),
    "semantic": ("past_present", "subj_number", "obj_number", "odd_man_out", "coordination_inversion"),
}


@dataclass
class ProbingTask:
    """One SentEval-format file: (label, sentence) pairs per partition."""

    name: str
    path: str
    splits: Dict[str, List[Tuple[str, str]]] = field(default_factory=lambda: {s: [] for s in SPLITS})

    def labels(self) -> List[str]:
        """Class labels, sorted, from the training partition (SentEval maps labels the same way)."""
        return sorted({label for label, _ in self.splits["tr"]})

    def counts(self) -> Dict[str, int]:
        return {s: len(rows) for s, rows in self.splits.items()}


def task_name(path: str) -> str:
    """``.../word_content.txt`` -> ``word_content``."""
    base = os.path.basename(path)
    return base[:-4] if base.endswith(".txt") else base


def read_task(path: str, name: str | None = None) -> ProbingTask:
    """Read and check one SentEval-format file; raises :class:`CheckError` naming the file and line."""
    if not os.path.isfile(path):
        raise CheckError(f"{path}: no such file")
    task = ProbingTask(name=name or task_name(path), path=path)
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise CheckError(f"{path}:{n}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
            if not line.strip():
                raise CheckError(f"{path}:{n}: empty line (every line is 'tr|va|te<TAB>label<TAB>sentence')")
            fields = line.split("\t")
            if len(fields) < 3:
                raise CheckError(f"{path}:{n}: expected 'tr|va|te<TAB>label<TAB>sentence', found {len(fields)} "
                                 f"TAB-separated field(s): {line[:80]!r}")
            split, label, sentence = fields[0].strip(), fields[1].strip(), " ".join(fields[-1].split())
            if split not in SPLITS:
                raise CheckError(f"{path}:{n}: partition {split!r} is not one of tr, va, te")
            if not label:
                raise CheckError(f"{path}:{n}: empty label")
            if not sentence:
                raise CheckError(f"{path}:{n}: empty sentence")
            task.splits[split].append((label, sentence))
    check_task(task)
    return task


def check_task(task: ProbingTask) -> None:
    """Every partition present; at least two classes; every va/te label seen in tr."""
    missing = [s for s in SPLITS if not task.splits[s]]
    if missing:
        raise CheckError(f"{task.path}: no '{', '.join(missing)}' line(s): a probing task needs the three partitions "
                         f"tr (train), va (validation, early stopping) and te (test); found {task.counts()}")
    labels = set(task.labels())
    if len(labels) < 2:
        raise CheckError(f"{task.path}: the tr partition has only one class ({', '.join(labels)})")
    for split in ("va", "te"):
        unseen = sorted({label for label, _ in task.splits[split]} - labels)
        if unseen:
            raise CheckError(f"{task.path}: label(s) {', '.join(map(repr, unseen[:5]))} of the {split} partition never "
                             "occur in tr; the classifier cannot predict them")


def write_task(path: str, splits: Dict[str, Sequence[Tuple[str, str]]]) -> None:
    """Write ``split<TAB>label<TAB>sentence`` lines, partitions in SentEval's order (tr, va, te)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".part"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for split in SPLITS:
            for label, sentence in splits.get(split, ()):
                f.write(f"{split}\t{label}\t{sentence}\n")
    os.replace(tmp, path)  # a reader never sees half a file


def summary(task: ProbingTask) -> str:
    counts = task.counts()
    per_class = Counter(label for label, _ in task.splits["tr"])
    balance = f"{min(per_class.values())}-{max(per_class.values())} per class in tr"
    return (f"{task.name}: {len(per_class)} classes, tr {counts['tr']}, va {counts['va']}, te {counts['te']} "
            f"({balance})")


def copy_tasks(raw_dir: str, out_dir: str, names: Iterable[str] = tuple(TASKS)) -> List[ProbingTask]:
    """Check ``raw_dir``/NAME.txt for every name, then write the normalised files into ``out_dir``."""
    names = list(names)
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        raise CheckError(f"--tasks: unknown task(s) {', '.join(unknown)}; SentEval's are {', '.join(TASKS)}")
    missing = [f"{n}.txt" for n in names if not os.path.isfile(os.path.join(raw_dir, f"{n}.txt"))]
    if missing:
        raise CheckError(f"{raw_dir}: missing SentEval probing file(s): {', '.join(missing)} (from SentEval's "
                         "data/probing/; see docs/probing.md, or pass --tasks to prepare fewer)")
    tasks = [read_task(os.path.join(raw_dir, f"{n}.txt"), n) for n in names]  # all checked before any write
    for task in tasks:
        write_task(os.path.join(out_dir, f"{task.name}.txt"), task.splits)
    return tasks


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m localness_prep.senteval", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="check SentEval-format files and print their sizes")
    check.add_argument("files", nargs="+")
    copy = sub.add_parser("copy", help="check RAW_DIR/<task>.txt and write normalised copies into OUT_DIR")
    copy.add_argument("raw_dir")
    copy.add_argument("out_dir")
    copy.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task file names [all ten]")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            tasks = [read_task(path) for path in args.files]
        else:
            tasks = copy_tasks(args.raw_dir, args.out_dir, [t for t in args.tasks.split(",") if t])
    except CheckError as e:
        sys.exit(f"ERROR: {e}")
    for task in tasks:
        print(summary(task))


if __name__ == "__main__":
    main()
