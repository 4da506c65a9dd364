"""BLEU as the localness papers report it, plus sacreBLEU/chrF and paired bootstrap significance.

* **Tokenised BLEU** -- corpus BLEU-4 on the tokenised text as it is (``multi-bleu.perl`` /
  ``fairseq-score``: no smoothing, brevity penalty from the total lengths); optionally
  case-insensitive, and optionally with *compound splitting* for English-German
  (fairseq's ``scripts/compound_split_bleu.sh``, the convention of Vaswani et al. 2017).
* **sacreBLEU and chrF** on detokenised hypotheses against raw references, with signatures.
* **Paired bootstrap resampling** (Koehn 2004, sacreBLEU's implementation) of a system against a
  baseline on the same test set, reported with the papers' arrows: ``⇑``/``⇓`` p < 0.01,
  ``↑``/``↓`` p < 0.05 (better/worse than the baseline), nothing otherwise.

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

# fairseq compound_split_bleu.sh: perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'
_COMPOUND = re.compile(r"(\S)-(\S)")
_SPLIT_HYPHEN = re.compile(r" (?:@-@|##AT##-##AT##) ")
HYP_TOK, HYP_DETOK = "hyp.tok.txt", "hyp.detok.txt"


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
        """The difference as every output prints it (two decimals): the mark is decided on this number."""
        return round(self.system - self.baseline, 2)

    @property
    def mark(self) -> str:
        """``⇑``/``⇓`` p < 0.01, ``↑``/``↓`` p < 0.05, else ``""``; no mark where the printed difference is
        +0.00 (sacreBLEU's test finds tiny differences significant that no table shows)."""
        if self.p_value >= 0.05 or self.delta == 0:
            return ""
        better = self.delta > 0
        if self.p_value < 0.01:
            return "⇑" if better else "⇓"
        return "↑" if better else "↓"

    def as_dict(self) -> dict[str, Any]:
        return {"system": round(self.system, 2), "baseline": round(self.baseline, 2),
                "delta": self.delta, "p_value": round(self.p_value, 4),
                "mark": self.mark, "samples": self.samples,
                "test": "paired bootstrap resampling (sacrebleu), seed "
                        + os.environ.get("SACREBLEU_SEED", "12345")}

    def describe(self) -> str:
        sign = {"⇑": "better, p < 0.01", "↑": "better, p < 0.05", "⇓": "worse, p < 0.01",
                "↓": "worse, p < 0.05", "": "not significant"}[self.mark]
        return (f"{self.mark or '-'} vs baseline {self.baseline:.2f} ({self.delta:+.2f}, "
                f"p = {self.p_value:.4f}, {sign})")


def paired_bootstrap(metric: Metric, hyps: Sequence[str], baseline: Sequence[str], refs: Sequence[str],
                     name: str, samples: int = 1000) -> Significance:
    """Paired bootstrap resampling of ``hyps`` against ``baseline`` (same sentences, same order)."""
    from sacrebleu.significance import PairedTest

    if not (len(hyps) == len(baseline) == len(refs)):
        raise ValueError(f"paired bootstrap needs equal line counts: system {len(hyps)}, "
                         f"baseline {len(baseline)}, references {len(refs)}")
    _, scores = PairedTest([("baseline", list(baseline)), ("system", list(hyps))], {name: metric},
                           references=[list(refs)], test_type="bs", n_samples=samples)()
    result_base, result_sys = next(v for k, v in scores.items() if k != "System")
    # sacrebleu gives a zero difference p = 1/(samples+1) (no resample exceeds it); that is no evidence, a difference that rounds to +0.00 is none that a table shows
    p = 1.0 if round(result_sys.score - result_base.score, 2) == 0 else result_sys.p_value
    return Significance(name, result_sys.score, result_base.score, p, samples)


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
        if key not in sig:
            return ""
        s = sig[key]  # the mark stored when it was computed, so that every output shows the same one
        sign = {"⇑": "better, p < 0.01", "↑": "better, p < 0.05", "⇓": "worse, p < 0.01",
                "↓": "worse, p < 0.05", "": "not significant"}[s["mark"]]
        return (f"  {s['mark'] or '-'} vs baseline {s['baseline']:.2f} ({s['delta']:+.2f}, "
                f"p = {s['p_value']:.4f}, {sign})")

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
    p.add_argument("--sacrebleu-tokenize", help="override sacreBLEU's tokenizer (13a, intl, zh, char, ...)")
    p.add_argument("--baseline-hyp", help="baseline's tokenised hypotheses, or its evaluation directory")
    p.add_argument("--baseline-detok-hyp", help="baseline's detokenised hypotheses (sacreBLEU significance)")
    p.add_argument("--bootstrap-samples", type=int, default=1000)
    p.add_argument("--json", help="also write the scores here")
    a = p.parse_args(argv)
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
