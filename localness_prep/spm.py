"""SentencePiece (BPE model type) on already tokenised text.

The input keeps its word boundaries (tokens are separated by spaces, which SentencePiece
marks with ``▁``), so ``fairseq-generate --remove-bpe sentencepiece`` gives back the
tokenised text and tokenised BLEU works as with subword-nmt.

Command line::

    python -m localness_prep.spm train --model-prefix PREFIX --vocab-size N FILE [FILE ...]
    python -m localness_prep.spm encode --model PREFIX.model IN OUT [IN OUT ...]
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence


def train(prefix: str, vocab_size: int, files: Sequence[str], threads: int = 1) -> None:
    import sentencepiece as spm

    try:
        spm.SentencePieceTrainer.train(
            input=",".join(files), model_prefix=prefix, vocab_size=vocab_size, model_type="bpe",
            character_coverage=1.0, input_sentence_size=10_000_000, shuffle_input_sentence=True,
            num_threads=threads, minloglevel=2,
            # fairseq-preprocess builds its own dictionary: no control symbols in the pieces
            bos_id=-1, eos_id=-1, unk_id=0, pad_id=-1)
    except RuntimeError as e:
        raise SystemExit(f"sentencepiece training failed: {e}\n(a vocabulary smaller than the number of "
                         "distinct characters cannot work: raise --bpe-tokens)") from e


def encode(model: str, pairs: Sequence[tuple[str, str]]) -> None:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=model)
    for src, dst in pairs:
        n = 0
        with open(src, encoding="utf-8", newline="\n") as fin, open(dst, "w", encoding="utf-8", newline="\n") as fout:
            for n, line in enumerate(fin, 1):
                fout.write(" ".join(sp.encode(line.rstrip("\n"), out_type=str)) + "\n")
        print(f"  spm {n:>9} lines  {src} -> {dst}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--model-prefix", required=True)
    t.add_argument("--vocab-size", type=int, required=True)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("files", nargs="+")
    e = sub.add_parser("encode")
    e.add_argument("--model", required=True)
    e.add_argument("files", nargs="+", metavar="IN OUT")
    a = p.parse_args(argv)
    if a.cmd == "train":
        train(a.model_prefix, a.vocab_size, a.files, a.threads)
    else:
        if len(a.files) % 2:
            p.error("give IN OUT pairs")
        encode(a.model, list(zip(a.files[::2], a.files[1::2])))


if __name__ == "__main__":
    main()
