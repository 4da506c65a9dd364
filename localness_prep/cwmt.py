"""The CWMT parallel corpora of WMT17 Chinese-English as line-aligned text.

WMT17's Zh-En training data includes six CWMT corpora (casia2015, casict2011, casict2015, datum2015,
datum2017, neu2017), each a zip archive of one or more text files per language: ``NAME_ch.txt`` or
``NAME_cn.txt`` (Chinese) beside ``NAME_en.txt`` (English), e.g. ``casict-A_ch.txt`` /
``casict-A_en.txt`` or ``Book1_cn.txt`` / ``Book1_en.txt`` (the file patterns ``*_c[hn].txt`` and
``*_en.txt`` of tensorflow/datasets, ``tensorflow_datasets/translate/wmt.py``, ``CWMT_SUBSET_NAMES``).

    python -m localness_prep.cwmt extract ARCHIVE.zip DIR          # unpack one corpus archive into DIR
    python -m localness_prep.cwmt pairs OUT_ZH OUT_EN CORPUS_DIR... # append every Chinese/English file pair

``pairs`` pairs each Chinese file with the English file of the same stem (``X_ch.txt`` / ``X_cn.txt`` with
``X_en.txt``), in sorted order of the paths, removes carriage returns, and refuses a file without its
partner, a pair with different line counts, a directory without any pair, and text that is not UTF-8.
"""
from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path
from typing import List, Sequence, Tuple

CHINESE = re.compile(r"^(?P<stem>.+)_c[hn]\.txt$")


class CwmtError(ValueError):
    """A corpus directory or archive that does not hold aligned Chinese/English files."""


def file_pairs(directory: Path) -> List[Tuple[Path, Path]]:
    """(Chinese, English) files under ``directory`` (any depth), sorted by path."""
    pairs = []
    for zh in sorted(directory.rglob("*.txt")):
        match = CHINESE.match(zh.name)
        if not match:
            continue
        en = zh.with_name(f"{match.group('stem')}_en.txt")
        if not en.is_file():
            raise CwmtError(f"{zh}: no English file {en.name} beside it")
        pairs.append((zh, en))
    if not pairs:
        raise CwmtError(f"{directory}: no Chinese/English file pair (NAME_ch.txt or NAME_cn.txt with NAME_en.txt)")
    return pairs


def read_lines(path: Path) -> List[str]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise CwmtError(f"{path}: not valid UTF-8 ({err})") from None
    return [line.rstrip("\r") for line in text.split("\n")[: -1 if text.endswith("\n") else None]]


def append_pairs(out_zh: Path, out_en: Path, directories: Sequence[Path]) -> int:
    """Append every pair of every directory to ``out_zh`` / ``out_en``; the number of lines appended."""
    total = 0
    with open(out_zh, "a", encoding="utf-8", newline="\n") as zh_out, \
            open(out_en, "a", encoding="utf-8", newline="\n") as en_out:
        for directory in directories:
            for zh, en in file_pairs(Path(directory)):
                zh_lines, en_lines = read_lines(zh), read_lines(en)
                if len(zh_lines) != len(en_lines):
                    raise CwmtError(f"{zh} has {len(zh_lines)} lines, {en} has {len(en_lines)}")
                zh_out.writelines(line + "\n" for line in zh_lines)
                en_out.writelines(line + "\n" for line in en_lines)
                total += len(zh_lines)
                print(f"    {zh.parent.name}/{zh.name} + {en.name}: {len(zh_lines)} pairs", file=sys.stderr)
    return total


def extract(archive: Path, directory: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as handle:
            handle.extractall(directory)
    except zipfile.BadZipFile as err:
        raise CwmtError(f"{archive}: not a zip archive ({err})") from None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract")
    ex.add_argument("archive", type=Path)
    ex.add_argument("directory", type=Path)
    pa = sub.add_parser("pairs")
    pa.add_argument("out_zh", type=Path)
    pa.add_argument("out_en", type=Path)
    pa.add_argument("directories", type=Path, nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "extract":
            extract(args.archive, args.directory)
        else:
            total = append_pairs(args.out_zh, args.out_en, args.directories)
            print(f"    CWMT: {total} pairs", file=sys.stderr)
    except CwmtError as err:
        raise SystemExit(f"cwmt: {err}")


if __name__ == "__main__":
    main()
