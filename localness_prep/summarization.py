"""CNN/DailyMail and Gigaword in the common ``{train,val,test}.{source,target}`` layout -> BERT WordPiece text.

Fan et al. (2021) took their summarization data from MASS (Song et al. 2019;
LibertFan/MAN summarization/README.md: "refer to MASS to preprocess"): text
tokenised with BERT's uncased WordPiece vocabulary (MASS-summarization/encode.py
calls ``BertTokenizer.from_pretrained('bert-base-uncased')._tokenize``; lines
that are empty on either side are dropped) and binarised with that vocabulary
as the one dictionary of both sides. The vocabulary (bert-base-uncased
``vocab.txt``, 30,522 entries) is a download this module never makes: pass it
with ``--bert-vocab``. The tokeniser below is BERT's: clean the text, put spaces
around CJK ideographs, split on whitespace, lower-case and strip accents (NFD
without combining marks), split off every punctuation character, then split
each word greedily into the longest vocabulary pieces (``##`` marks a
continuation; a word with no split, or over 100 characters, is ``[UNK]``).

Command line (run by data-prep/prepare-{cnndm,gigaword}.sh)::

    python -m localness_prep.summarization prepare RAW_DIR BERT_VOCAB OUT_DIR [--workers N]

writes OUT_DIR/{train,valid,test}.{source,target} (WordPiece text), OUT_DIR/dict.txt (the vocabulary
in fairseq's "token count" format) and OUT_DIR/raw/test.{source,target} (the test text as given). Every
file is checked (present, UTF-8, line-aligned) before anything is written.
"""
from __future__ import annotations

import argparse
import os
import sys
import unicodedata
from multiprocessing import Pool
from typing import Dict, List, Sequence, Tuple

from .checks import CheckError, check_parallel

#: fairseq split -> file stem in the common layout (fairseq's BART / Hugging Face CNN-DM files)
SPLITS: Dict[str, str] = {"train": "train", "valid": "val", "test": "test"}
SIDES = ("source", "target")
SPECIAL_TOKENS = ("[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]")  # never split or lower-cased
UNKNOWN = "[UNK]"
MAX_WORD_CHARS = 100
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def check_layout(raw_dir: str) -> Dict[str, int]:
    """Lines per split; every missing file is named at once, then UTF-8 and alignment are checked."""
    missing = [f"{stem}.{side}" for stem in SPLITS.values() for side in SIDES
               if not os.path.isfile(os.path.join(raw_dir, f"{stem}.{side}"))]
    if missing:
        raise CheckError(f"{raw_dir} lacks {', '.join(missing)}: expected the common layout "
                         "{train,val,test}.{source,target} (one document / one summary per line)")
    return {split: check_parallel(*(os.path.join(raw_dir, f"{stem}.{side}") for side in SIDES))
            for split, stem in SPLITS.items()}


def load_vocab(path: str) -> Dict[str, int]:
    """BERT's vocab.txt: one piece a line, its line number its id."""
    if not os.path.isfile(path):
        raise CheckError(f"--bert-vocab {path}: no such file (bert-base-uncased's vocab.txt, 30,522 lines)")
    with open(path, encoding="utf-8") as f:
        pieces = [line.rstrip("\n") for line in f]
    bad = [p for p in pieces if not p or p != p.strip() or " " in p]
    if bad or UNKNOWN not in pieces:
        raise CheckError(f"--bert-vocab {path}: not a WordPiece vocabulary (one piece per line, with {UNKNOWN})")
    clash = [p for p in pieces if p in FAIRSEQ_SPECIALS]
    if clash or len(set(pieces)) != len(pieces):
        raise CheckError(f"--bert-vocab {path}: duplicate pieces or fairseq's own symbols {clash}")
    return {piece: i for i, piece in enumerate(pieces)}


def _is_control(char: str) -> bool:
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    # BERT counts every non-alphanumeric ASCII character as punctuation, e.g. "$" and "^"
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _clean(text: str) -> str:
    out = []
    for char in text:
        cp = ord(char)
        if cp == 0 or cp == 0xFFFD or _is_control(char):
            continue
        if any(lo <= cp <= hi for lo, hi in CJK_RANGES):
            out.append(f" {char} ")
        elif char in "\t\n\r" or unicodedata.category(char) == "Zs":
            out.append(" ")
        else:
            out.append(char)
    return "".join(out)


