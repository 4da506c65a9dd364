"""A train-short / test-long split: train on short sentences, test on held-out sentences of every length.

The question ALiBi (Press et al. 2022) and FIRE (Li et al. 2024) ask of language models -- does a model
trained on short inputs keep working on longer ones? -- asked of an encoder-decoder translation model.
Deterministic, no randomness (the same ranking as :mod:`.sample`):

1. pairs are ranked by the SHA-1 of ``source TAB target``;
2. **test** takes, in that order, up to ``--per-bucket`` pairs from each source-length bucket
   (words, split on whitespace; default edges 10,20,30,40,60: buckets 1-10 ... 41-60 and >60);
3. **valid** takes the next ``--valid`` pairs whose source has at most ``--max-len`` words and whose
   target has at most 1.5 x ``--max-len`` words;
4. **train** is every other pair within those limits; longer pairs are not used.

Command line::

    python -m localness_prep.length_split --src FILE.de --tgt FILE.en --out DIR
        [--max-len 20] [--per-bucket 200] [--valid 500] [--edges 10,20,30,40,60]

writes ``DIR/{train,valid,test}.{SRC,TGT}`` (languages from the file suffixes) and prints the counts.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from typing import Dict, List, Sequence

from .checks import CheckError, check_parallel


def bucket_of(length: int, edges: Sequence[int]) -> int:
    """Index of the (low, high] bucket of ``length`` for upper edges ``edges`` (the last bucket is open)."""
    for index, edge in enumerate(edges):
        if length <= edge:
            return index
    return len(edges)


def split_by_length(src: Sequence[str], tgt: Sequence[str], max_len: int, per_bucket: int, n_valid: int,
                    edges: Sequence[int]) -> Dict[str, List[int]]:
    """Line indices of train, valid and test (see the module docstring); each split keeps the corpus order."""
    if max_len < 1 or per_bucket < 1 or n_valid < 1:
        raise CheckError("--max-len, --per-bucket and --valid must be positive")
    if list(edges) != sorted(set(edges)) or not edges:
        raise CheckError(f"--edges {','.join(map(str, edges))}: give increasing word counts")
    order = sorted(range(len(src)), key=lambda i: hashlib.sha1(f"{src[i]}\t{tgt[i]}".encode()).hexdigest())
    taken = [0] * (len(edges) + 1)
    test = []
    for i in order:
        bucket = bucket_of(len(src[i].split()), edges)
        if src[i].strip() and tgt[i].strip() and taken[bucket] < per_bucket:
            taken[bucket] += 1
            test.append(i)
    held = set(test)

    def short(i: int) -> bool:
        return 0 < len(src[i].split()) <= max_len and 0 < len(tgt[i].split()) <= 1.5 * max_len

    rest = [i for i in order if i not in held and short(i)]
    if len(rest) <= n_valid:
        raise CheckError(f"only {len(rest)} pairs of at most {max_len} words remain: cannot take {n_valid} valid pairs")
    return {"train": sorted(rest[n_valid:]), "valid": sorted(rest[:n_valid]), "test": sorted(test)}


def read(path: str) -> List[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().rstrip("\n").split("\n")


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--max-len", type=int, default=20)
    p.add_argument("--per-bucket", type=int, default=200)
    p.add_argument("--valid", type=int, default=500)
    p.add_argument("--edges", default="10,20,30,40,60")
    a = p.parse_args(argv)
    try:
        check_parallel(a.src, a.tgt)
        edges = [int(x) for x in a.edges.split(",")]
        src, tgt = read(a.src), read(a.tgt)
        splits = split_by_length(src, tgt, a.max_len, a.per_bucket, a.valid, edges)
    except (CheckError, ValueError) as e:
        sys.exit(f"length_split: {e}")
    s_lang, t_lang = a.src.rsplit(".", 1)[-1], a.tgt.rsplit(".", 1)[-1]
    os.makedirs(a.out, exist_ok=True)
    for split, idx in splits.items():
        for lang, lines in ((s_lang, src), (t_lang, tgt)):
            with open(os.path.join(a.out, f"{split}.{lang}"), "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(lines[i] + "\n" for i in idx))
        print(f"{split}: {len(idx)} pairs")


if __name__ == "__main__":
    main()
