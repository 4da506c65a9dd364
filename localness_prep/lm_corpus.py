"""Language-model corpora: One Billion Word, and a small news-English stand-in built offline.

**One Billion Word** (Chelba et al. 2013; Nguyen et al. 2020 Sec. 5.4 / Table 6), the released
``1-billion-word-language-modeling-benchmark-r13output`` layout, already tokenised (1BW's
``scripts/get-data.sh``: WMT11 ``normalize-punctuation.perl`` + ``tokenizer.perl -l en``):

* train: ``training-monolingual.tokenized.shuffled/news.en-000{01..99}-of-00100`` (get-data.sh moved
  shard 00000 to the held-out data);
* test: ``heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050``, the test set on
  which the benchmark's results are reported (Chelba, 1-billion-word-language-modeling-benchmark
  issue #4; also tensor2tensor's ``lm1b`` eval file, Nguyen et al.'s toolkit, and lingvo's
  ``tasks/lm/params/one_billion_wds.py`` Test set): 6,075 sentences, 159,658 tokens with ``</s>``;
* valid: ``news.en.heldout-00001-of-00050`` (Chelba: the other held-out shards are free for
  validation; lingvo's Dev set): 6,206 sentences.

fairseq's own examples give no 1BW recipe. The word vocabulary (``data-prep/prepare-1bw.sh``) is
Nguyen et al.'s "vocabulary of 32,000 words" (Sec. 5.4) by default, ``fairseq-preprocess --nwordssrc
32000``; ``--threshold 3`` gives the benchmark's own, where "all words with count below 3" are
discarded (Chelba et al. 2013 Sec. 2, 793,471 words), i.e. ``fairseq-preprocess --thresholdsrc 3``.

**News-English stand-in** (no 1BW here): the English sides of the WMT sets in ``../shared/data``
(:data:`STANDIN_SOURCES`), made to look like 1BW: tokenised text is detokenised first, then every
line goes through Moses punctuation normalisation and tokenisation without escaping, cased (1BW's
pipeline); duplicates are removed (1BW's ``sort -u``; here also lines equal up to case and spacing,
so a tokenisation variant of a held-out sentence cannot stay in train); the unique sentences are
shuffled (``--seed``) and the first ``--test-size`` / next ``--valid-size`` are held out.

Command line (data-prep/prepare-1bw.sh, data-prep/prepare-lm-news-en.sh)::

    python -m localness_prep.lm_corpus onebw RAW_DIR OUT_DIR [--max-train-shards N]
    python -m localness_prep.lm_corpus standin SHARED_DATA OUT_DIR [--valid-size N]
        [--test-size N] [--seed N]

Both write ``OUT_DIR/{train,valid,test}.txt`` and check every input (present, UTF-8) first.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Callable, Dict, List, Sequence, Tuple

from .checks import CheckError

ONEBW_TOP = "1-billion-word-language-modeling-benchmark-r13output"
ONEBW_TRAIN_DIR = "training-monolingual.tokenized.shuffled"
ONEBW_HELDOUT_DIR = "heldout-monolingual.tokenized.shuffled"
ONEBW_TRAIN_SHARDS = tuple(f"news.en-{i:05d}-of-00100" for i in range(1, 100))
ONEBW_TEST = "news.en.heldout-00000-of-00050"
ONEBW_VALID = "news.en.heldout-00001-of-00050"

#: (path under ../shared/data, form): ``raw`` untokenised; ``moses`` Moses-tokenised with escapes
#: (&apos; &quot; ...); ``stanford`` Moses-tokenised with hyphens split as ``##AT##-##AT##``. Left
#: out: newstest2014.filtered (a subset of newstest2014.full), newstest2014_head1000 (its first 1000
#: lines), the second WMT22 references (other translations of the same sources).
STANDIN_SOURCES: Tuple[Tuple[str, str], ...] = (
    ("wmt14_ende/raw/newstest2014.full.en", "raw"),
    ("wmt14_ende/raw_sample_simt/unknown_test1000_probably_newstest2015.en", "raw"),
    ("wmt14_ende/tok_stanford/newstest2013.tok.en", "stanford"),
    ("wmt14_ende/tok_opennmt/val3000_probably_newstest2012.tok.en", "moses"),
    ("wmt14_ende/tok_opennmt/train10k.tok.en", "moses"),
    ("wmt14_ende/raw_sample_simt/europarl_head20k.en", "raw"),
    ("wmt17_zhen/newstest2017.first2000.en", "raw"),
    ("wmt17_zhen/newsdev2017.en", "raw"),
    ("wmt22_generaltest/generaltest2022.en-de.src.en", "raw"),
    ("wmt22_generaltest/generaltest2022.de-en.ref.A.en", "raw"),
    ("wmt22_generaltest/generaltest2022.zh-en.ref.A.en", "raw"),
    ("wmt22_generaltest/generaltest2022.ja-en.ref.A.en", "raw"),
)
_MOSES_ESCAPES = (("&#124;", "|"), ("&lt;", "<"), ("&gt;", ">"), ("&apos;", "'"), ("&quot;", '"'),
                  ("&#91;", "["), ("&#93;", "]"), ("&amp;", "&"))  # &amp; last: "&amp;lt;" is a literal "&lt;"


def read_lines(path: str) -> List[str]:
    """The lines of ``path`` without their newline; raises :class:`CheckError` naming a non-UTF-8 line."""
    lines = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as e:
                raise CheckError(f"{path}:{n}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
    return lines


def copy_checked(sources: Sequence[str], dst: str) -> Tuple[int, int]:
    """Concatenate ``sources`` into ``dst`` (bytes unchanged), checking UTF-8; returns (lines, words)."""
    n_lines = n_words = 0
    with open(dst, "wb") as out:
        for path in sources:
            with open(path, "rb") as f:
                for n, raw in enumerate(f, 1):
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise CheckError(f"{path}:{n}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
                    n_lines += 1
                    n_words += len(raw.split())
    return n_lines, n_words


def onebw_files(raw_dir: str, max_train_shards: int = 99) -> Dict[str, List[str]]:
    """The 1BW files of each split; every missing one is named in one :class:`CheckError`."""
    if not 1 <= max_train_shards <= len(ONEBW_TRAIN_SHARDS):
        raise CheckError(f"--max-train-shards must be 1..{len(ONEBW_TRAIN_SHARDS)}, got {max_train_shards}")
    if os.path.isdir(os.path.join(raw_dir, ONEBW_TOP)):
        raw_dir = os.path.join(raw_dir, ONEBW_TOP)
    files = {"train": [os.path.join(raw_dir, ONEBW_TRAIN_DIR, s) for s in ONEBW_TRAIN_SHARDS[:max_train_shards]],
             "valid": [os.path.join(raw_dir, ONEBW_HELDOUT_DIR, ONEBW_VALID)],
             "test": [os.path.join(raw_dir, ONEBW_HELDOUT_DIR, ONEBW_TEST)]}
    missing = [p for paths in files.values() for p in paths if not os.path.isfile(p)]
    if missing:
        shown = "\n  ".join(missing[:10]) + (f"\n  ... and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise CheckError(f"{len(missing)} One Billion Word file(s) missing:\n  {shown}\n--raw-dir must be the "
                         f"extracted {ONEBW_TOP} folder (or its parent), with {ONEBW_TRAIN_DIR}/ and "
                         f"{ONEBW_HELDOUT_DIR}/; --max-train-shards N needs only the first N training shards")
    return files


def prepare_onebw(raw_dir: str, out_dir: str, max_train_shards: int = 99) -> Dict[str, Tuple[int, int]]:
    """Write ``out_dir``/{train,valid,test}.txt; returns (sentences, words) per split."""
    files = onebw_files(raw_dir, max_train_shards)
    os.makedirs(out_dir, exist_ok=True)
    return {split: copy_checked(paths, os.path.join(out_dir, f"{split}.txt")) for split, paths in files.items()}


def unescape_moses(line: str) -> str:
    for escaped, char in _MOSES_ESCAPES:
        line = line.replace(escaped, char)
    return line


def normalizer(form: str, detok: Callable[[str], str]) -> Callable[[str], str]:
    """Source line -> untokenised text, for a source of the given form."""
    if form == "raw":
        return lambda line: line
    if form == "moses":
        return lambda line: detok(unescape_moses(line))
    if form == "stanford":
        return lambda line: detok(unescape_moses(line.replace(" ##AT##-##AT## ", "-")))
    raise ValueError(f"unknown source form {form!r}")


def dedup_key(tokenized: str) -> str:
    """Lines with equal keys are duplicates: equal up to case and spacing."""
    return "".join(tokenized.split()).lower()


def build_standin(shared_data: str, out_dir: str, valid_size: int = 2000, test_size: int = 2000, seed: int = 1,
                  sources: Sequence[Tuple[str, str]] = STANDIN_SOURCES) -> Dict[str, object]:
    """Write ``out_dir``/{train,valid,test}.txt; returns per-source and per-split counts."""
    from .tokenize import TokOptions, make_detokenizer, make_tokenizer

    if valid_size < 1 or test_size < 1:
        raise CheckError(f"--valid-size and --test-size must be positive, got {valid_size} and {test_size}")
    paths = [(os.path.join(shared_data, rel), form) for rel, form in sources]
    missing = [p for p, _ in paths if not os.path.isfile(p)]
    if missing:
        raise CheckError(f"{len(missing)} stand-in source(s) missing:\n  " + "\n  ".join(missing)
                         + "\n--shared-data must be the folder described by its README.md (../shared/data)")
    texts = [(p, form, read_lines(p)) for p, form in paths]  # every file checked before any work
    tokenize = make_tokenizer("en", TokOptions(segmenter="moses", escape=False, normalize_punct=True))
    detok = make_detokenizer("en")
    seen = set()
    unique: List[str] = []
    per_source = []
    for path, form, lines in texts:
        plain = normalizer(form, detok)
        kept = 0
        for line in lines:
            tokenized = tokenize(plain(line)) if line.strip() else ""
            key = dedup_key(tokenized)
            if key and key not in seen:
                seen.add(key)
                unique.append(tokenized)
                kept += 1
        per_source.append((os.path.relpath(path, shared_data), len(lines), kept))
    if valid_size + test_size >= len(unique):
        raise CheckError(f"--valid-size {valid_size} + --test-size {test_size} leave no training sentence "
                         f"({len(unique)} unique sentences)")
    random.Random(seed).shuffle(unique)
    splits = {"test": unique[:test_size], "valid": unique[test_size:test_size + valid_size],
              "train": unique[test_size + valid_size:]}
    os.makedirs(out_dir, exist_ok=True)
    for name, lines in splits.items():
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(line + "\n" for line in lines))
    return {"sources": per_source,
            "splits": {name: (len(lines), sum(len(x.split()) for x in lines)) for name, lines in splits.items()}}


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m localness_prep.lm_corpus",
                                     description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    onebw = sub.add_parser("onebw", help="check the 1BW shards, write train/valid/test.txt")
    onebw.add_argument("raw_dir")
    onebw.add_argument("out_dir")
    onebw.add_argument("--max-train-shards", type=int, default=99, help="use training shards 00001..N only")
    standin = sub.add_parser("standin", help="build the news-English stand-in from ../shared/data")
    standin.add_argument("shared_data")
    standin.add_argument("out_dir")
    standin.add_argument("--valid-size", type=int, default=2000)
    standin.add_argument("--test-size", type=int, default=2000)
    standin.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        if args.command == "onebw":
            counts = prepare_onebw(args.raw_dir, args.out_dir, args.max_train_shards)
        else:
            result = build_standin(args.shared_data, args.out_dir, args.valid_size, args.test_size, args.seed)
            print(f"{'source (under --shared-data)':<70} {'lines':>7} {'kept':>7}")
            for rel, n, kept in result["sources"]:
                print(f"{rel:<70} {n:>7} {kept:>7}")
            counts = result["splits"]
    except CheckError as e:
        sys.exit(f"ERROR: {e}")
    for split in ("train", "valid", "test"):
        print(f"{split}: {counts[split][0]} sentences, {counts[split][1]} words")


if __name__ == "__main__":
    main()
