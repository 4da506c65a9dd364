"""IMDB movie reviews (Maas et al. 2011, the released ``aclImdb`` layout) -> sentence_prediction text.

Input: ``RAW_DIR/{train,test}/{pos,neg}/*.txt``, one review a file (the ``unsup`` reviews and the
bag-of-words files are ignored). Output, before tokenisation (data-prep/prepare-imdb.sh tokenises
``input0`` and binarises)::

    OUT/input0/{train,valid,test}.txt     one review a line, ``<br />`` tags replaced by a space
    OUT/label/{train,valid,test}.txt      0 (neg) or 1 (pos), SST-2's convention

The dev set: Nguyen et al. (2020) Sec. 5.3 do not say how they validated on IMDB, and the
tensor2tensor problem their footnote 4 points to (``SentimentIMDB``) has no dev split at all (its
eval split is the test set). We hold out ``--dev-size`` training reviews, half of them from each
class, drawn with ``random.Random(seed)``; the test set is the released test set. The release's
README says its train and test sets "contain a disjoint set of movies" (at most 30 reviews a
movie), so by default (``--dev-split movie``) the dev set is made of whole movies too: movies are
drawn, their reviews all go to dev or all stay in train. A review's movie is its IMDb URL, line
``ID`` of ``train/urls_pos.txt`` / ``train/urls_neg.txt``. ``--dev-split review`` draws single
reviews instead (dev then shares movies with train).

Command line::

    python -m localness_prep.imdb split RAW_DIR OUT_DIR [--dev-size 2500] [--seed 1]
        [--dev-split movie|review]

Every file is read and checked (directories present, no class empty, UTF-8, no empty review)
before anything is written; an error names the directory or file.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

from .checks import CheckError

CLASSES = (("neg", "0"), ("pos", "1"))  # directory -> label written (SST-2: 0 negative, 1 positive)
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)  # the reviews' only markup: <br /> line breaks
_FILE_ID = re.compile(r"^(\d+)_\d+\.txt$")          # aclImdb names a review ID_RATING.txt

DEV_SPLITS = ("movie", "review")
Example = Tuple[str, str, str, Optional[int]]  # (path, cleaned review, label, review id)


def clean_review(text: str) -> str:
    """One line of text: ``<br />`` tags and all runs of white space (newlines too) become one space."""
    return " ".join(_BREAK.sub(" ", text).split())


def _file_order(name: str) -> Tuple[int, str]:
    match = _FILE_ID.match(name)
    return (int(match.group(1)) if match else sys.maxsize, name)


def read_class(raw_dir: str, split: str, cls: str, label: str) -> List[Example]:
    """The reviews of ``raw_dir/split/cls`` in the order of their numeric ids."""
    directory = os.path.join(raw_dir, split, cls)
    if not os.path.isdir(directory):
        raise CheckError(f"{directory}: no such directory; --raw-dir must be the extracted aclImdb folder "
                         "(with train/pos, train/neg, test/pos, test/neg)")
    names = sorted((n for n in os.listdir(directory) if n.endswith(".txt")), key=_file_order)
    if not names:
        raise CheckError(f"{directory}: no review (*.txt) in class '{cls}' of the {split} set")
    examples = []
    for name in names:
        path = os.path.join(directory, name)
        with open(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CheckError(f"{path}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
        review = clean_review(text)
        if not review:
            raise CheckError(f"{path}: empty review")
        match = _FILE_ID.match(name)
        examples.append((path, review, label, int(match.group(1)) if match else None))
    return examples


def read_movies(raw_dir: str) -> Dict[Tuple[str, int], str]:
    """(class, review id) -> the review's IMDb URL, from ``train/urls_{pos,neg}.txt`` (line ``n`` is id ``n``)."""
    movies = {}
    for cls, _ in CLASSES:
        path = os.path.join(raw_dir, "train", f"urls_{cls}.txt")
        if not os.path.isfile(path):
            raise CheckError(f"{path}: no such file; --dev-split movie reads the release's train/urls_pos.txt and "
                             "train/urls_neg.txt (each review's movie); without them use --dev-split review")
        with open(path, "rb") as f:
            for n, raw in enumerate(f):
                try:
                    movies[(cls, n)] = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise CheckError(f"{path}:{n + 1}: not valid UTF-8 ({e.reason})") from None
    return movies


def movie_of(example: Example, cls: str, movies: Dict[Tuple[str, int], str]) -> str:
    path, _, _, review_id = example
    if review_id is None:
        raise CheckError(f"{path}: not named ID_RATING.txt, so its movie is unknown (use --dev-split review)")
    if (cls, review_id) not in movies:
        raise CheckError(f"{path}: review {review_id} has no line in train/urls_{cls}.txt")
    return movies[(cls, review_id)]


