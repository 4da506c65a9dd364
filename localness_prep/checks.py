"""Sanity checks on text corpora, and the final size report of a prepared data set.

Command line::

    python -m localness_prep.checks utf8 FILE [FILE ...]
    python -m localness_prep.checks parallel SRC TGT [SRC TGT ...]
    python -m localness_prep.checks report OUT_DIR SRC_LANG TGT_LANG

``utf8`` and ``parallel`` exit with status 1 and say what is wrong (file, line, counts);
``report`` prints the line counts per split and the dictionary sizes of ``OUT_DIR/data-bin``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

SPLITS = ("train", "valid", "test")


class CheckError(Exception):
    """A corpus failed a check; the message says which file and why."""


def scan(path: str) -> int:
    """Number of lines of ``path`` (a last line without newline counts); checks UTF-8."""
    if not os.path.isfile(path):
        raise CheckError(f"{path}: no such file")
    n = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CheckError(f"{path}:{n}: not valid UTF-8 ({e.reason} at byte {e.start} of the line: "
                                 f"{raw[max(0, e.start - 20):e.start + 10]!r}). Convert the file to UTF-8 "
                                 "(e.g. iconv -f LATIN1 -t UTF-8) or fix that line.") from None
    return n


def check_parallel(src: str, tgt: str) -> int:
    """Line count shared by ``src`` and ``tgt``; raises :class:`CheckError` if they differ or are empty."""
    ns, nt = scan(src), scan(tgt)
    if ns != nt:
        raise CheckError(f"line counts differ: {src} has {ns} lines but {tgt} has {nt}; the two sides of a "
                         "parallel corpus must be line-aligned (one sentence per line)")
    if ns == 0:
        raise CheckError(f"{src} and {tgt} are empty")
    return ns


def report(out: str, src: str, tgt: str) -> str:
    """Table of line counts per split (tokenised and BPE text) and dictionary sizes."""
    rows = [f"{'split':<7}{'pairs':>10}   files"]
    for split in SPLITS:
        pair = [os.path.join(out, f"{split}.{lang}") for lang in (src, tgt)]
        rows.append(f"{split:<7}{check_parallel(*pair):>10}   {pair[0]}, .{tgt}")
    binned = os.path.join(out, "data-bin")
    for lang in (src, tgt):
        d = os.path.join(binned, f"dict.{lang}.txt")
        rows.append(f"vocabulary {lang}: {scan(d)} types ({d}; fairseq adds 4 special symbols)")
    missing = [f"{s}.{src}-{tgt}.{l}.{ext}" for s in SPLITS for l in (src, tgt) for ext in ("bin", "idx")
               if not os.path.isfile(os.path.join(binned, f"{s}.{src}-{tgt}.{l}.{ext}"))]
    if missing:
        raise CheckError(f"{binned} lacks {', '.join(missing)} -- fairseq-preprocess did not finish")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cmd", choices=["utf8", "parallel", "report"])
    p.add_argument("args", nargs="+")
    a = p.parse_args(argv)
    try:
        if a.cmd == "utf8":
            for path in a.args:
                print(f"  {scan(path):>9} lines, UTF-8 ok  {path}", file=sys.stderr)
        elif a.cmd == "parallel":
            if len(a.args) % 2:
                p.error("give SRC TGT pairs")
            for s, t in zip(a.args[::2], a.args[1::2]):
                print(f"  {check_parallel(s, t):>9} pairs, UTF-8 ok  {s} | {t}", file=sys.stderr)
        else:
            if len(a.args) != 3:
                p.error("report OUT_DIR SRC_LANG TGT_LANG")
            print(report(*a.args))
    except CheckError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
