"""LEAD-3 (Nallapati et al. 2016; Fan et al. 2021, Table 2's first row): the first three sentences of the source.

Sentences end at ".", "!" or "?" (with any closing quotes or brackets right
after it) followed by a space, which splits raw text ("He left. She
stayed.") and tokenised text ("he left . she stayed .") alike. The summary's
sentences are joined with " " and keep their end marks, so files2rouge's
" ." sentence split sees them for ROUGE-L (tokenised text ends sentences in
" ."; for raw text, tokenise both sides as the references are before scoring).
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Iterable, List

_SENTENCE_END = re.compile(r"(?<=[.!?])['\"\u2019\u201d)\]]*\s+")


def split_sentences(document: str) -> List[str]:
    """Sentences of one document line, in order, without surrounding spaces."""
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(document.strip()):
        end = match.start() + len(match.group().rstrip())
        pieces.append(document.strip()[start:end])
        start = match.end()
    pieces.append(document.strip()[start:])
    return [p.strip() for p in pieces if p.strip()]


def lead(document: str, sentences: int = 3) -> str:
    """The first ``sentences`` sentences of ``document`` (all of them if it has fewer)."""
    if sentences < 1:
        raise ValueError(f"--sentences must be >= 1, got {sentences}")
    return " ".join(split_sentences(document)[:sentences])


def lead_lines(documents: Iterable[str], sentences: int = 3) -> List[str]:
    return [lead(document, sentences) for document in documents]


def main(argv=None) -> None:
    """``python scripts/lead3.py SOURCE OUTPUT [--sentences 3]``: one summary per source line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="one document per line (e.g. test.source)")
    parser.add_argument("output", help="where to write one LEAD summary per line (must not exist)")
    parser.add_argument("--sentences", type=int, default=3, help="leading sentences to keep [3]")
    args = parser.parse_args(argv)
    if args.sentences < 1:
        parser.error(f"--sentences {args.sentences}: keep at least 1 sentence")
    if not os.path.isfile(args.source):
        parser.error(f"source {args.source}: no such file")
    if os.path.exists(args.output):
        parser.error(f"{args.output} exists; choose another output file (nothing was overwritten)")
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        parser.error(f"output {args.output}: no directory {os.path.dirname(os.path.abspath(args.output))}")
    with open(args.source, encoding="utf-8") as f:
        summaries = lead_lines((line.rstrip("\n") for line in f), args.sentences)
    if not summaries:
        parser.error(f"source {args.source} is empty: no document to summarize (nothing was written)")
    with open(args.output, "w", encoding="utf-8") as f:
        f.writelines(s + "\n" for s in summaries)
    print(f"{len(summaries)} LEAD-{args.sentences} summaries -> {args.output}")


if __name__ == "__main__":
    main()