def dev_split(train: Dict[str, List[Example]], dev_size: int, seed: int,
              movies: Optional[Dict[Tuple[str, int], str]] = None) -> Tuple[List[Example], List[Example]]:
    """(train, dev): ``dev_size // 2`` reviews of the first class and the rest of the second go to dev;
    with ``movies``, whole movies (drawn in a seeded order, each taken if all its reviews fit)."""
    counts = {cls: dev_size // 2 + (dev_size % 2 if i else 0) for i, (cls, _) in enumerate(CLASSES)}
    for cls, _ in CLASSES:
        if counts[cls] >= len(train[cls]):
            raise CheckError(f"--dev-size {dev_size} takes {counts[cls]} '{cls}' reviews from the training set, "
                             f"which has only {len(train[cls])}")
    rng = random.Random(seed)
    if movies is None:
        chosen = {cls: {train[cls][i][0] for i in rng.sample(range(len(train[cls])), counts[cls])}
                  for cls, _ in CLASSES}
        in_dev = {cls: [e[0] in chosen[cls] for e in train[cls]] for cls, _ in CLASSES}
    else:
        reviews: Dict[str, Counter] = {}  # movie -> reviews per class
        for cls, _ in CLASSES:
            for e in train[cls]:
                reviews.setdefault(movie_of(e, cls, movies), Counter())[cls] += 1
        order = sorted(reviews)
        rng.shuffle(order)
        remaining, dev_movies = dict(counts), set()
        for movie in order:
            if all(reviews[movie][cls] <= remaining[cls] for cls in remaining):
                dev_movies.add(movie)
                remaining = {cls: n - reviews[movie][cls] for cls, n in remaining.items()}
                if not any(remaining.values()):
                    break
        if any(remaining.values()):
            raise CheckError(f"--dev-size {dev_size}: whole movies of the training set do not add up to "
                             f"{counts} reviews; choose another --dev-size or --seed, or --dev-split review")
        in_dev = {cls: [movie_of(e, cls, movies) in dev_movies for e in train[cls]] for cls, _ in CLASSES}
    kept = [e for cls, _ in CLASSES for e, d in zip(train[cls], in_dev[cls]) if not d]
    dev = [e for cls, _ in CLASSES for e, d in zip(train[cls], in_dev[cls]) if d]
    return kept, dev


def split_imdb(raw_dir: str, out_dir: str, dev_size: int = 2500, seed: int = 1,
               by: str = "movie") -> Dict[str, int]:
    """Write ``out_dir``/{input0,label}/{train,valid,test}.txt; returns the review count per split."""
    if dev_size < 1:
        raise CheckError(f"--dev-size must be a positive number of reviews, got {dev_size}")
    if by not in DEV_SPLITS:
        raise CheckError(f"--dev-split must be one of {', '.join(DEV_SPLITS)}, got {by!r}")
    missing = [os.path.join(raw_dir, split, cls) for split in ("train", "test") for cls, _ in CLASSES
               if not os.path.isdir(os.path.join(raw_dir, split, cls))]  # all of them in one message
    if missing:
        raise CheckError(f"missing director{'y' if len(missing) == 1 else 'ies'}: {', '.join(missing)}; "
                         "--raw-dir must be the extracted aclImdb folder (train/pos, train/neg, test/pos, test/neg)")
    movies = read_movies(raw_dir) if by == "movie" else None
    train = {cls: read_class(raw_dir, "train", cls, label) for cls, label in CLASSES}
    test = [e for cls, label in CLASSES for e in read_class(raw_dir, "test", cls, label)]
    kept, dev = dev_split(train, dev_size, seed, movies)
    data = {"train": kept, "valid": dev, "test": test}
    for key in ("input0", "label"):
        os.makedirs(os.path.join(out_dir, key), exist_ok=True)
    for split, examples in data.items():
        for key, column in (("input0", 1), ("label", 2)):
            with open(os.path.join(out_dir, key, f"{split}.txt"), "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(example[column] + "\n" for example in examples))
    return {split: len(examples) for split, examples in data.items()}


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m localness_prep.imdb", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("split", help="check aclImdb, hold out a dev set, write input0/ and label/ text files")
    cmd.add_argument("raw_dir")
    cmd.add_argument("out_dir")
    cmd.add_argument("--dev-size", type=int, default=2500, help="training reviews held out as dev, half per class")
    cmd.add_argument("--seed", type=int, default=1, help="seed of the dev draw")
    cmd.add_argument("--dev-split", choices=DEV_SPLITS, default="movie",
                     help="movie: the dev set is made of whole movies (as the release's train and test sets are)")
    args = parser.parse_args(argv)
    try:
        counts = split_imdb(args.raw_dir, args.out_dir, args.dev_size, args.seed, args.dev_split)
    except CheckError as e:
        sys.exit(f"ERROR: {e}")
    for split, n in counts.items():
        print(f"{split}: {n} reviews")


if __name__ == "__main__":
    main()
