"""The steps shared by ``data-prep/prepare-cnndm.sh`` and ``data-prep/prepare-gigaword.sh`` (:mod:`.cnndm`,
:mod:`.gigaword`): Fan et al. (2021)'s summarization data (docs/summarization.md), prepared as the authors did
through MASS: BERT uncased WordPiece on both sides, one dictionary (the BERT vocabulary), fairseq-preprocess.
Offline only: --raw-dir holds the common layout {train,val,test}.{source,target} (one text / one summary a
line)."""
from __future__ import annotations

import contextlib
import os
from typing import List, Optional, Sequence

from .. import checks, summarization
from ..script import Script, run

USAGE = """\
Usage: bash $SCRIPT_NAME --raw-dir DIR --bert-vocab FILE --out DIR [--force] [--workers N]

  --raw-dir DIR      train.source train.target val.source val.target test.source test.target
                     (UTF-8, line-aligned); never downloaded
  --bert-vocab FILE  bert-base-uncased's vocab.txt (30,522 WordPiece entries; the authors' tokeniser,
                     through MASS): a download you make yourself, e.g. from the BERT release
  --out DIR          output directory (required)
  --workers N        tokeniser and fairseq-preprocess processes [1]
  --force            rebuild even if DIR holds a finished run
Output: DIR/data-bin (train/valid/test, dict.source.txt = dict.target.txt = the BERT vocabulary),
DIR/{train,valid,test}.{source,target} (WordPiece text), DIR/raw/test.{source,target} (the test text as
given). Train / generate / score: docs/summarization.md.
"""


def usage(s: Script) -> str:
    return s.fill(USAGE)


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--bert-vocab":
        s.need_value(args)
        s.bert_vocab = args[1]
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    if not s.raw_dir:
        s.die(f"--raw-dir DIR is required: {s.dataset} is never downloaded by this script (see --help)")
    if not s.bert_vocab:
        s.die("--bert-vocab FILE is required (bert-base-uncased's vocab.txt; see --help)")
    if not os.path.isfile(s.bert_vocab):
        s.die(f"--bert-vocab '{s.bert_vocab}' is not a file")
    s.require_modules("fairseq_cli")
    s.step(f"Check the files in {s.raw_dir}")
    s.prep(summarization, "check", s.raw_dir)
    s.prepare_out_dir()
    out = s.out_dir

    s.step("BERT WordPiece (uncased) tokenisation")
    s.prep(summarization, "prepare", s.raw_dir, s.bert_vocab, out, "--workers", s.workers)

    s.step("Binarise (fairseq-preprocess, the BERT vocabulary as the one dictionary)")
    s.quiet(f"{s.tmp}/preprocess.log", s.py, "-m", "fairseq_cli.preprocess", "--source-lang", s.src, "--target-lang",
            s.tgt, "--trainpref", f"{out}/train", "--validpref", f"{out}/valid", "--testpref", f"{out}/test",
            "--destdir", f"{out}/data-bin", "--srcdict", f"{out}/dict.txt", "--tgtdict", f"{out}/dict.txt",
            "--workers", s.workers)
    with contextlib.suppress(FileNotFoundError):
        os.remove(f"{out}/dict.txt")

    s.step("Summary")
    s.prep(checks, "report", out, s.src, s.tgt)
    s.mark_done()
    s.say(f"\nDone: {out}\n  train: fairseq-train {out}/data-bin --user-dir {s.repo}/fairseq_localness "
          "--arch transformer_dman_summarization \\\n")
    s.say(f"             $(python -m fairseq_localness.summarization.settings train {s.dataset})   "
          "(docs/summarization.md)\n")


def main_for(name: str, dataset: str, argv: Optional[Sequence[str]] = None) -> int:
    """The script ``name`` for ``dataset`` (cnndm or gigaword)."""
    script = Script(name, usage, src="source", tgt="target", bpe_tokens="", joined=False, option=option,
                    dataset=dataset, bert_vocab="")
    return run(script, body, argv)