def basic_tokenize(text: str) -> List[str]:
    """BERT's uncased basic tokenisation (before WordPiece)."""
    tokens = []
    for word in _clean(text).split():
        if word in SPECIAL_TOKENS:
            tokens.append(word)
            continue
        word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
        current = ""
        for char in word:
            if _is_punctuation(char):
                tokens.extend([current, char] if current else [char])
                current = ""
            else:
                current += char
        if current:
            tokens.append(current)
    return tokens


def wordpiece(word: str, vocab: Dict[str, int]) -> List[str]:
    """Greedy longest-match-first split of one word into vocabulary pieces."""
    if len(word) > MAX_WORD_CHARS:
        return [UNKNOWN]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return [UNKNOWN]
        pieces.append(piece)
        start = end
    return pieces


def encode(text: str, vocab: Dict[str, int]) -> str:
    return " ".join(piece for word in basic_tokenize(text) for piece in wordpiece(word, vocab))


_VOCAB: Dict[str, int] = {}  # set once per worker process


def _set_vocab(vocab: Dict[str, int]) -> None:
    _VOCAB.clear()
    _VOCAB.update(vocab)


def _encode_pair(pair: Tuple[str, str]):
    source, target = (side.strip() for side in pair)
    if not source or not target:
        return None  # MASS's encode.py drops a pair with an empty side
    return encode(source, _VOCAB), encode(target, _VOCAB)


def prepare(raw_dir: str, vocab_path: str, out_dir: str, workers: int = 1) -> Dict[str, Tuple[int, int]]:
    """Write the WordPiece splits, dict.txt and raw/test.*; returns {split: (pairs kept, pairs dropped)}."""
    check_layout(raw_dir)
    vocab = load_vocab(vocab_path)
    os.makedirs(os.path.join(out_dir, "raw"), exist_ok=True)
    counts = {}
    _set_vocab(vocab)
    with Pool(workers, initializer=_set_vocab, initargs=(vocab,)) if workers > 1 else _Serial() as pool:
        for split, stem in SPLITS.items():
            paths = [os.path.join(raw_dir, f"{stem}.{side}") for side in SIDES]
            # lines end at "\n" only, as check_layout counted them: a stray "\r" inside an article (universal
            # newlines would end a line there) would shift every later pair against its summary
            with open(paths[0], encoding="utf-8", newline="\n") as src, \
                    open(paths[1], encoding="utf-8", newline="\n") as tgt:
                pairs = [tuple(side.replace("\r", " ") for side in pair) for pair in zip(src, tgt, strict=True)]
            encoded = list(pool.imap(_encode_pair, pairs, chunksize=64))
            kept = [e for e in encoded if e is not None]
            for k, side in enumerate(SIDES):
                with open(os.path.join(out_dir, f"{split}.{side}"), "w", encoding="utf-8") as f:
                    f.writelines(e[k] + "\n" for e in kept)
                if split == "test":  # the text as given, for scoring against untokenised references
                    with open(os.path.join(out_dir, "raw", f"test.{side}"), "w", encoding="utf-8") as f:
                        f.writelines(p[k].strip() + "\n" for p, e in zip(pairs, encoded) if e is not None)
            counts[split] = (len(kept), len(pairs) - len(kept))
    with open(os.path.join(out_dir, "dict.txt"), "w", encoding="utf-8") as f:
        f.writelines(f"{piece} 1\n" for piece in vocab)
    return counts


class _Serial:
    """Pool's imap in this process (one worker)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def imap(function, items, chunksize=1):
        return map(function, items)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    check = sub.add_parser("check", help="check the files of RAW_DIR")
    check.add_argument("raw_dir")
    run = sub.add_parser("prepare", help="check, tokenise and write the WordPiece text and dict.txt")
    run.add_argument("raw_dir")
    run.add_argument("bert_vocab")
    run.add_argument("out_dir")
    run.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "check":
            for split, n in check_layout(args.raw_dir).items():
                print(f"  {split:<6} {n:>9} pairs, UTF-8 ok", file=sys.stderr)
            return
        for split, (kept, dropped) in prepare(args.raw_dir, args.bert_vocab, args.out_dir, args.workers).items():
            note = f" ({dropped} with an empty side dropped, as MASS's encode.py does)" if dropped else ""
            print(f"  {split:<6} {kept:>9} pairs{note}", file=sys.stderr)
    except CheckError as err:
        print(f"ERROR: {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
