"""Where and when a result was made: the machine, the date and the command that result files record.

``fairseq-localness-compare`` puts them in its tables' captions, the benchmark's ``--run-json`` into its run file,
and the docs' measured tables (``fairseq_localness.experiments.doc_tables``) read them back from docs/results/.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import platform
import re
import shlex
from typing import Sequence


def machine_description(gpus: int = 0) -> str:
    """``N x GPU model, torch VERSION`` with GPUs, else ``C-core CPU (arch), Python VERSION``."""
    if gpus:
        try:
            import torch

            return f"{gpus} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}"
        except Exception:
            return f"{gpus} GPU(s)"
    return f"{os.cpu_count()}-core CPU ({platform.machine()}), {platform.python_implementation()} {platform.python_version()}"


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def load_average() -> "float | None":
    """The machine's 1-minute load average, or None where the platform has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def run_header(started: datetime.datetime, load_before: "float | None", load_after: "float | None", command: str,
               gpus: int = 0, torch_version: "str | None" = None) -> dict:
    """The provenance a result file under docs/results/ opens with: date, the UTC time span from ``started`` to
    now, the machine, the load average before and after the run, the torch version (where given) and the command."""
    finished = utc_now()
    header = {"date": started.date().isoformat(), "time": f"{started:%H:%M}-{finished:%H:%M} UTC",
              "machine": machine_description(gpus),
              "load_average": None if load_before is None or load_after is None
              else f"{load_before:.1f} before, {load_after:.1f} after"}
    if torch_version:
        header["torch"] = torch_version
    return {**header, "command": command}


def add_result_file_options(parser, what: str) -> None:
    """``--json PATH`` (write ``what`` as a docs/results/ result file) and ``--overwrite`` (replace one)."""
    parser.add_argument("--json", metavar="PATH", help=f"write {what} as a docs/results/ result file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json file")


def result_file_problem(path: str, flag: str, overwrite: bool) -> "str | None":
    """Why ``path`` cannot be written as a result file, checked before anything is measured: it is a directory, it
    exists and ``overwrite`` is not given (nothing a user has is replaced), or a file stands where a directory above
    it should be. None when it can be written."""
    if os.path.isdir(path):
        return f"{flag} {path} is a directory; give a file name"
    if os.path.exists(path) and not overwrite:
        return f"{flag} {path} exists; pass --overwrite to replace it, or choose another file"
    return _file_above(path, flag)


def directory_problem(path: "str | os.PathLike", flag: str) -> "str | None":
    """Why ``path`` cannot be an output directory, checked before any work: it is a file, or a file stands where a
    directory above it should be (making it would fail only after the work). None when it is, or can be made, a
    directory."""
    if os.path.islink(path) and not os.path.exists(path):  # mkdir would refuse it: the link's name is taken
        target = os.readlink(path)
        if _in_a_loop(path):
            return f"{flag} {os.fspath(path)}: a link to {target}, in a loop of links that leads to nothing"
        return f"{flag} {os.fspath(path)}: a link to {target}, which does not exist"
    if os.path.exists(path) and not os.path.isdir(path):
        return f"{flag} {os.fspath(path)}: a file, not a directory"
    return _file_above(path, flag)


