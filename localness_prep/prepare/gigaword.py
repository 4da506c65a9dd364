"""Gigaword headline generation (``data-prep/prepare-gigaword.sh``; Rush et al. 2015: first sentence ->
headline) for Fan et al. (2021), Sec. 3.1.2 / Table 2, prepared as the authors did through MASS: BERT uncased
WordPiece on both sides, one dictionary (the BERT vocabulary), fairseq-preprocess. Offline only: Gigaword is
LDC-licensed (see docs/summarization.md), so --raw-dir must hold the common layout
{train,val,test}.{source,target} (one sentence / one headline per line, e.g. Rush et al.'s release renamed).
The steps: :mod:`.summarization`."""
from __future__ import annotations

import sys
from typing import Optional, Sequence

from .summarization import main_for


def main(argv: Optional[Sequence[str]] = None) -> int:
    return main_for("prepare-gigaword.sh", "gigaword", argv)


if __name__ == "__main__":
    sys.exit(main())
