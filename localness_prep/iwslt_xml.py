"""Plain text out of the IWSLT / WMT release formats, exactly as fairseq's recipes do it.

* ``segs``: IWSLT ``*.xml`` dev/test files and WMT ``*.sgm`` files -- every line holding
  ``<seg id=...>`` becomes one output line with the tags and surrounding spaces removed
  and ``’`` replaced by ``'`` (``prepare-iwslt14.sh`` / ``prepare-wmt14en2de.sh``).
  XML entities such as ``&amp;`` are left as they are, as in fairseq's data.
  With ``--exact`` the text is the reference as published instead (entities decoded, ``’``
  kept): the raw reference for sacreBLEU.
* ``train-tags``: IWSLT ``train.tags.*`` files -- lines with ``<url>``, ``<talkid>`` or
  ``<keywords>`` are dropped and the ``<title>``/``<description>`` tags (not their text)
  are removed; every other line is kept.

Command line::

    python -m localness_prep.iwslt_xml segs [--exact] IN OUT [IN OUT ...]
    python -m localness_prep.iwslt_xml train-tags IN OUT [IN OUT ...]
"""
from __future__ import annotations

import argparse
import html
import re
import sys
from typing import Iterable, Iterator, Sequence

_SEG_OPEN = re.compile(r"<seg[^>]*>\s*")
_SEG_CLOSE = re.compile(r"\s*</seg>\s*")
_DROP = ("<url>", "<talkid>", "<keywords>")
_STRIP = re.compile(r"</?(?:title|description)>")


def seg_lines(lines: Iterable[str], exact: bool = False) -> Iterator[str]:
    """The text of every ``<seg id=...>`` line (fairseq's way, or as published with ``exact``)."""
    for line in lines:
        if "<seg id" in line:
            text = _SEG_CLOSE.sub("", _SEG_OPEN.sub("", line.rstrip("\n")))
            yield html.unescape(text) if exact else text.replace("\u2019", "'")


def train_tag_lines(lines: Iterable[str]) -> Iterator[str]:
    """Transcript lines of a TED ``train.tags`` file (metadata lines removed)."""
    for line in lines:
        if not any(tag in line for tag in _DROP):
            yield _STRIP.sub("", line.rstrip("\n"))


def convert(kind: str, src: str, dst: str, exact: bool = False) -> int:
    n = 0
    with open(src, encoding="utf-8", newline="\n") as fin, \
            open(dst, "w", encoding="utf-8", newline="\n") as fout:
        rows = seg_lines(fin, exact) if kind == "segs" else train_tag_lines(fin)
        for n, line in enumerate(rows, 1):
            fout.write(line + "\n")
    return n


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["segs", "train-tags"])
    p.add_argument("--exact", action="store_true", help="segs: decode entities, keep ’ (sacreBLEU references)")
    p.add_argument("files", nargs="+", metavar="IN OUT")
    a = p.parse_args(argv)
    if len(a.files) % 2:
        p.error("give IN OUT pairs")
    for src, dst in zip(a.files[::2], a.files[1::2]):
        try:
            n = convert(a.kind, src, dst, a.exact)
        except UnicodeDecodeError as e:
            raise SystemExit(f"{src}: not valid UTF-8 ({e.reason})") from e
        if n == 0:
            what = "<seg id=...> lines" if a.kind == "segs" else "text lines"
            raise SystemExit(f"{src}: no {what} found -- is this the right file?")
        print(f"  {a.kind:>10} {n:>9} lines  {src} -> {dst}", file=sys.stderr)


if __name__ == "__main__":
    main()
