"""BLEU as the localness papers report it, plus sacreBLEU/chrF and paired bootstrap significance.

* **Tokenised BLEU** -- corpus BLEU-4 on the tokenised text as it is (``multi-bleu.perl`` /
  ``fairseq-score``: no smoothing, brevity penalty from the total lengths); optionally
  case-insensitive, and optionally with *compound splitting* for English-German
  (fairseq's ``scripts/compound_split_bleu.sh``, the convention of Vaswani et al. 2017).
* **sacreBLEU and chrF** on detokenised hypotheses against raw references, with signatures.
* **Paired bootstrap resampling** (Koehn 2004) of a system against a baseline on the same test set, with
  sacreBLEU's test statistic and p-value (:func:`bootstrap_p`: how often a resample's |difference|, less the
  resamples' mean |difference|, exceeds the observed |difference|; one-sided in the direction of the observed
  difference once that is clear of zero), reported with the papers' arrows: ``⇑``/``⇓`` p < 0.01,
  ``↑``/``↓`` p < 0.05 (better/worse than the baseline), nothing otherwise. With several outputs per system (one
  per training seed) the resampling unit stays the test sentence: every drawn sentence brings all of its outputs.

Scoring existing files (the hypothesis/reference files ``scripts/evaluate.sh`` writes)::

    python -m fairseq_localness.evaluation.scoring --hyp hyp.tok.txt --ref ref.tok.txt
        [--lowercase] [--compound-split] [--detok-hyp hyp.detok.txt --detok-ref raw.ref --lang en]
        [--baseline-hyp FILE_OR_EVAL_DIR] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.base import Metric

from ..cli import int_at_least
from .outputs import HYP_DETOK, HYP_TOK

# fairseq compound_split_bleu.sh: perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'
_COMPOUND = re.compile(r"(\S)-(\S)")
_SPLIT_HYPHEN = re.compile(r" (?:@-@|##AT##-##AT##) ")


def tokenizer_argument(text: str) -> str:
    """argparse type of a sacreBLEU tokenizer option: the name, checked when the arguments are read."""
    if text not in BLEU.TOKENIZERS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a sacreBLEU tokenizer: {', '.join(BLEU.TOKENIZERS)}")
    return text


def compound_split(line: str) -> str:
    """Split hyphenated compounds the way ``compound_split_bleu.sh`` does.

    Hyphens already split by Moses ``-a`` (``@-@``) or in the Stanford release
    (``##AT##-##AT##``) are first re-joined, so every tokenisation ends up in the same
    ``long ##AT##-##AT## term`` form. Like the Perl original (non-overlapping matches),
    ``a-b-c`` becomes ``a ##AT##-##AT## b-c``.
    """
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", _SPLIT_HYPHEN.sub("-", line))


def tokenized_bleu_metric(lowercase: bool = False) -> BLEU:
    """multi-bleu.perl: the text is split on whitespace only, no smoothing."""
    return BLEU(tokenize="none", smooth_method="none", lowercase=lowercase, force=True)


def sacrebleu_tokenizer(lang: str) -> str:
    return {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}.get(lang, "13a")


@dataclass
class Significance:
    metric: str
    system: float
    baseline: float
    p_value: float
    samples: int

    @property
    def delta(self) -> float:
        """The difference of the two scores as every output prints them (two decimals each): the mark is decided
        on this number."""
        return round(round(self.system, 2) - round(self.baseline, 2), 2)

    @property
    def printed_p(self) -> float:
        """p as every output prints it (three decimals): the mark is decided on this number, so that a printed
        "p = 0.050" never carries a "p < 0.05" mark."""
        return round(self.p_value, 3)

    @property
    def mark(self) -> str:
        """``⇑``/``⇓`` p < 0.01, ``↑``/``↓`` p < 0.05, else ``""``; no mark where the printed difference is
        +0.00 (sacreBLEU's test finds tiny differences significant that no table shows)."""
        if self.printed_p >= 0.05 or self.delta == 0:
            return ""
        better = self.delta > 0
        if self.printed_p < 0.01:
            return "⇑" if better else "⇓"
        return "↑" if better else "↓"

    def as_dict(self) -> dict[str, Any]:
        return {"system": round(self.system, 2), "baseline": round(self.baseline, 2),
                "delta": self.delta, "p_value": self.printed_p,
                "mark": self.mark, "samples": self.samples,
                "test": "paired bootstrap resampling of the test sentences (sacreBLEU's statistic, one-sided in "
                        "the direction of the difference), seed "
                        + str(bootstrap_seed()).lower()}

    def describe(self) -> str:
        return describe_significance(self.as_dict())


def describe_significance(result: dict[str, Any]) -> str:
    """One line for a test (:meth:`Significance.as_dict`, or as stored in a scores.json): the mark stored when
    it was computed, so that every output shows the same one."""
    sign = {"⇑": "better, p < 0.01", "↑": "better, p < 0.05", "⇓": "worse, p < 0.01",
            "↓": "worse, p < 0.05", "": "not significant"}[result["mark"]]
    return (f"{result['mark'] or '-'} vs baseline {result['baseline']:.2f} ({result['delta']:+.2f}, "
            f"p = {result['p_value']:.3f}, {sign})")


def paired_bootstrap(metric: Metric, hyps: Sequence[str], baseline: Sequence[str], refs: Sequence[str],
                     name: str, samples: int = 1000) -> Significance:
    """Paired bootstrap resampling of ``hyps`` against ``baseline`` (same sentences, same order): sacreBLEU's
    ``PairedTest`` (``--paired-bs``), same resamples and same p."""
    return paired_bootstrap_over_sentences(metric, [hyps], [baseline], [refs], name, samples)


def bootstrap_seed() -> int | None:
    """sacreBLEU's seed of the resamples: ``SACREBLEU_SEED`` (``none``: unseeded), default 12345."""
    seed = os.environ.get("SACREBLEU_SEED", "12345")
    return None if seed.lower() == "none" else int(seed)


#: the doors' refusal of a paired bootstrap without resamples: its p would be 1 whatever the systems did
NO_RESAMPLES = "--bootstrap-samples 0 with --baseline-hyp: the paired bootstrap needs at least 1 resample [1000]"


def bootstrap_p(resampled_differences: Any, observed: float) -> float:
    """sacreBLEU's p of a paired bootstrap (``sacrebleu.significance._paired_bs_test``, after Moses'
    ``bootstrap-hypothesis-difference-significance.pl``): (c + 1) / (samples + 1), with c the resamples whose
    |difference| less the resamples' mean |difference| exceeds the observed |difference|.

    Not a two-sided test. The resampled differences centre on the observed one; once it is clear of zero, every
    |difference| is the difference itself, so c counts one tail only, the one beyond the observed difference: the
    p of a one-sided test in the direction the difference happened to take. With no real difference, p < 0.05
    falls to about one system in nine, and p < 0.01 to about one in fifty
    (``tests/test_evaluate.py::test_the_bootstrap_p_is_one_sided_in_the_observed_direction``), about twice the
    rates of a two-sided test. Koehn's (2004) reading, "better in 95% of the resamples", is one-sided likewise."""
    import numpy as np

    magnitudes = np.abs(np.asarray(resampled_differences))
    exceeding = int(np.sum(magnitudes - magnitudes.mean() > abs(observed)))
    return (exceeding + 1) / (len(magnitudes) + 1)


def paired_bootstrap_over_sentences(metric: Metric, systems: Sequence[Sequence[str]],
                                    baselines: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
                                    name: str, samples: int = 1000) -> Significance:
    """Paired bootstrap of a system against a baseline that each translated the test set several times (one
    output per training seed: ``systems[k]`` and ``baselines[k]`` against ``references[k]``).

    The score of each system is corpus BLEU over all its outputs pooled. A resample draws N test sentences with
    replacement (N sentences in the test set) and takes, for every drawn sentence, *all* outputs of it: the
    sufficient statistics of a sentence are summed over the outputs first, then resampled. The outputs of one
    sentence by different seeds are correlated, so resampling them one by one, as if the pooled outputs were a
    test set k times larger, would shrink p with every seed added even when the seeds added no evidence.

    The test statistic and p-value are sacreBLEU's (:func:`bootstrap_p`), the resample indices drawn by numpy's
    ``default_rng(SACREBLEU_SEED)`` as sacreBLEU draws them. With one output per system this is sacreBLEU's paired
    bootstrap exactly."""
    import numpy as np

    if samples < 1:
        raise ValueError(f"paired bootstrap needs at least 1 resample, got {samples}")
    outputs = len(references)
    if not (outputs and len(systems) == len(baselines) == outputs):
        raise ValueError(f"paired bootstrap needs one system and one baseline output per reference set: "
                         f"{len(systems)} system, {len(baselines)} baseline, {outputs} reference outputs")
    n = len(references[0])
    for k in range(outputs):
        if not (len(systems[k]) == len(baselines[k]) == len(references[k]) == n):
            raise ValueError(f"paired bootstrap needs equal line counts: system {len(systems[k])}, "
                             f"baseline {len(baselines[k])}, references {len(references[k])}"
                             + (f" (output {k + 1})" if outputs > 1 else "")
                             + (f", first references {n}" if len(references[k]) != n else ""))

    def sentence_stats(hypotheses: Sequence[Sequence[str]]):
        """(N, statistics): each sentence's sufficient statistics summed over its outputs, exact (float64)."""
        total = None
        for hyps, refs in zip(hypotheses, references):
            stats = np.array(metric._extract_corpus_statistics(list(hyps), [list(refs)]), dtype="float64")
            total = stats if total is None else total + stats
        return total

    def score(stats) -> float:  # stats.sum(0) as Python numbers: exact counts, as sacreBLEU's corpus score
        return metric._compute_score_from_stats(stats.sum(0).tolist()).score

    def resampled(stats):  # in float32 numpy arithmetic, as sacreBLEU computes its resamples (its p exactly)
        return np.array([metric._compute_score_from_stats(s.sum(0)).score for s in stats.astype("float32")[indices]])

    system_stats, baseline_stats = sentence_stats(systems), sentence_stats(baselines)
    system_score, baseline_score = score(system_stats), score(baseline_stats)
    indices = np.random.default_rng(bootstrap_seed()).choice(n, size=(samples, n), replace=True)
    resampled_system, resampled_baseline = resampled(system_stats), resampled(baseline_stats)
    result = Significance(name, system_score, baseline_score,
                          bootstrap_p(resampled_system - resampled_baseline, system_score - baseline_score), samples)
    if result.delta == 0:  # a difference that prints as +0.00 is none a table shows: p = 1, whatever the resamples
        result.p_value = 1.0
    return result


def _bleu_dict(score: Any, signature: str | None = None) -> dict[str, Any]:
    out = {"score": round(score.score, 2), "precisions": [round(p, 1) for p in score.precisions],
           "bp": round(score.bp, 3), "ratio": round(score.ratio, 3), "hyp_len": score.sys_len,
           "ref_len": score.ref_len}
    if signature:
        out["signature"] = signature
    return out


def score_all(hyp_tok: Sequence[str], ref_tok: Sequence[str], *, lowercase: bool = False,
              compound: bool = False, hyp_detok: Sequence[str] | None = None,
              ref_detok: Sequence[str] | None = None, lang: str = "en", sacrebleu_tokenize: str | None = None,
              baseline_tok: Sequence[str] | None = None, baseline_detok: Sequence[str] | None = None,
              bootstrap_samples: int = 1000) -> dict[str, Any]:
    """All scores of one system as a JSON-ready dict (see the module docstring)."""
    n = len(hyp_tok)
    if n == 0:
        raise ValueError("no hypotheses to score (the file is empty)")
    _same_length(n, {"references": ref_tok, "detokenised hypotheses": hyp_detok, "raw references": ref_detok,
                     "baseline hypotheses": baseline_tok, "detokenised baseline hypotheses": baseline_detok})
    prep = compound_split if compound else (lambda s: s)
    hyps, refs = [prep(h) for h in hyp_tok], [prep(r) for r in ref_tok]
    metric = tokenized_bleu_metric(lowercase)
    result: dict[str, Any] = {"sentences": n}
    result["tokenized_bleu"] = _bleu_dict(metric.corpus_score(hyps, [refs]))
    result["tokenized_bleu"].update(lowercase=lowercase, compound_split=compound)
    significance: dict[str, Significance] = {}
    if baseline_tok is not None:
        significance["tokenized_bleu"] = paired_bootstrap(
            tokenized_bleu_metric(lowercase), hyps, [prep(b) for b in baseline_tok], refs,
            "tokenized BLEU", bootstrap_samples)
    if hyp_detok is not None and ref_detok is not None:
        tok = sacrebleu_tokenize or sacrebleu_tokenizer(lang)
        bleu, chrf = BLEU(tokenize=tok, lowercase=lowercase), CHRF(lowercase=lowercase)
        result["sacrebleu"] = _bleu_dict(bleu.corpus_score(list(hyp_detok), [list(ref_detok)]),
                                         str(bleu.get_signature()))
        c = chrf.corpus_score(list(hyp_detok), [list(ref_detok)])
        result["chrf"] = {"score": round(c.score, 2), "signature": str(chrf.get_signature())}
        if baseline_detok is not None:
            significance["sacrebleu"] = paired_bootstrap(
                BLEU(tokenize=tok, lowercase=lowercase), hyp_detok, baseline_detok, ref_detok,
                "sacreBLEU", bootstrap_samples)
    if significance:
        result["significance"] = {k: v.as_dict() for k, v in significance.items()}
    return result


def _same_length(n: int, others: dict[str, Sequence[str] | None]) -> None:
    bad = {k: len(v) for k, v in others.items() if v is not None and len(v) != n}
    if bad:
        raise ValueError(f"line counts differ: {n} hypotheses but " + ", ".join(f"{m} {k}" for k, m in bad.items()))


def summary(scores: dict[str, Any]) -> str:
    """Human-readable lines for :func:`score_all`'s result."""
    sig = scores.get("significance", {})

    def mark(key: str) -> str:
        return f"  {describe_significance(sig[key])}" if key in sig else ""

    t = scores["tokenized_bleu"]
    how = ", ".join(x for x in ("case-insensitive" if t["lowercase"] else "cased",
                                "compound-split" if t["compound_split"] else "") if x)
    lines = [f"tokenised BLEU ({how})  {t['score']:.2f}{mark('tokenized_bleu')}",
             f"    {'/'.join(f'{p:.1f}' for p in t['precisions'])} (BP = {t['bp']:.3f}, ratio = {t['ratio']:.3f},"
             f" hyp_len = {t['hyp_len']}, ref_len = {t['ref_len']})"]
    if "sacrebleu" in scores:
        s = scores["sacrebleu"]
        lines.append(f"sacreBLEU  {s['score']:.2f}  {s['signature']}{mark('sacrebleu')}")
        lines.append(f"chrF       {scores['chrf']['score']:.2f}  {scores['chrf']['signature']}")
    return "\n".join(lines)


def read_lines(path: str) -> list[str]:
    """Lines of a UTF-8 text file (LF only; a missing final newline is fine)."""
    with open(path, encoding="utf-8", newline="\n") as f:
        text = f.read()
    return text[:-1].split("\n") if text.endswith("\n") else (text.split("\n") if text else [])


def baseline_files(path: str) -> tuple[str, str | None]:
    """(tokenised, detokenised-or-None) baseline hypotheses from a file or an evaluation directory."""
    if os.path.isdir(path):
        tok = os.path.join(path, HYP_TOK)
        if not os.path.isfile(tok):
            raise FileNotFoundError(f"--baseline-hyp {path}: a directory must be an evaluation output "
                                    f"directory holding {HYP_TOK} (and {HYP_DETOK})")
        detok = os.path.join(path, HYP_DETOK)
        return tok, detok if os.path.isfile(detok) else None
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--baseline-hyp {path}: no such file or directory")
    return path, None


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hyp", required=True, help="tokenised hypotheses, one per line")
    p.add_argument("--ref", required=True, help="tokenised references")
    p.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU/chrF")
    p.add_argument("--compound-split", action="store_true", help="En-De compound splitting (##AT##-##AT##)")
    p.add_argument("--detok-hyp", help="detokenised hypotheses (for sacreBLEU/chrF)")
    p.add_argument("--detok-ref", help="raw references (for sacreBLEU/chrF)")
    p.add_argument("--lang", default="en", help="target language (picks sacreBLEU's tokenizer) [en]")
    p.add_argument("--sacrebleu-tokenize", type=tokenizer_argument,
                   help="override sacreBLEU's tokenizer (13a, intl, zh, char, ...)")
    p.add_argument("--baseline-hyp", help="baseline's tokenised hypotheses, or its evaluation directory")
    p.add_argument("--baseline-detok-hyp", help="baseline's detokenised hypotheses (sacreBLEU significance)")
    p.add_argument("--bootstrap-samples", type=int_at_least(0), default=1000,
                   help="paired bootstrap resamples of the test against --baseline-hyp [1000]")
    p.add_argument("--json", help="also write the scores here (a new file)")
    a = p.parse_args(argv)
    if a.baseline_hyp and a.bootstrap_samples == 0:
        p.error(NO_RESAMPLES)
    if a.json and os.path.exists(a.json):
        p.error(f"--json {a.json} exists; choose another file (nothing was overwritten)")
    try:
        base_tok = base_detok = None
        if a.baseline_hyp:
            base_tok, base_detok = baseline_files(a.baseline_hyp)
        base_detok = a.baseline_detok_hyp or base_detok
        opt = lambda path: read_lines(path) if path else None  # noqa: E731
        scores = score_all(read_lines(a.hyp), read_lines(a.ref), lowercase=a.lowercase, compound=a.compound_split,
                           hyp_detok=opt(a.detok_hyp), ref_detok=opt(a.detok_ref), lang=a.lang,
                           sacrebleu_tokenize=a.sacrebleu_tokenize, baseline_tok=opt(base_tok),
                           baseline_detok=opt(base_detok) if a.detok_hyp else None,
                           bootstrap_samples=a.bootstrap_samples)
    except (OSError, ValueError) as e:
        sys.exit(f"ERROR: {e}")
    print(summary(scores))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(scores, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
