"""Facts about prepared corpora that the docs state: split sizes, dictionary size, how much longer the test
sources are than any training source, which test and valid sentences also occur in train, how long the longest
test reference is in BPE tokens against fairseq-generate's length caps, and how many references hold a clock time.

    python -m fairseq_localness.experiments.corpus_statistics \\
        --data multi30k_de_en=runs/data/multi30k_de_en --data kftt_ja_en=runs/data/kftt_ja_en ... \\
        --json docs/results/prep/corpus-statistics.json

Each ``--data NAME=DIR`` is a directory a ``data-prep/prepare-*.sh`` script wrote:

* a translation corpus (``DIR/data-bin/prep-info.json`` names the source and target languages): the tokenised
  text ``DIR/tok/{train,valid,test}.{src,tgt}``, its BPE ``DIR/{train,valid,test}.{src,tgt}`` (the mean source
  length per split is counted in BPE tokens, without the end-of-sentence symbol), the dictionaries
  ``DIR/data-bin/dict.{src,tgt}.txt`` and the detokenised reference ``DIR/raw/test.{tgt}`` where there is one;
* a classification corpus (``prepare-sst2.sh``): ``DIR/tok/input0/{train,valid,test}.txt`` and
  ``DIR/data-bin/input0/dict.txt``.

Words are the tokenised text's whitespace-separated tokens. A sentence "occurs in train" when its tokenised form
equals a training sentence's; a pair when both sides do. A reference's BPE length L is checked against fairseq's
``SequenceGenerator`` cap, which allows ``max_len_a * (S + 1) + max_len_b`` tokens for a source of S BPE tokens
(+1: the source's end-of-sentence), for its default (a = 0, b = 200) and for ``--max-len-a 2 --max-len-b 10``.
A dictionary's size is its file's lines: the words, without fairseq's 4 special symbols.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..provenance import (add_result_file_options, command_line, load_average, result_file_problem, run_header,
                          utc_now, write_result_file)

PROGRAM = "python -m fairseq_localness.experiments.corpus_statistics"
SPLITS = ("train", "valid", "test")
#: (a, b) of fairseq-generate's --max-len-a / --max-len-b: its default, and the Europarl length split's
LENGTH_CAPS: Tuple[Tuple[int, int], ...] = ((0, 200), (2, 10))
#: a clock time as written in English text (4:00, 12:30); the Moses tokeniser splits it and its detokeniser gives
#: back "4: 00", so such a reference loses a little sacreBLEU for every system alike
CLOCK_TIME = re.compile(r"\b\d{1,2}:\d\d\b")


class CorpusError(ValueError):
    """A --data directory that is not a prepared corpus; the message names the flag and the file."""


def read_lines(path: Path, flag: str) -> List[str]:
    if not path.is_file():
        raise CorpusError(f"{flag}: {path} is missing; is the directory a finished data-prep run?")
    return path.read_text(encoding="utf-8").splitlines()


def words(line: str) -> int:
    return len(line.split())


def cap_name(a: int, b: int) -> str:
    return f"max_len_a={a},max_len_b={b}"


def overlap(split_src: List[str], split_tgt: List[str], train_pairs: set, train_sources: set) -> Dict:
    """How many of a split's sources occur in train, and how many of its pairs (source and target both)."""
    sources = [i for i, s in enumerate(split_src) if s in train_sources]
    return {"sources_in_train": len(sources),
            "pairs_in_train": sum((split_src[i], split_tgt[i]) in train_pairs for i in sources),
            "sources_in_train_words_max": max((words(split_src[i]) for i in sources), default=0)}


