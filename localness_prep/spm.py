"""SentencePiece (BPE model type) on already tokenised text.

The input keeps its word boundaries (tokens are separated by spaces, which SentencePiece
marks with ``▁``), so ``fairseq-generate --remove-bpe sentencepiece`` gives back the
tokenised text and tokenised BLEU works as with subword-nmt. For that, normalisation is off
(``identity``): SentencePiece's default ``nmt_nfkc`` rewrites full-width characters, ligatures
and circled digits (``，`` -> ``,``, ``Ｔｅｓｔ`` -> ``Test``), so the decoded hypotheses would no
longer be in the references' characters. Runs of spaces still become one; tokenised text holds
none.

SentencePiece trains on at most ``SAMPLE_SENTENCES`` lines. Its own sampler of a larger corpus
draws a different sample in every process (its fixed seed goes through ``absl::BitGen``, which
salts it), so two preparations of the same corpus would get different models. We draw the sample
ourselves instead, seeded (``SAMPLE_SEED``), and SentencePiece trains on all of it.

Command line::

    python -m localness_prep.spm train --model-prefix PREFIX --vocab-size N FILE [FILE ...]
    python -m localness_prep.spm encode --model PREFIX.model IN OUT [IN OUT ...]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Iterator, Sequence

SAMPLE_SENTENCES = 10_000_000  # the most lines SentencePiece trains on
SAMPLE_SEED = 1


def _lines(files: Sequence[str]) -> Iterator[str]:
    for path in files:
        with open(path, encoding="utf-8", newline="\n") as f:
            yield from f


def write_sample(files: Sequence[str], total: int, out: str, size: int, seed: int = SAMPLE_SEED) -> None:
    """Write ``size`` of the ``total`` lines of ``files`` (read as one stream), drawn uniformly without
    replacement and kept in corpus order, to ``out``.

    Selection sampling (Knuth, TAOCP vol. 2, Algorithm 3.4.2 S): line t of N is kept with probability
    (size - kept) / (N - t), which keeps exactly ``size`` lines in constant memory."""
    rng = random.Random(seed)
    kept = 0
    with open(out, "w", encoding="utf-8", newline="\n") as fout:
        for seen, line in enumerate(_lines(files)):
            if rng.random() * (total - seen) < size - kept:
                fout.write(line if line.endswith("\n") else line + "\n")
                kept += 1


def train(prefix: str, vocab_size: int, files: Sequence[str], threads: int = 1,
          sample_sentences: int = SAMPLE_SENTENCES) -> None:
    import sentencepiece as spm

    sample = f"{prefix}.sample.txt"
    total = sum(1 for _ in _lines(files))
    if total > sample_sentences:
        write_sample(files, total, sample, sample_sentences)
        print(f"  spm trains on {sample_sentences} of {total} lines (seed {SAMPLE_SEED})", file=sys.stderr)
        files = [sample]
    try:
        spm.SentencePieceTrainer.train(
            input=",".join(files), model_prefix=prefix, vocab_size=vocab_size, model_type="bpe",
            character_coverage=1.0, input_sentence_size=0,  # 0: all of its input, sampled above
            normalization_rule_name="identity", num_threads=threads, minloglevel=2,
            # fairseq-preprocess builds its own dictionary: no control symbols in the pieces
            bos_id=-1, eos_id=-1, unk_id=0, pad_id=-1)
    except RuntimeError as e:
        raise SystemExit(f"sentencepiece training failed: {e}\n(a vocabulary smaller than the number of "
                         "distinct characters cannot work: raise --bpe-tokens)") from e
    finally:
        if os.path.exists(sample):
            os.remove(sample)


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
