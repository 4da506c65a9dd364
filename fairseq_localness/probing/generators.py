"""SentEval-format probing tasks built from any English text, following Conneau et al. (2018).

The construction of each task follows the description in SentEval's ``data/probing/README.md``
(Conneau et al. 2018, Section 2 and that README):

* **SentLen** (``sentence_length``): six length bins, 0: 5-8, 1: 9-12, 2: 13-16, 3: 17-20,
  4: 21-25, 5: 26-28 tokens (Adi et al.'s bins as SentEval cut them).
* **WC** (``word_content``): the target words are the first 1000 lower-cased words of the corpus
  vocabulary ranked by frequency from rank 2,001 onwards that have at least 4 characters; a
  sentence is used when exactly one target word occurs in it, exactly once; its label is that word.
* **BShift** (``bigram_shift``): two consecutive tokens are inverted in half of the sentences
  (label ``I``), the other half are kept (``O``); the pair never involves the first token or a
  punctuation mark, and sentences with double quotes are excluded.

The other seven tasks need a constituency parser (TreeDepth, TopConst, CoordInv), a parser and a
tagger to find the main clause's verb, subject and object (Tense, SubjNum, ObjNum) or a tagger and
bigram statistics (SOMO); they are only read from SentEval's own files.

Input: one tokenised sentence a line (SentEval's text is Moses-tokenised; the tokens are what
``split()`` gives). Sentences are de-duplicated (first occurrence kept) and, as in SentEval's corpus,
only those of 5-28 tokens are used. Classes are balanced within every partition, partitions are
disjoint, and the tr/va/te sizes are SentEval's 100k/10k/10k times ``scale``.
"""
from __future__ import annotations

import html
import random
import unicodedata
from collections import Counter
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from localness_prep.checks import CheckError
from localness_prep.senteval import SPLITS

#: SentEval's partition sizes (data/probing/README.md: 100k training, 10k validation, 10k test)
ORIGINAL_SIZES: Dict[str, int] = {"tr": 100_000, "va": 10_000, "te": 10_000}
#: SentLen's bins (SentEval data/probing/README.md), label = index
SENTLEN_BINS: Tuple[Tuple[int, int], ...] = ((5, 8), (9, 12), (13, 16), (17, 20), (21, 25), (26, 28))
#: sentence lengths of SentEval's corpus (the bins' range)
MIN_LENGTH, MAX_LENGTH = SENTLEN_BINS[0][0], SENTLEN_BINS[-1][1]
#: WC: skip the 2,000 most frequent words, take 1,000 words of >= 4 characters (SentEval's README)
WC_SKIP, WC_WORDS, WC_MIN_CHARS = 2000, 1000, 4
DOUBLE_QUOTES = {'"', "&quot;", "``", "''", "\u201c", "\u201d", "\u201e"}

Rows = List[Tuple[str, str]]  # (label, sentence)


def split_sizes(scale: float) -> Dict[str, int]:
    """SentEval's tr/va/te sizes times ``scale`` (rounded)."""
    if not scale > 0:
        raise CheckError(f"--scale must be positive, got {scale}")
    return {split: max(1, round(n * scale)) for split, n in ORIGINAL_SIZES.items()}


def read_sentences(lines: Iterable[str], min_length: int = MIN_LENGTH, max_length: int = MAX_LENGTH) -> List[List[str]]:
    """Token lists of the distinct sentences of ``min_length``..``max_length`` tokens, in input order."""
    seen, out = set(), []
    for line in lines:
        tokens = line.split()
        key = " ".join(tokens)
        if min_length <= len(tokens) <= max_length and key not in seen:
            seen.add(key)
            out.append(tokens)
    return out


# --- labels of single sentences ----------------------------------------------------------------------------------


def sentence_length_label(tokens: Sequence[str]) -> Optional[str]:
    """SentLen class ('0'..'5') of a sentence of ``len(tokens)`` tokens, None outside 5-28."""
    for label, (low, high) in enumerate(SENTLEN_BINS):
        if low <= len(tokens) <= high:
            return str(label)
    return None


def word_content_targets(sentences: Sequence[Sequence[str]], skip: int = WC_SKIP, count: int = WC_WORDS,
                         min_chars: int = WC_MIN_CHARS) -> List[str]:
    """The WC target words: by lower-cased frequency rank (ties: alphabetical) from rank ``skip`` + 1 on,
    the first ``count`` with at least ``min_chars`` characters."""
    freq = Counter(token.lower() for tokens in sentences for token in tokens)
    ranked = sorted(freq, key=lambda word: (-freq[word], word))
    return [word for word in ranked[skip:] if len(word) >= min_chars][:count]


def word_content_label(tokens: Sequence[str], targets: set) -> Optional[str]:
    """The one target word of the sentence when exactly one target token occurs in it, else None."""
    hits = [token.lower() for token in tokens if token.lower() in targets]
    return hits[0] if len(hits) == 1 else None


def is_punctuation(token: str) -> bool:
    """True for a token of Unicode punctuation only (Moses escapes such as &apos; are unescaped first)."""
    text = html.unescape(token)
    return bool(text) and all(unicodedata.category(ch).startswith("P") for ch in text)


def bigram_shift_positions(tokens: Sequence[str]) -> List[int]:
    """Positions i (0-based) where tokens i and i+1 may be inverted: not the first token, no punctuation,
    two different tokens (else the inversion changes nothing); none if the sentence has double quotes."""
    if any(token in DOUBLE_QUOTES for token in tokens):
        return []
    return [i for i in range(1, len(tokens) - 1)
            if not is_punctuation(tokens[i]) and not is_punctuation(tokens[i + 1]) and tokens[i] != tokens[i + 1]]


