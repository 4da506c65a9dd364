"""ROUGE-1 / ROUGE-2 / ROUGE-L F1 exactly as files2rouge computes them, in pure Python.

Fan et al. (2021) score with files2rouge (Sec. 3.2.2, footnote 1), which runs
ROUGE-1.5.5.pl as ``-e DATA -c 95 -r 1000 -n 2 -a -m`` on one document per
line. Every choice below is that script's (read in its source, RELEASE-1.5.5):

* sentences: files2rouge splits each line at the end-of-sentence string " ."
  (``--eos``, default "."); ROUGE reads each sentence up to its first "<" (the
  HTML-like SEE format), so a sentence starting with "<" is dropped.
* tokens: ASCII letters are lower-cased, every character other than
  [A-Za-z0-9] separates tokens, and with ``-m`` (files2rouge's default since
  2020; pyrouge added it unconditionally before) every token longer than 3
  characters is Porter-stemmed (:mod:`.porter`). Its WordNet exception table is
  empty in files2rouge's copy (0 entries), so stemming is Porter alone.
* ROUGE-N (Lin 2004, Eq. 1): clipped n-gram matches over the whole summary
  (n-grams run across sentence boundaries); R = hits / reference n-grams,
  P = hits / candidate n-grams.
* ROUGE-L: summary-level union LCS (Lin 2004, Sec. 3.2): for every reference
  sentence the union of the positions in one LCS with each candidate sentence,
  each hit clipped by the remaining unigram counts of both summaries;
  R = hits / reference tokens, P = hits / candidate tokens.
* per document R and P are rounded to 5 decimals, F = PR / (0.5 P + 0.5 R)
  from the rounded values, also rounded (``-p 0.5``: F1).
* the reported score is ROUGE's bootstrap average (``-r 1000``): the mean over
  1,000 resamples, resample r drawn with Perl's ``srand(r)``/``rand`` (the
  48-bit drand48 generator), of the mean F over a resample of the documents,
  in ROUGE's order of its evaluation ids. ``average="mean"`` gives the plain
  mean instead.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

from .porter import stem

METRICS = ("rouge-1", "rouge-2", "rouge-l")
RESAMPLES = 1000  # files2rouge: -r 1000
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_SEE_SENTENCE = re.compile(r"[^<]+")


def split_sentences(line: str, eos: str = ".") -> List[str]:
    """The sentences ROUGE sees in one line of a files2rouge input file."""
    pieces = f" {eos}\n".join(line.strip().split(f" {eos}")).split("\n")
    sentences = []
    for piece in pieces:
        match = _SEE_SENTENCE.match(piece)
        if match:  # ROUGE-1.5.5 drops a sentence with no text before its first "<"
            sentences.append(match.group())
    return sentences


def tokenize(text: str, stemming: bool = True) -> List[str]:
    """ROUGE-1.5.5's tokens: runs of [A-Za-z0-9], lower-cased; Porter stems of tokens over 3 characters."""
    tokens = [token.lower() for token in _TOKEN.findall(text)]
    if stemming:
        tokens = [stem(token) if len(token) > 3 else token for token in tokens]
    return tokens


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _round5(value: float) -> float:
    return float("%.5f" % value)  # ROUGE's sprintf("%7.5f")


def f_measure(recall: float, precision: float, alpha: float = 0.5) -> Tuple[float, float, float]:
    """(R, P, F) rounded as ROUGE-1.5.5 does: F from the already rounded R and P."""
    recall, precision = _round5(recall), _round5(precision)
    denominator = (1 - alpha) * precision + alpha * recall
    return recall, precision, _round5(precision * recall / denominator) if denominator > 0 else 0.0


def rouge_n(reference: Sequence[str], candidate: Sequence[str], n: int) -> Tuple[float, float, float]:
    """(R, P, F) of ROUGE-N for one document (tokens of all its sentences)."""
    ref, cand = ngrams(reference, n), ngrams(candidate, n)
    hits = sum(min(count, cand[gram]) for gram, count in ref.items())
    ref_total, cand_total = sum(ref.values()), sum(cand.values())
    return f_measure(hits / ref_total if ref_total else 0.0, hits / cand_total if cand_total else 0.0)