def _in_a_loop(path: "str | os.PathLike") -> bool:
    """Whether following the link ``path`` comes back to a link already followed."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def _file_above(path: "str | os.PathLike", flag: str) -> "str | None":
    """The nearest existing path above ``path``, when it is a file rather than a directory, as an error naming
    ``flag``. The path is walked as the kernel reads it, one name at a time: ``notes.md/../out`` needs ``notes.md``
    to be a directory, though ``os.path.abspath`` would simplify it away."""
    shown = os.fspath(path)
    parent = os.sep if os.path.isabs(shown) else ""
    to_make = 0  # names below the last existing one: mkdir makes them, and a '..' after one only undoes it
    for name in shown.split(os.sep)[:-1]:
        if not name or name == os.curdir:
            continue
        if to_make and name == os.pardir:
            parent, to_make = os.path.dirname(parent), to_make - 1
            continue
        parent = os.path.join(parent, name)
        if to_make or not os.path.lexists(parent):
            to_make += 1
        elif not os.path.isdir(parent):
            what = ("a file" if os.path.exists(parent) else
                    "a link in a loop" if _in_a_loop(parent) else "a link to nothing")
            return f"{flag} {shown}: {parent} is {what}, not a directory"
    return None


def write_atomically(path: "str | os.PathLike", data: "str | bytes", errors: str = "strict") -> None:
    """``data`` (text as UTF-8, or bytes) to ``path`` whole or not at all: written beside it, then renamed over it.
    An interruption leaves the earlier file (or none), never half of one that a resume or a docs table would
    trust. The data reach the disk before the rename (fsync): after a crash of the machine, a file system that
    orders neither may otherwise show the new name with no data in it."""
    partial = f"{os.fspath(path)}.partial"
    try:
        if isinstance(data, bytes):
            with open(partial, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        else:
            with open(partial, "w", encoding="utf-8", errors=errors) as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        os.replace(partial, path)
    except BaseException:  # a full disk, an interrupt: the old file stays, and no half of the new one beside it
        if os.path.exists(partial):
            os.remove(partial)
        raise


def write_result_file(path: str, content) -> None:
    """``content`` as a result file: indented JSON, text kept as UTF-8, a final newline; its directory made; the
    file replaced whole (:func:`write_atomically`)."""
    os.makedirs(os.path.dirname(path) or os.curdir, exist_ok=True)  # as given, as result_file_problem walked it
    write_atomically(path, json.dumps(content, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


def command_line(program: str, argv: Sequence[str], env: Sequence[str] = ("OMP_NUM_THREADS",)) -> str:
    """``program argv...`` as a shell would need it, prefixed by the ``env`` variables that are set
    (``OMP_NUM_THREADS=1 python scripts/benchmark.py ...``)."""
    prefix = [f"{name}={shlex.quote(os.environ[name])}" for name in env if os.environ.get(name)]
    return " ".join([*prefix, program, shlex.join(list(argv))]).strip()


def checkout_of(path: os.PathLike) -> "str | None":
    """The repository checkout that holds ``path`` (the nearest directory above it with a pyproject.toml and a
    fairseq_localness/ package), or None."""
    here = os.path.abspath(path)
    while True:
        if os.path.isfile(os.path.join(here, "pyproject.toml")) and os.path.isdir(os.path.join(here, "fairseq_localness")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def portable_paths(text: str, checkouts: Sequence[os.PathLike], python_prefix: "str | None" = None,
                   home: "str | None" = None) -> str:
    """``text`` (a log, a scores.json) with this machine's absolute paths made portable before it is published:
    a path inside one of ``checkouts`` becomes relative to it (``runs/compare/...``, ``.venv/lib/...``), the Python
    environment outside them ``<python>/...``, and the home directory ``~/...``. The published files then read the
    same wherever the checkout lies, and name no directory of the machine that made them."""
    anchors: dict = {}
    for roots, replacement in ((checkouts, ""), ([python_prefix] if python_prefix else [], "<python>/"),
                               ([home] if home else [], "~/")):
        for root in roots:
            for form in {os.path.abspath(root), os.path.realpath(root)}:
                anchor = form.rstrip(os.sep) + os.sep
                inside_a_checkout = replacement and any(anchor.startswith(a) for a, r in anchors.items() if r == "")
                if form != os.sep and not inside_a_checkout:  # never / itself: it would rewrite every path
                    anchors.setdefault(anchor, replacement)
    for anchor in sorted(anchors, key=len, reverse=True):  # the longest first: a checkout inside the home directory
        # only where a path starts: an anchor /u/me/ must not match inside /data/u/me/
        text = re.sub(r"(?<![\w.~/-])" + re.escape(anchor), lambda _: anchors[anchor], text)
    return text