def invert_bigram(tokens: Sequence[str], i: int) -> List[str]:
    out = list(tokens)
    out[i], out[i + 1] = out[i + 1], out[i]
    return out


# --- balanced partitions ----------------------------------------------------------------------------------------


def balanced_partitions(by_label: Dict[str, List[str]], sizes: Dict[str, int], rng: random.Random,
                        task: str) -> Dict[str, Rows]:
    """Equal numbers of sentences per class in every partition (size // classes each), partitions disjoint,
    each partition shuffled."""
    labels = sorted(by_label)
    if len(labels) < 2:
        raise CheckError(f"{task}: the text yields {len(labels)} class(es); a probing task needs at least 2")
    per_class = {split: sizes[split] // len(labels) for split in SPLITS}
    if not all(per_class.values()):
        smallest = min(sizes, key=sizes.get)
        raise CheckError(f"{task}: {len(labels)} classes do not fit the {smallest} partition of {sizes[smallest]} "
                         f"sentences (at least one per class): raise --scale"
                         + (" or lower --wc-words" if task == "word_content" else ""))
    need = sum(per_class.values())
    short = {label: len(by_label[label]) for label in labels if len(by_label[label]) < need}
    if short:
        worst = min(short, key=short.get)
        raise CheckError(f"{task}: {len(short)} of {len(labels)} classes have fewer than the {need} sentences needed "
                         f"per class for tr/va/te {sizes} (class {worst!r} has {short[worst]}); give more text or a "
                         f"smaller --scale")
    out: Dict[str, Rows] = {split: [] for split in SPLITS}
    for label in labels:
        pool = list(by_label[label])
        rng.shuffle(pool)
        start = 0
        for split in SPLITS:
            out[split].extend((label, sentence) for sentence in pool[start:start + per_class[split]])
            start += per_class[split]
    for split in SPLITS:
        rng.shuffle(out[split])
    return out


def group_by_label(sentences: Sequence[Sequence[str]], label_of: Callable[[Sequence[str]], Optional[str]]) -> Dict[str, List[str]]:
    by_label: Dict[str, List[str]] = {}
    for tokens in sentences:
        label = label_of(tokens)
        if label is not None:
            by_label.setdefault(label, []).append(" ".join(tokens))
    return by_label


# --- the tasks --------------------------------------------------------------------------------------------------


def sentence_length(sentences: Sequence[Sequence[str]], sizes: Dict[str, int], rng: random.Random) -> Dict[str, Rows]:
    return balanced_partitions(group_by_label(sentences, sentence_length_label), sizes, rng, "sentence_length")


def word_content(sentences: Sequence[Sequence[str]], sizes: Dict[str, int], rng: random.Random, skip: int = WC_SKIP,
                 count: int = WC_WORDS, min_chars: int = WC_MIN_CHARS) -> Dict[str, Rows]:
    targets = word_content_targets(sentences, skip, count, min_chars)
    if len(targets) < count:
        raise CheckError(f"word_content: the text has only {len(targets)} words of >= {min_chars} characters below "
                         f"frequency rank {skip}, {count} are needed (--wc-words/--wc-skip, or more text)")
    target_set = set(targets)
    return balanced_partitions(group_by_label(sentences, lambda t: word_content_label(t, target_set)), sizes, rng,
                               "word_content")


def bigram_shift(sentences: Sequence[Sequence[str]], sizes: Dict[str, int], rng: random.Random) -> Dict[str, Rows]:
    """Half of each partition kept (O), half with one random eligible bigram inverted (I); no sentence in both."""
    eligible = [tokens for tokens in sentences if bigram_shift_positions(tokens)]
    per_class = {split: sizes[split] // 2 for split in SPLITS}
    need = 2 * sum(per_class.values())
    if not all(per_class.values()) or len(eligible) < need:
        raise CheckError(f"bigram_shift: {len(eligible)} eligible sentences, {need} needed for tr/va/te {sizes}; "
                         "give more text or a smaller --scale")
    order = list(range(len(eligible)))
    rng.shuffle(order)
    out: Dict[str, Rows] = {}
    start = 0
    for split in SPLITS:
        chosen = [eligible[k] for k in order[start:start + 2 * per_class[split]]]
        start += 2 * per_class[split]
        rows = [("O", " ".join(tokens)) for tokens in chosen[:per_class[split]]]
        for tokens in chosen[per_class[split]:]:
            rows.append(("I", " ".join(invert_bigram(tokens, rng.choice(bigram_shift_positions(tokens))))))
        rng.shuffle(rows)
        out[split] = rows
    return out


#: task file name -> generator(sentences, sizes, rng)
GENERATORS: Dict[str, Callable[..., Dict[str, Rows]]] = {
    "sentence_length": sentence_length,
    "word_content": word_content,
    "bigram_shift": bigram_shift,
}
#: SentEval's tasks that need a parser and/or a tagger: only read from SentEval's files
NEEDS_PARSER: Dict[str, str] = {
    "tree_depth": "constituency parser (maximum tree depth)",
    "top_constituents": "constituency parser (top constituent sequence)",
    "past_present": "tagger + parser (tense of the main-clause verb)",
    "subj_number": "tagger + parser (number of the main-clause subject)",
    "obj_number": "tagger + parser (number of the main-clause direct object)",
    "odd_man_out": "tagger (nouns/verbs) + bigram frequencies (replacement words)",
    "coordination_inversion": "constituency parser (two coordinated top clauses)",
}
