"""The files an evaluation writes into its directory (:mod:`.evaluate`), named once for every reader.

No imports beyond the standard library, so that light modules (the comparison's command line) can name
the files without loading the scorers.
"""
from __future__ import annotations

HYP_TOK, HYP_DETOK = "hyp.tok.txt", "hyp.detok.txt"  # hypotheses, tokenised and detokenised
REF_TOK = "ref.tok.txt"  # the tokenised reference the hypotheses were scored against
SCORES = "scores.json"
STARTED = ".evaluation"  # written first: the directory's evaluation files are the evaluation's own


def generate_output(subset: str) -> str:
    """fairseq-generate's output for ``subset`` (its S-, T-, H- and D- lines)."""
    return f"generate-{subset}.txt"


def generate_log(subset: str) -> str:
    """fairseq-generate's log for ``subset``, which ends with its speed line."""
    return f"generate-{subset}.log"
