"""Fan et al. (2021)'s summarization setting (Sec. 3.1.2, Table 2), the one place docs, scripts and tests read it.

Sources, cited per value: the paper's text (``../shared/papers/fan2021_mask_attention_networks.txt`` beside the checkout,
Sec. 3.1.2, lines 678-699 of that text) and the authors' released scripts
(LibertFan/MAN, ``summarization/scripts/summarization/{train,test}/*-man-base-{cnndm,gigaword}.sh``).
Where they differ, ``released`` is what the scripts run (what produced Table 2) and ``paper`` is the
text read literally; :data:`TEXT_VS_CODE` says how.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

DATASETS = ("cnndm", "gigaword")
VARIANTS = ("released", "paper")
#: fairseq-generate's own --max-len-b where a script passes none (max length = 0 * source + 200)
FAIRSEQ_DEFAULT_MAX_LEN_B = 200


@dataclass(frozen=True)
class DecodeSetting:
    beam: int
    lenpen: float
    min_len: int
    max_len_b: int
    no_repeat_ngram_size: int
    batch_size: int
    source: str

    def flags(self) -> List[str]:
        """fairseq-generate flags (max_len_a stays 0: the length limit does not grow with the source)."""
        return self.search_flags() + [
            "--beam", str(self.beam), "--lenpen", str(self.lenpen),
            "--max-len-a", "0", "--max-len-b", str(self.max_len_b), "--batch-size", str(self.batch_size),
        ]

    def search_flags(self) -> List[str]:
        """The flags beyond beam, length penalty, length limit and batch size (which the generation runner of
        :mod:`fairseq_localness.evaluation.evaluate` takes as options): source truncation, minimum length and
        trigram blocking."""
        return GENERATE_COMMON + ["--min-len", str(self.min_len),
                                  "--no-repeat-ngram-size", str(self.no_repeat_ngram_size)]


#: the source limit of training (TRAIN_COMMON) applied at test time too: longer test sources are cut, not refused
GENERATE_COMMON: List[str] = ["--truncate-source", "--max-source-positions", "512", "--max-target-positions", "512"]

DECODE: Dict[Tuple[str, str], DecodeSetting] = {
    ("cnndm", "released"): DecodeSetting(
        beam=5, lenpen=2.0, min_len=50, max_len_b=FAIRSEQ_DEFAULT_MAX_LEN_B, no_repeat_ngram_size=3, batch_size=128,
        source="test-man-base-cnndm.sh: BEAM_SIZE=5 MIN_LEN=50 NGRAM_SIZE=3 LEN_PEN=2.0 BATCH_SIZE=128, no max length",
    ),
    ("cnndm", "paper"): DecodeSetting(
        beam=5, lenpen=2.0, min_len=1, max_len_b=50, no_repeat_ngram_size=3, batch_size=128,
        source="Sec. 3.1.2 (lines 683-685, 695-698): trigram blocking, beam 5, max length 50, length penalty 2.0",
    ),
    ("gigaword", "released"): DecodeSetting(
        beam=5, lenpen=1.0, min_len=1, max_len_b=FAIRSEQ_DEFAULT_MAX_LEN_B, no_repeat_ngram_size=3, batch_size=128,
        source="test-man-base-gigaword.sh: BEAM_SIZE=5 MIN_LEN=1 NGRAM_SIZE=3 LEN_PEN=1.0; its MAX_LEN=30 is "
        "never passed to fairseq-generate",
    ),
    ("gigaword", "paper"): DecodeSetting(
        beam=5, lenpen=1.0, min_len=1, max_len_b=30, no_repeat_ngram_size=3, batch_size=128,
        source="Sec. 3.1.2 (lines 683-685, 695-698): trigram blocking, beam 5, max length 30, length penalty 1.0",
    ),
}

TEXT_VS_CODE = (
    "CNN/DM: the text's 'max length 50' is a minimum length in the released test script (--min-len 50, no "
    "--max-len-b, so fairseq's 200); Gigaword: the script sets MAX_LEN=30 but never passes it "
    "(min length 1, max 200). Training: the scripts add --update-freq 8 (CNN/DM) / 3 (Gigaword), "
    "--adam-eps 1e-6, --weight-decay 0.01, --label-smoothing 0.1, --attention-dropout 0.1 and "
    "--max-source/target-positions 512, none of which the text mentions."
)

#: Sec. 3.1.2 lines 689-695 and train-man-base-{cnndm,gigaword}.sh (values shared by both data sets)
TRAIN_COMMON: List[str] = [
    "--task", "translation", "--source-lang", "source", "--target-lang", "target",
    "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",  # scripts
    "--optimizer", "adam", "--adam-betas", "(0.9,0.98)",  # text: Adam (0.9, 0.98)
    "--adam-eps", "1e-6", "--weight-decay", "0.01",  # scripts
    "--clip-norm", "0.1", "--dropout", "0.1",  # text: "dropout and clip-norm are both 0.1"
    "--attention-dropout", "0.1",  # scripts
    "--lr-scheduler", "inverse_sqrt", "--warmup-init-lr", "1e-7",  # text; init lr from the scripts
    "--warmup-updates", "8000", "--max-update", "50000",  # text: "warmup steps is 8k and the total updates is 50k"
    "--max-source-positions", "512", "--max-target-positions", "512",  # scripts (MASS's 512 positions)
    "--truncate-source",  # sources longer than 512 tokens are cut (MASS truncated them in preprocessing)
    "--skip-invalid-size-inputs-valid-test", "--seed", "1",  # scripts
]

#: per data set: text lines 690-692 (peak lr, max tokens) and the scripts' --update-freq on 4 GPUs (line 699)
TRAIN_PER_DATASET: Dict[str, List[str]] = {
    "cnndm": ["--lr", "1e-3", "--max-tokens", "8192", "--update-freq", "8"],
    "gigaword": ["--lr", "8e-4", "--max-tokens", "12288", "--update-freq", "3"],
}

#: Table 2's rows as architectures of this plugin
ARCHITECTURES = {"Transformer": "transformer_summarization", "Ours": "transformer_dman_summarization"}

#: Table 2 (text lines 816-823): F1 x 100 of ROUGE-1, ROUGE-2, ROUGE-L (files2rouge) and R-avg (their mean);
#: None = "-" (not reported)
PUBLISHED: Dict[str, Dict[str, Tuple[float, float, float, float] | None]] = {
    "LEAD-3": {"cnndm": (40.42, 17.62, 36.67, 31.57), "gigaword": None},
    "PTGEN+Coverage": {"cnndm": (39.53, 17.28, 36.38, 31.06), "gigaword": None},
    "Dynamic Conv": {"cnndm": (39.84, 16.25, 36.73, 30.94), "gigaword": None},
    "Transformer": {"cnndm": (39.50, 16.06, 36.63, 30.73), "gigaword": (37.57, 18.90, 34.69, 30.38)},
    "Ours": {"cnndm": (40.98, 18.29, 37.88, 32.38), "gigaword": (38.28, 19.46, 35.46, 31.06)},
}


def decode_setting(dataset: str, variant: str = "released") -> DecodeSetting:
    if dataset not in DATASETS:
        raise ValueError(f"--dataset: {dataset!r} is not one of {', '.join(DATASETS)}")
    if variant not in VARIANTS:
        raise ValueError(f"--variant: {variant!r} is not one of {', '.join(VARIANTS)}")
    return DECODE[dataset, variant]


def train_flags(dataset: str) -> List[str]:
    decode_setting(dataset)  # validates the name
    return TRAIN_COMMON + TRAIN_PER_DATASET[dataset]


def main() -> None:
    """Print the flags: ``python -m fairseq_localness.summarization.settings {train,generate} DATASET [VARIANT]``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("what", choices=("train", "generate"))
    parser.add_argument("dataset", choices=DATASETS)
    parser.add_argument("variant", nargs="?", default="released", choices=VARIANTS)
    args = parser.parse_args()
    flags = train_flags(args.dataset) if args.what == "train" else decode_setting(args.dataset, args.variant).flags()
    # plain words, no shell quoting: the output is meant for an unquoted $(...) (no value holds a space or glob)
    assert not any(set(flag) & set(" *?[") for flag in flags)
    print(" ".join(flags))


if __name__ == "__main__":
    main()
