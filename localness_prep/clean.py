"""Length / length-ratio filtering of a parallel corpus, as Moses ``clean-corpus-n.perl``.

A pair is kept when both sides, after collapsing whitespace, are non-empty, have between
``--min`` and ``--max`` space-separated tokens, and neither side is more than ``--ratio``
times longer than the other.  (``clean-corpus-n.perl`` also deletes ``|`` characters,
its factor separator; after Moses tokenisation they are escaped as ``&#124;`` anyway,
so that step is left out.)

Command line, with the argument order of ``clean-corpus-n.perl``::

    python -m localness_prep.clean [--ratio 1.5] [--min 1] [--max 175] IN L1 L2 OUT

reads ``IN.L1``/``IN.L2`` and writes ``OUT.L1``/``OUT.L2``.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence


def keep_pair(a: str, b: str, min_len: int, max_len: int, ratio: float) -> bool:
    """``True`` when the whitespace-normalised pair ``a``/``b`` passes the filter."""
    na, nb = len(a.split()), len(b.split())
    if not (min_len <= na <= max_len and min_len <= nb <= max_len) or na == 0 or nb == 0:
        return False
    return na <= ratio * nb and nb <= ratio * na


def clean_files(prefix: str, l1: str, l2: str, out: str, min_len: int, max_len: int,
                ratio: float) -> tuple[int, int]:
    """Clean ``prefix.l1``/``prefix.l2`` into ``out.l1``/``out.l2``; returns (read, kept)."""
    read = kept = 0
    enc = dict(encoding="utf-8", newline="\n")
    with open(f"{prefix}.{l1}", **enc) as f1, open(f"{prefix}.{l2}", **enc) as f2, \
            open(f"{out}.{l1}", "w", **enc) as o1, open(f"{out}.{l2}", "w", **enc) as o2:
        for a, b in zip(f1, f2, strict=True):
            read += 1
            if keep_pair(a, b, min_len, max_len, ratio):
                o1.write(" ".join(a.split()) + "\n")
                o2.write(" ".join(b.split()) + "\n")
                kept += 1
    return read, kept


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ratio", type=float, default=9.0, help="max length ratio (default 9, as Moses)")
    p.add_argument("--min", type=int, default=1, dest="min_len")
    p.add_argument("--max", type=int, default=175, dest="max_len")
    p.add_argument("prefix")
    p.add_argument("l1")
    p.add_argument("l2")
    p.add_argument("out")
    a = p.parse_args(argv)
    try:
        read, kept = clean_files(a.prefix, a.l1, a.l2, a.out, a.min_len, a.max_len, a.ratio)
    except ValueError as e:  # zip(strict=True): the two sides differ in length
        raise SystemExit(f"clean: {a.prefix}.{a.l1} and {a.prefix}.{a.l2} have different line counts ({e})")
    print(f"  clean ({a.min_len}..{a.max_len} tokens, ratio {a.ratio:g}): kept {kept} of {read} pairs "
          f"({read - kept} removed)", file=sys.stderr)


if __name__ == "__main__":
    main()
