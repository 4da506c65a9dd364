"""The files an evaluation writes into its directory (:mod:`.evaluate`), and the speed line its log gives, named
once for every reader.

No imports beyond the standard library, so that light modules (the comparison's command line) can name
the files without loading the scorers.
"""
from __future__ import annotations

import re

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


#: fairseq-generate's closing line: "Translated 1,000 sentences (12,345 tokens) in 10.5s (95.0 sentences/s, 1175.3 tokens/s)"
TRANSLATED = re.compile(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s .*?([\d.]+) tokens/s\)")

#: :mod:`.timed_generate`'s line after fairseq-generate's closing one, when it decoded on the CPU
GENERATION_CPU = re.compile(r"Generation CPU time: ([\d.]+)s for ([\d,]+) target tokens")


def generation_cpu_line(cpu_seconds: float, tokens: int) -> str:
    """The line :data:`GENERATION_CPU` reads."""
    rate = tokens / cpu_seconds if cpu_seconds > 0 else float("nan")
    return f"Generation CPU time: {cpu_seconds:.3f}s for {tokens:,} target tokens ({rate:.1f} tokens per CPU second)"
