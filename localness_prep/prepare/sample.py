"""The shipped Chinese->English quickstart sample (``data-prep/prepare-sample.sh``; data/sample-zh-en, Tatoeba,
CC BY 2.0 FR): jieba for Chinese, Moses for English, BPE per language, fairseq-preprocess. Offline, ~20 s."""
from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional, Sequence

from ..script import Script, run

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--bpe-tokens N] [--force] [options]

Tokenises (jieba / Moses), BPE-encodes and binarises the Chinese-English sample shipped in
data/sample-zh-en (19k train / 500 valid / 500 test Tatoeba pairs, see its ATTRIBUTION.md).
--raw-dir defaults to that directory (any directory with {train,valid,test}.{zh,en} works).

"""

SPLITS = ("train", "valid", "test")


def usage(s: Script) -> str:
    return s.fill(USAGE) + s.common_usage()


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    if not s.raw_dir:
        s.raw_dir = os.path.join(s.repo, "data", "sample-zh-en")
    s.require_modules("sacremoses", "jieba", "subword_nmt", "fairseq_cli")
    s.prepare_out_dir()

    s.step(f"Inputs ({s.raw_dir})")
    for split in SPLITS:
        for lang in (s.src, s.tgt):
            s.need(f"{split}.{lang}", "")
    s.fetch_inputs()
    s.check_parallel(*[s.input(f"{split}.{lang}") for split in SPLITS for lang in (s.src, s.tgt)])
    for split in SPLITS:
        for lang in (s.src, s.tgt):
            shutil.copyfile(s.input(f"{split}.{lang}"), f"{s.rawtxt}/{split}.{lang}")

    s.step("Tokenise (jieba for zh, Moses for en)")
    s.tokenize_splits()

    s.bpe_binarize_finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run(Script("prepare-sample.sh", usage, src="zh", tgt="en", bpe_tokens=4000, joined=False), body, argv)


if __name__ == "__main__":
    sys.exit(main())
