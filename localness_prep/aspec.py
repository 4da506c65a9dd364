"""Japanese and English columns of ASPEC-JE files.

ASPEC-JE lines are ``' ||| '``-separated::

    train/train-N.txt :  SCORE ||| DOC-ID ||| SENT-ID ||| JAPANESE ||| ENGLISH
    dev/dev.txt, devtest/devtest.txt, test/test.txt :  DOC-ID ||| SENT-ID ||| JAPANESE ||| ENGLISH

Command line -- each ``--job`` appends the two text columns of ``IN`` to ``OUT.ja``/``OUT.en``
(so ``train-1.txt`` and ``train-2.txt`` can go to one ``train`` prefix)::

    python -m localness_prep.aspec --job OUT IN [--job OUT IN ...]
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

SEP = " ||| "
FIELDS = {5: "train (score ||| doc ||| sent ||| ja ||| en)", 4: "dev/test (doc ||| sent ||| ja ||| en)"}


def split_line(line: str, path: str, lineno: int) -> tuple[str, str]:
    """(japanese, english) of one ASPEC line; exits with a clear message on a malformed one."""
    fields = line.rstrip("\n").split(SEP)
    if len(fields) not in FIELDS:
        raise SystemExit(f"{path}:{lineno}: expected 4 or 5 ' ||| '-separated fields "
                         f"({' or '.join(FIELDS.values())}), found {len(fields)}: {line[:120]!r}")
    return fields[-2].strip(), fields[-1].strip()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job", nargs=2, action="append", required=True, metavar=("OUT", "IN"))
    a = p.parse_args(argv)
    started: set[str] = set()
    enc = dict(encoding="utf-8", newline="\n")
    for out, src in a.job:
        mode = "a" if out in started else "w"
        started.add(out)
        n = 0
        with open(src, **enc) as fin, open(f"{out}.ja", mode, **enc) as fja, open(f"{out}.en", mode, **enc) as fen:
            try:
                for n, line in enumerate(fin, 1):
                    ja, en = split_line(line, src, n)
                    fja.write(ja + "\n")
                    fen.write(en + "\n")
            except UnicodeDecodeError as e:
                raise SystemExit(f"{src}: not valid UTF-8 after line {n} ({e.reason})") from e
        if n == 0:
            raise SystemExit(f"{src}: empty file")
        print(f"  aspec {n:>9} pairs  {src} -> {out}.{{ja,en}}", file=sys.stderr)


if __name__ == "__main__":
    main()