def lcs_positions(reference: Sequence[str], candidate: Sequence[str]) -> List[int]:
    """Positions in ``reference`` of one longest common subsequence with ``candidate``.

    ROUGE-1.5.5's choice among equally long ones: the DP table is walked back
    from the end, diagonally on a match, else up (dropping a reference token)
    when that keeps the length, else left.
    """
    m, n = len(reference), len(candidate)
    length = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if reference[i - 1] == candidate[j - 1]:
                length[i][j] = length[i - 1][j - 1] + 1
            else:
                length[i][j] = max(length[i - 1][j], length[i][j - 1])
    positions, i, j = [], m, n
    while i and j:
        if reference[i - 1] == candidate[j - 1]:
            i, j = i - 1, j - 1
            positions.append(i)
        elif length[i - 1][j] >= length[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return positions[::-1]


def rouge_l(reference: Sequence[Sequence[str]], candidate: Sequence[Sequence[str]]) -> Tuple[float, float, float]:
    """(R, P, F) of summary-level ROUGE-L (union LCS, Lin 2004 Sec. 3.2) over tokenised sentences."""
    ref_left = Counter(token for sentence in reference for token in sentence)
    cand_left = Counter(token for sentence in candidate for token in sentence)
    cand_total = sum(cand_left.values())
    hits = ref_total = 0
    for sentence in reference:
        ref_total += len(sentence)
        union = set()
        for other in candidate:
            union.update(lcs_positions(sentence, other))
        for position in sorted(union):
            token = sentence[position]
            if ref_left[token] > 0 and cand_left[token] > 0:  # clip: a token is matched at most as often as it occurs
                hits += 1
                ref_left[token] -= 1
                cand_left[token] -= 1
    return f_measure(hits / ref_total if ref_total else 0.0, hits / cand_total if cand_total else 0.0)


def score_document(reference: str, candidate: str, stemming: bool = True, eos: str = ".") -> Dict[str, Tuple[float, float, float]]:
    """ROUGE-1/2/L (R, P, F) of one candidate line against one reference line, as files2rouge scores it."""
    ref_sentences = [tokenize(s, stemming) for s in split_sentences(reference, eos)]
    cand_sentences = [tokenize(s, stemming) for s in split_sentences(candidate, eos)]
    ref_tokens = [t for s in ref_sentences for t in s]
    cand_tokens = [t for s in cand_sentences for t in s]
    return {
        "rouge-1": rouge_n(ref_tokens, cand_tokens, 1),
        "rouge-2": rouge_n(ref_tokens, cand_tokens, 2),
        "rouge-l": rouge_l(ref_sentences, cand_sentences),
    }


def files2rouge_order(line_numbers: Sequence[int]) -> List[int]:
    """Indices into ``line_numbers`` in the order of ROUGE's instances for files2rouge's files.

    files2rouge writes line i to ``s.{i}.txt``; pyrouge numbers the evaluations
    in sorted file-name order from 1; ROUGE sorts the instance ids
    ``"{eval}.1"`` as strings.
    """
    by_name = sorted(range(len(line_numbers)), key=lambda k: f"s.{line_numbers[k]}.txt")
    eval_ids = {f"{rank + 1}.1": doc for rank, doc in enumerate(by_name)}
    return [eval_ids[key] for key in sorted(eval_ids)]


def perl_bootstrap_indices(n: int, resamples: int = RESAMPLES) -> np.ndarray:
    """(resamples, n) draws ``int(rand(n))`` after Perl's ``srand(r)``, r = 0 .. resamples - 1.

    Perl (>= 5.20) uses drand48 everywhere: x <- (0x5DEECE66D x + 11) mod 2^48,
    seeded x = (r << 16) + 0x330E, rand() = x / 2^48. uint64 arithmetic wraps
    mod 2^64, a multiple of 2^48, so the masked product is exact.
    """
    state = (np.arange(resamples, dtype=np.uint64) << np.uint64(16)) + np.uint64(0x330E)
    mult, inc, mask = np.uint64(0x5DEECE66D), np.uint64(0xB), np.uint64((1 << 48) - 1)
    draws = np.empty((resamples, n), dtype=np.int64)
    with np.errstate(over="ignore"):
        for k in range(n):
            state = (state * mult + inc) & mask
            draws[:, k] = (state.astype(np.float64) * 2.0 ** -48 * n).astype(np.int64)
    return draws


def bootstrap_average(scores: np.ndarray, order: Sequence[int], resamples: int = RESAMPLES) -> np.ndarray:
    """ROUGE-1.5.5's reported average of per-document ``scores`` (docs x k): mean of the resample means."""
    ordered = scores[list(order)]
    n = len(ordered)
    draws = perl_bootstrap_indices(n, resamples)
    totals = np.zeros((resamples, scores.shape[1]))
    for k in range(n):  # summed in draw order, as Perl does
        totals += ordered[draws[:, k]]
    means = np.sort(totals / n, axis=0)
    averages = []
    for column in means.T:
        total = 0.0
        for value in column:  # plain left-to-right sum over the sorted resamples, as Perl does
            total += float(value)
        averages.append(_round5(total / resamples))
    return np.array(averages)


@dataclass
class RougeResult:
    """F1 (and R, P) x 100 of ROUGE-1, ROUGE-2, ROUGE-L over a corpus."""

    scores: Dict[str, Dict[str, float]]  # metric -> {"r", "p", "f"} as fractions
    documents: int

    def f1(self) -> Tuple[float, float, float]:
        return tuple(round(100 * self.scores[m]["f"], 2) for m in METRICS)

    def describe(self) -> str:
        rows = [f"{m.upper():<8} R {s['r']:.5f}  P {s['p']:.5f}  F {s['f']:.5f}" for m, s in self.scores.items()]
        return "\n".join(rows + [f"({self.documents} documents)"])


def corpus_rouge(
    references: Sequence[str], candidates: Sequence[str], stemming: bool = True, eos: str = ".",
    average: str = "bootstrap", ignore_empty: bool = False,
) -> RougeResult:
    """files2rouge's ROUGE-1/2/L over aligned lines; ``average`` "bootstrap" (files2rouge's numbers) or "mean"."""
    if len(references) != len(candidates):
        raise ValueError(f"references have {len(references)} lines but summaries {len(candidates)}: "
                         "they must be line-aligned (one document per line)")
    if average not in ("bootstrap", "mean"):
        raise ValueError(f"average: {average!r} is not 'bootstrap' or 'mean'")
    rows, kept = [], []
    for number, (reference, candidate) in enumerate(zip(references, candidates)):
        empty = [name for name, text in (("reference", reference), ("summary", candidate)) if not text.strip()]
        if empty:
            if ignore_empty:
                continue
            raise ValueError(f"line {number + 1}: empty {empty[0]} (files2rouge refuses it; pass ignore_empty / "
                             "--ignore-empty to skip such lines)")
        document = score_document(reference, candidate, stemming, eos)
        rows.append([value for metric in METRICS for value in document[metric]])
        kept.append(number)
    if not rows:
        raise ValueError("no document to score")
    table = np.array(rows, dtype=np.float64)
    if average == "bootstrap":
        values = bootstrap_average(table, files2rouge_order(kept))
    else:
        values = np.array([_round5(v) for v in table.mean(axis=0)])
    scores = {metric: dict(zip("rpf", values[3 * k:3 * k + 3])) for k, metric in enumerate(METRICS)}
    return RougeResult(scores={m: {k: float(v) for k, v in s.items()} for m, s in scores.items()}, documents=len(kept))


def read_lines(path: str) -> List[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def merge_wordpieces(line: str) -> str:
    """BERT WordPiece text back to words, as the authors' test scripts do (``sed 's/ ##//g'``)."""
    return line.replace(" ##", "")


def read_fairseq_generate(path: str) -> Tuple[List[str], List[str]]:
    """(references, hypotheses) from fairseq-generate's output, in the order of its T- lines.

    That is the order of the authors' ``grep "T-"`` / ``grep "H-"`` files, which
    files2rouge's bootstrap average depends on (slightly).
    """
    targets: Dict[int, str] = {}
    hypotheses: Dict[int, str] = {}
    for line in read_lines(path):
        fields = line.split("\t")
        if line.startswith("T-"):
            targets[int(fields[0][2:])] = fields[1] if len(fields) > 1 else ""
        elif line.startswith("H-") and int(fields[0][2:]) not in hypotheses:  # the best of an nbest list
            hypotheses[int(fields[0][2:])] = fields[2] if len(fields) > 2 else ""
    if not targets or set(targets) != set(hypotheses):
        raise ValueError(f"{path}: not a fairseq-generate output with a T- and an H- line per sample "
                         f"({len(targets)} T-, {len(hypotheses)} H- lines)")
    ids = list(targets)  # dicts keep insertion order: the file's
    return [targets[i] for i in ids], [hypotheses[i] for i in ids]


def score_files(reference_path: str, summary_path: str, **kwargs) -> RougeResult:
    return corpus_rouge(read_lines(reference_path), read_lines(summary_path), **kwargs)

