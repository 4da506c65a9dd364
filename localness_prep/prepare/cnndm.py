"""CNN/DailyMail (``data-prep/prepare-cnndm.sh``; Hermann et al. 2015; See et al. 2017's non-anonymised version)
for Fan et al. (2021), Sec. 3.1.2 / Table 2, prepared as the authors did through MASS: BERT uncased WordPiece on
both sides, one dictionary (the BERT vocabulary), fairseq-preprocess. Offline only: the articles are not ours to
redistribute (see docs/summarization.md), so --raw-dir must hold the common layout
{train,val,test}.{source,target} (one article / one summary per line). The steps: :mod:`.summarization`."""
from __future__ import annotations

import sys
from typing import Optional, Sequence

from .summarization import main_for


def main(argv: Optional[Sequence[str]] = None) -> int:
    return main_for("prepare-cnndm.sh", "cnndm", argv)


if __name__ == "__main__":
    sys.exit(main())
