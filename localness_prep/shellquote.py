"""Shell quoting as bash's ``printf %q`` writes it.

The data-prep scripts record their arguments in ``OUT/.prep-done`` and print a command to rerun in
some messages, quoted so that they can be pasted into a shell; this is the quoting bash 5 gives in a
UTF-8 locale (the scripts were shell scripts before), so the records stay the same:

* an empty argument is ``''``;
* an argument with a character that is not printable (a tab, a newline, bytes that are not UTF-8)
  is ``$'...'`` with C escapes;
* otherwise each shell-special character gets a backslash (``a\\ b``, ``\\~x``, ``x=\\~y``).
"""
from __future__ import annotations

import os
import unicodedata
from typing import Sequence

#: characters bash escapes with a backslash anywhere in a word (``sh_backslash_quote``)
_SPECIAL = frozenset(" \t\n'\"\\|&;()<>!{}*[]?^$`,")
#: ``$'...'`` escapes of ``ansic_quote``
_ANSI_C = {0x1B: "\\E", 0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t",
           0x0B: "\\v", 0x5C: "\\\\", 0x27: "\\'"}


def _characters(raw: bytes):
    """(text, bytes) of each character of ``raw``: a UTF-8 sequence, or one byte that is not valid UTF-8."""
    i = 0
    while i < len(raw):
        for size in (1, 2, 3, 4):
            try:
                yield raw[i:i + size].decode("utf-8"), raw[i:i + size]
                i += size
                break
            except UnicodeDecodeError:
                continue
        else:
            yield None, raw[i:i + 1]
            i += 1


def _printable(char: str | None) -> bool:
    return char is not None and unicodedata.category(char) not in ("Cc", "Cn", "Cs", "Zl", "Zp")


def quote(arg: str) -> str:
    """``arg`` quoted as ``printf %q`` does (arguments that were not UTF-8 arrive surrogate-escaped)."""
    raw = os.fsencode(arg)
    if not raw:
        return "''"
    chars = list(_characters(raw))
    if not all(_printable(c) for c, _ in chars):
        out = []
        for char, data in chars:
            if len(data) == 1 and data[0] in _ANSI_C:
                out.append(_ANSI_C[data[0]])
            elif _printable(char):
                out.append(char)
            else:
                out.extend(f"\\{b:03o}" for b in data)
        return "$'" + "".join(out) + "'"
    out = []
    for i, (char, _) in enumerate(chars):
        before = chars[i - 1][0] if i else None
        if char in _SPECIAL or (char == "#" and i == 0) or (char == "~" and (i == 0 or before in (":", "="))):
            out.append("\\")
        out.append(char)
    return "".join(out)


def quote_args(args: Sequence[str]) -> str:
    """The arguments quoted and joined by spaces (``printf '%q ' "$@"`` without the last space)."""
    return " ".join(quote(a) for a in args)