def translation_statistics(name: str, root: Path, flag: str) -> Dict:
    info = json.loads((root / "data-bin" / "prep-info.json").read_text(encoding="utf-8"))
    src, tgt = info["src"], info["tgt"]
    tok = {(split, lang): read_lines(root / "tok" / f"{split}.{lang}", flag) for split in SPLITS for lang in (src, tgt)}
    # BPE: every split's source (its mean length), and the test references (their length against the caps)
    bpe = {(split, src): read_lines(root / f"{split}.{src}", flag) for split in SPLITS}
    bpe["test", tgt] = read_lines(root / f"test.{tgt}", flag)
    pairs = {}
    for split in SPLITS:
        if len(tok[split, src]) != len(tok[split, tgt]):
            raise CorpusError(f"{flag}: {root / 'tok'}/{split}.{src} and .{tgt} differ in lines")
        pairs[split] = len(tok[split, src])
    for (split, lang), lines in bpe.items():
        if len(lines) != pairs[split]:
            raise CorpusError(f"{flag}: {root}/{split}.{lang} (BPE) differs in lines from "
                              f"{root / 'tok'}/{split}.{lang}")
    source_bpe_lengths = {split: [words(line) for line in bpe[split, src]] for split in SPLITS}
    train_sources = set(tok["train", src])
    train_pairs = set(zip(tok["train", src], tok["train", tgt]))
    train_max = max(map(words, tok["train", src]))
    test_lengths = [words(s) for s in tok["test", src]]
    dictionaries = {lang: read_lines(root / "data-bin" / f"dict.{lang}.txt", flag) for lang in (src, tgt)}
    record = {
        "corpus": name, "kind": "translation", "src": src, "tgt": tgt,
        "pairs": pairs,
        "dictionary_words": {lang: len(lines) for lang, lines in dictionaries.items()},
        "joined_dictionary": dictionaries[src] == dictionaries[tgt],
        # the mean source length in BPE tokens, without the end-of-sentence symbol fairseq appends
        "source_bpe_tokens_mean": {split: round(sum(source_bpe_lengths[split]) / pairs[split], 2)
                                   for split in SPLITS},
        "train_source_words_max": train_max,
        "test_source_words_max": max(test_lengths),
        "test_sources_longer_than_train": sum(n > train_max for n in test_lengths),
        "test": overlap(tok["test", src], tok["test", tgt], train_pairs, train_sources),
        "valid": overlap(tok["valid", src], tok["valid", tgt], train_pairs, train_sources),
    }
    reference_lengths = [words(line) for line in bpe["test", tgt]]
    record["test_reference_bpe_max"] = max(reference_lengths)
    record["test_references_over_cap"] = {
        cap_name(a, b): sum(ref > a * (s + 1) + b for ref, s in zip(reference_lengths, source_bpe_lengths["test"]))
        for a, b in LENGTH_CAPS}
    reference = root / "raw" / f"test.{tgt}"
    if reference.is_file():
        record["test_references_with_clock_time"] = sum(
            bool(CLOCK_TIME.search(line)) for line in read_lines(reference, flag))
    return record


def classification_statistics(name: str, root: Path, flag: str) -> Dict:
    return {"corpus": name, "kind": "classification",
            "examples": {split: len(read_lines(root / "tok" / "input0" / f"{split}.txt", flag)) for split in SPLITS},
            "dictionary_words": len(read_lines(root / "data-bin" / "input0" / "dict.txt", flag))}


def corpus_statistics(name: str, root: Path) -> Dict:
    """The facts of one prepared corpus (module docstring), as one result-file record."""
    flag = f"--data {name}={root}"
    if (root / "data-bin" / "prep-info.json").is_file():
        return translation_statistics(name, root, flag)
    if (root / "data-bin" / "input0" / "dict.txt").is_file():
        return classification_statistics(name, root, flag)
    raise CorpusError(f"{flag}: neither {root}/data-bin/prep-info.json (a translation corpus) nor "
                      f"{root}/data-bin/input0/dict.txt (a classification corpus); pass a directory a "
                      "data-prep/prepare-*.sh script finished")


def parse_data(values: Sequence[str], parser: argparse.ArgumentParser) -> List[Tuple[str, Path]]:
    pairs = []
    for value in values:
        name, sep, directory = value.partition("=")
        if not sep or not name or not directory:
            parser.error(f"--data {value}: expected NAME=DIR (e.g. multi30k_de_en=runs/data/multi30k_de_en)")
        if not Path(directory).is_dir():
            parser.error(f"--data {value}: {directory} is not a directory")
        pairs.append((name, Path(directory)))
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        parser.error(f"--data: a name given twice in {names}")
    return pairs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", metavar="NAME=DIR", action="append", required=True,
                        help="a prepared corpus and the name to give it (repeat for several)")
    add_result_file_options(parser, "the facts")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    data = parse_data(args.data, parser)
    problem = args.json and result_file_problem(args.json, "--json", args.overwrite)
    if problem:
        parser.error(problem)
    started, load_before = utc_now(), load_average()
    try:
        records = [corpus_statistics(name, root) for name, root in data]
    except CorpusError as err:
        parser.error(str(err))
    result = {**run_header(started, load_before, load_average(), command_line(PROGRAM, argv)),
              "procedure": "as the module docstring of fairseq_localness/experiments/corpus_statistics.py says",
              "source": "written by the command (--json)", "records": records}
    print(json.dumps(records, indent=1, ensure_ascii=False))
    if args.json:
        write_result_file(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
