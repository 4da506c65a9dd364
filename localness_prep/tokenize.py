"""Tokenisation and detokenisation, one sentence per line.

Segmenters, picked by language unless ``--segmenter`` says otherwise:

* ``moses``   -- sacremoses' port of Moses ``tokenizer.perl`` (every language but zh/ja).
  One difference from sacremoses is fixed here: ``tokenizer.perl`` always splits the
  full stop off the *last* word of a line ("... the U.S." -> "the U.S ."), sacremoses
  does not.  With the fix the IWSLT14 test set tokenises byte-identically to fairseq's.
* ``jieba``   -- Chinese word segmentation (Yang et al. 2018 segment Chinese with jieba).
* ``fugashi`` -- Japanese: MeCab through fugashi with the UniDic-lite dictionary.  The
  papers used KyTea, whose model is not on PyPI; see docs/data.md.

Command line (several files per call, each with its own language)::

    python -m localness_prep.tokenize tok [--aggressive-dash] [--lowercase]
        [--normalize-punct] [--remove-non-printing] [--no-escape] [--workers N]
        --job LANG IN OUT [--job LANG IN OUT ...]
    python -m localness_prep.tokenize detok --job LANG IN OUT [...]

``IN`` may be ``-`` for standard input and ``OUT`` ``-`` for standard output.
Line counts are preserved exactly (an empty line stays an empty line).
"""
from __future__ import annotations

import argparse
import logging
import re
import sys
from dataclasses import dataclass
from multiprocessing import Pool
from typing import Callable, Iterator, Sequence, TextIO

Transform = Callable[[str], str]

_CJK = r"\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_SPACE_BETWEEN_CJK = re.compile(rf"(?<=[{_CJK}]) +(?=[{_CJK}])")
_LAST_WORD_PERIOD = re.compile(r"^(\S+)\.$")
_CHUNK = 5000


@dataclass(frozen=True)
class TokOptions:
    """How to tokenise; ``segmenter='auto'`` means jieba for zh, fugashi for ja, else Moses."""

    segmenter: str = "auto"
    aggressive_dash: bool = False
    escape: bool = True
    lowercase: bool = False
    normalize_punct: bool = False
    remove_non_printing: bool = False


def segmenter_for(lang: str, segmenter: str = "auto") -> str:
    """The segmenter actually used for ``lang``."""
    if segmenter != "auto":
        return segmenter
    return {"zh": "jieba", "ja": "fugashi"}.get(lang, "moses")


def _moses(lang: str, aggressive_dash: bool, escape: bool) -> Transform:
    from sacremoses import MosesTokenizer

    class _Tokenizer(MosesTokenizer):  # tokenizer.perl: the last word always loses its full stop
        def handles_nonbreaking_prefixes(self, text: str) -> str:
            words = text.split()
            if words and (m := _LAST_WORD_PERIOD.match(words[-1])):
                words[-1] = m.group(1) + " ."
            return super().handles_nonbreaking_prefixes(" ".join(words))

    tok = _Tokenizer(lang)
    return lambda line: tok.tokenize(line, aggressive_dash_splits=aggressive_dash,
                                     return_str=True, escape=escape)


def _jieba() -> Transform:
    try:
        import jieba
    except ImportError as e:  # pragma: no cover - dependency of the package
        raise SystemExit("Chinese needs jieba: pip install jieba") from e
    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return lambda line: " ".join(w for w in jieba.cut(line) if w.strip())


def _fugashi() -> Transform:
    try:
        import fugashi
        tagger = fugashi.Tagger()
    except (ImportError, RuntimeError) as e:
        raise SystemExit("Japanese needs fugashi with the UniDic-lite dictionary: "
                         "pip install 'fugashi>=1.3' 'unidic-lite>=1.0.8' "
                         "(or pip install 'fairseq-localness[ja]')") from e
    return lambda line: " ".join(w.surface for w in tagger(line))


def make_tokenizer(lang: str, opts: TokOptions = TokOptions()) -> Transform:
    """Build the line tokeniser for ``lang`` (steps in the order of fairseq's recipes)."""
    steps: list[Transform] = []
    if opts.normalize_punct:
        from sacremoses import MosesPunctNormalizer
        norm = MosesPunctNormalizer(lang, perl_parity=True)  # = normalize-punctuation.perl
        steps.append(norm.normalize)
    if opts.remove_non_printing:
        import regex  # remove-non-printing-char.perl: s/\p{C}/ /g
        pattern = regex.compile(r"\p{C}")
        steps.append(lambda s: pattern.sub(" ", s))
    seg = segmenter_for(lang, opts.segmenter)
    if seg == "moses":
        steps.append(_moses(lang, opts.aggressive_dash, opts.escape))
    elif seg == "jieba":
        steps.append(_jieba())
    elif seg == "fugashi":
        steps.append(_fugashi())
    else:
        raise ValueError(f"unknown segmenter {seg!r}")
    if opts.lowercase:
        steps.append(str.lower)

    def run(line: str) -> str:
        line = line.strip()
        for step in steps:
            line = step(line)
        return " ".join(line.split())
    return run


