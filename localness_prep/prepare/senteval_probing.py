"""SentEval's ten probing tasks (``data-prep/prepare-senteval-probing.sh``; Conneau et al. 2018), as Xu et al.
(2019, Tables 3-4) probe them: data/probing/{sentence_length,word_content,...}.txt, each line
"tr|va|te<TAB>label<TAB>sentence", 100k/10k/10k instances per task. Every file is checked (UTF-8, fields,
partition names, every partition present, va/te labels seen in tr), then written normalised into --out.
Offline with --raw-dir (a SentEval checkout's data/probing), seconds on one core."""
from __future__ import annotations

import contextlib
import os
import sys
from typing import List, Optional, Sequence

from .. import senteval
from ..script import Script, run

ALL_TASKS = ("sentence_length,word_content,tree_depth,top_constituents,bigram_shift,past_present,subj_number,"
             "obj_number,odd_man_out,coordination_inversion")
COMMIT = "5d6dc117d1ac30357ddaeb7347fb5684e9b87015"
URL = f"https://raw.githubusercontent.com/facebookresearch/SentEval/{COMMIT}/data/probing"

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--tasks NAME,NAME] [--force]

Checks SentEval's probing files NAME.txt (in --raw-dir, else downloaded from
$URL) and writes them, normalised to three TAB-separated fields, to DIR/NAME.txt.
  --raw-dir DIR  SentEval's data/probing directory (the only way to run offline)
  --out DIR      output directory (required)
  --tasks LIST   comma-separated task names [all ten: $ALL_TASKS]
  --force        rebuild even if DIR holds a finished run
Then: fairseq-localness-probe evaluate --checkpoint CKPT --tasks DIR ...   (docs/probing.md)
"""


def usage(s: Script) -> str:
    return s.fill(USAGE, URL=URL, ALL_TASKS=ALL_TASKS)


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--tasks":
        s.need_value(args)
        s.tasks = args[1]
        return 2
    return 0


def split_list(text: str) -> List[str]:
    """The comma-separated fields of the first line of ``text`` (a last empty field after a comma is dropped)."""
    line = text.split("\n", 1)[0]
    if not line:
        return []
    fields = line.split(",")
    return fields[:-1] if line.endswith(",") else fields


def rmdir(path: str) -> None:
    """Remove ``path`` if it is an empty directory."""
    with contextlib.suppress(OSError):
        os.rmdir(path)


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    s.prepare_out_dir()
    for path in (s.tok, s.rawtxt):  # made for translation data; nothing goes there
        rmdir(path)

    s.step("Inputs")
    task_list = split_list(s.tasks)
    if not task_list:
        s.die("--tasks is empty")
    for task in task_list:
        if task not in ALL_TASKS.split(","):
            s.die(f"--tasks: unknown task '{task}' (SentEval's are {ALL_TASKS})")
        s.need(f"{task}.txt", f"{URL}/{task}.txt")
    s.fetch_inputs()
    source = os.path.dirname(s.input(f"{task_list[0]}.txt"))
    s.note(f"reading SentEval probing files from {source}")

    s.step(f"Check the files and write them to {s.out_dir}")
    for task in ALL_TASKS.split(","):  # a rebuild keeps no task of an earlier run
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{s.out_dir}/{task}.txt")
    s.prep(senteval, "copy", "--tasks", s.tasks, source, s.out_dir)

    s.mark_done()
    rmdir(s.tmp)
    s.say(f"\nDone: {s.out_dir}\n  probe: fairseq-localness-probe evaluate --checkpoint CKPT --tasks {s.out_dir} "
          "--bpe-codes CODES ...\n")
    s.say("         (docs/probing.md)\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-senteval-probing.sh", usage, src="en", tgt="label", bpe_tokens=0, joined=False,
                    option=option, tasks=ALL_TASKS)
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