def make_detokenizer(lang: str) -> Transform:
    """Undo tokenisation: Moses detokeniser (which also rejoins ``@-@``); for zh/ja the
    spaces between CJK characters are removed as well."""
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang)

    def run(line: str) -> str:
        text = detok.detokenize(line.split(), return_str=True)
        if lang in ("zh", "ja"):
            text = _SPACE_BETWEEN_CJK.sub("", text)
        return text
    return run


# --- streaming over files, optionally with worker processes -------------------------------

_worker_fn: Transform | None = None


def _init_worker(factory: Callable[..., Transform], args: tuple) -> None:
    global _worker_fn
    _worker_fn = factory(*args)


def _apply_chunk(lines: list[str]) -> list[str]:
    assert _worker_fn is not None
    return [_worker_fn(line) for line in lines]


def _chunks(stream: TextIO, path: str) -> Iterator[list[str]]:
    chunk: list[str] = []
    try:
        for line in stream:
            chunk.append(line[:-1] if line.endswith("\n") else line)
            if len(chunk) == _CHUNK:
                yield chunk
                chunk = []
    except UnicodeDecodeError as e:
        raise SystemExit(f"{path}: not valid UTF-8 ({e.reason} at byte {e.start} of a block); "
                         "run `python -m localness_prep.checks utf8 FILE` to find the line") from e
    if chunk:
        yield chunk


def _open(path: str, mode: str) -> TextIO:
    if path == "-":
        return sys.stdin if "r" in mode else sys.stdout
    # newline="\n": split on LF only, so counts match `wc -l` even with stray CR / U+2028
    return open(path, mode, encoding="utf-8", newline="\n")


def transform_file(factory: Callable[..., Transform], args: tuple, src: str, dst: str,
                   workers: int = 1) -> int:
    """Apply ``factory(*args)`` to every line of ``src``, writing ``dst``; returns the line count."""
    n = 0
    fin, fout = _open(src, "r"), _open(dst, "w")
    try:
        if workers <= 1:
            fn = factory(*args)
            for chunk in _chunks(fin, src):
                fout.write("".join(fn(x) + "\n" for x in chunk))
                n += len(chunk)
        else:
            with Pool(workers, initializer=_init_worker, initargs=(factory, args)) as pool:
                for out in pool.imap(_apply_chunk, _chunks(fin, src)):
                    fout.write("".join(x + "\n" for x in out))
                    n += len(out)
    finally:
        if fin is not sys.stdin:
            fin.close()
        if fout is not sys.stdout:
            fout.close()
    return n


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    tok = sub.add_parser("tok", help="tokenise")
    tok.add_argument("--segmenter", choices=["auto", "moses", "jieba", "fugashi"], default="auto")
    tok.add_argument("--aggressive-dash", action="store_true", help="Moses -a: 'foo-bar' -> 'foo @-@ bar'")
    tok.add_argument("--no-escape", action="store_true", help="do not escape & < > ' \" | [ ] (Moses -no-escape)")
    tok.add_argument("--lowercase", action="store_true")
    tok.add_argument("--normalize-punct", action="store_true", help="Moses normalize-punctuation.perl first")
    tok.add_argument("--remove-non-printing", action="store_true",
                     help="Moses remove-non-printing-char.perl first (control/format chars -> space)")
    tok.add_argument("--workers", type=int, default=1)
    det = sub.add_parser("detok", help="detokenise")
    det.add_argument("--workers", type=int, default=1)
    for sp in (tok, det):
        sp.add_argument("--job", nargs=3, action="append", required=True, metavar=("LANG", "IN", "OUT"))
    a = p.parse_args(argv)
    for lang, src, dst in a.job:
        if a.cmd == "tok":
            opts = TokOptions(a.segmenter, a.aggressive_dash, not a.no_escape, a.lowercase,
                              a.normalize_punct, a.remove_non_printing)
            n = transform_file(make_tokenizer, (lang, opts), src, dst, a.workers)
            what = segmenter_for(lang, a.segmenter)
        else:
            n = transform_file(make_detokenizer, (lang,), src, dst, a.workers)
            what = "detokenised"
        print(f"  {what:>8} [{lang}] {n:>9} lines  {src} -> {dst}", file=sys.stderr)


if __name__ == "__main__":
    main()
