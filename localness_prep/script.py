"""What every ``data-prep/prepare-*.sh`` script shares: the command line, the output directory, the inputs, BPE,
binarisation and the final summary.

A script (a module of :mod:`localness_prep.prepare`) builds a :class:`Script` with its defaults, its usage text and
its own options, and :func:`run` calls its body with it::

    s.parse_args(argv); s.require_modules(...); s.prepare_out_dir()
    s.need(...); s.fetch_inputs()        # locate inputs in --raw-dir (or download them)
    ... its own extraction / tokenisation steps, writing TOK/{train,valid,test}.{SRC,TGT} ...
    s.bpe_all(s.tok, s.out_dir); s.binarize(); s.finish()

Layout of ``--out DIR``: ``orig/`` (downloads, extracted archive members), ``raw/`` (plain text before
tokenisation; ``raw/test-ref.TGT`` or ``raw/test.TGT`` is the reference for sacreBLEU), ``tmp/`` (scratch),
``tok/`` (tokenised text), ``{train,valid,test}.{src,tgt}`` (BPE text), ``code*`` or ``spm*.model`` (BPE
model), ``data-bin/`` (fairseq-preprocess output), ``.prep-done`` (marks a finished run).

The helpers of this package (:mod:`.tokenize`, :mod:`.checks`, ...) run in this process, through their own
command lines (:meth:`Script.prep`); subword-nmt and fairseq-preprocess run as child processes of the
interpreter that :attr:`Script.py` names, so nothing here imports torch or fairseq.

Errors: :meth:`Script.die` prints ``ERROR: ...`` and ends the script with status 1; a step that fails (a helper
or a child process with a non-zero status) ends it with that status after the line ``FAILED in step [N] NAME.
OUT is incomplete; ...``.
"""
from __future__ import annotations

import contextlib
import glob
import importlib.util
import io
import json
import os
import re
import shutil
import string
import subprocess
import sys
import time
import traceback
from types import ModuleType
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import checks, spm, tokenize
from .shellquote import quote_args

#: what a run writes into --out (and --force replaces); globs
OUTPUT_NAMES = ("data-bin", "raw", "tmp", "tok", "train.*", "valid.*", "test.*", "code", "code.*", "spm.*",
                ".prep-done")
#: environment variables the data-prep/*.sh doors set: the script as it was called ($0), and the checkout
SCRIPT_ENV, REPO_ENV = "LOCALNESS_PREP_SCRIPT", "LOCALNESS_PREP_REPO"


class Stop(Exception):
    """Ends the script with ``status``; ``failed``: print the FAILED line first (a step failed)."""

    def __init__(self, status: int, failed: bool = False):
        super().__init__(status)
        self.status, self.failed = status, failed


def is_int(text: str) -> bool:
    """A positive integer without leading zeros."""
    return re.fullmatch(r"[1-9][0-9]*", text) is not None


def is_count(text: str) -> bool:
    """A non-negative integer."""
    return re.fullmatch(r"[0-9]+", text) is not None


def count_lines(path: str) -> int:
    """Newlines in ``path`` (``wc -l``)."""
    n = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


def count_records(path: str) -> int:
    """Lines of ``path``, a last line without newline included."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def read_lines(path: str) -> List[bytes]:
    """The lines of ``path`` without their newlines (a last line without newline counts)."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    return lines[:-1] if data.endswith(b"\n") or not data else lines


def tail(data: bytes, n: int) -> bytes:
    """The last ``n`` lines of ``data`` (``tail -n N``: lines end with a newline, a carriage return does not end one)."""
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return b"\n".join(lines[-n:]) + (b"\n" if data.endswith(b"\n") else b"") if data else b""


def concatenate(paths: Sequence[str], out: str) -> None:
    """``cat PATHS > OUT``."""
    with open(out, "wb") as fout:
        for path in paths:
            with open(path, "rb") as fin:
                shutil.copyfileobj(fin, fout, 1 << 20)


def remove(path: str) -> None:
    """``rm -rf PATH`` (a link is removed, not followed)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def repo_dir() -> str:
    """The checkout: as the door in data-prep/ found it, else the directory above this package."""
    return os.environ.get(REPO_ENV) or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Script:
    """One run of a data-prep script: its options, paths and progress (the state the shell scripts kept in
    variables), and the steps they share."""

    def __init__(self, name: str, usage: Callable[["Script"], str], *, src: str, tgt: str, bpe_tokens: object,
                 joined: bool, option: Optional[Callable[["Script", List[str]], int]] = None, **extra):
        #: the script as called ($0) and its file name
        self.repo = repo_dir()
        self.path = os.environ.get(SCRIPT_ENV) or os.path.join(self.repo, "data-prep", name)
        self.name = os.path.basename(self.path)
        self.usage, self.option = usage, option
        self.src, self.tgt, self.bpe_tokens, self.joined = src, tgt, str(bpe_tokens), joined
        self.lowercased = self.compound_split = False
        self.raw_dir = self.out_dir = ""
        self.bpe_tool, self.force, self.workers = "subword-nmt", False, "1"
        # the training corpus, recorded in data-bin/prep-info.json ("corpus"): a script names its variants (e.g.
        # wmt17-zh-en-all vs wmt17-zh-en-nc-v12); scripts/reproduce.sh refuses a paper table whose data is not
        # the corpus its evaluation entry names (configs/paper_tables.yaml, `corpus`)
        corpus = self.name[:-3] if self.name.endswith(".sh") else self.name
        self.corpus = corpus[len("prepare-"):] if corpus.startswith("prepare-") else corpus
        self.step_no, self.step_name = 0, "start"
        self.file_of: Dict[str, str] = {}          # input name (archive member or file) -> path on disk
        self.pending: List[Tuple[str, str, str]] = []  # (archive, url, member) still to extract or download
        self.quoted_args = ""
        self.orig = self.tmp = self.tok = self.rawtxt = ""
        # the interpreter of the child processes (subword-nmt, fairseq-preprocess): $PYTHON, else the
        # repository's .venv, else python3 on PATH
        venv = os.path.join(self.repo, ".venv", "bin", "python")
        self.py = (os.environ.get("PYTHON") or (venv if os.access(venv, os.X_OK) and os.path.isfile(venv) else "")
                   or shutil.which("python3") or shutil.which("python") or sys.executable)
        for key, value in extra.items():
            setattr(self, key, value)

    # ------------------------------------------------------------------------------------------ printing

    def say(self, text: str) -> None:
        sys.stdout.write(text)

    def note(self, text: str) -> None:
        self.say(f"    {text}\n")

    def step(self, name: str) -> None:
        self.step_no, self.step_name = self.step_no + 1, name
        self.say(f"\n==> [{self.step_no}] {name}  ({time.strftime('%H:%M:%S')})\n")

    def die(self, message: str) -> None:
        sys.stdout.flush()
        sys.stderr.write(f"\nERROR: {message}\n")
        raise Stop(1)

    def failed_line(self) -> str:
        return (f"\nFAILED in step [{self.step_no}] {self.step_name}. {self.out_dir or 'the output directory'} is "
                "incomplete; rerunning the same command starts over.\n")

    @staticmethod
    def flush() -> None:
        sys.stdout.flush()
        sys.stderr.flush()

    def fill(self, text: str, **values: object) -> str:
        """``text`` (a usage text) with ``$SCRIPT_NAME``, ``$SRC``, ``$TGT``, ``$BPE_TOKENS`` and ``values``
        filled in, as a shell here-document fills in variables."""
        return string.Template(text).substitute(SCRIPT_NAME=self.name, SRC=self.src, TGT=self.tgt,
                                                BPE_TOKENS=self.bpe_tokens, **values)

    def common_usage(self) -> str:
        joined = "joined" if self.joined else "separate"
        return f"""Common options:
  --raw-dir DIR          already-downloaded inputs (archives as downloaded, or their extracted
                         files); the only way to run offline. Without it, inputs are downloaded
                         into OUT/orig from the official URLs (wget or curl).
  --out DIR              output directory (required)
  --bpe-tokens N         BPE merges (subword-nmt) or vocabulary size (sentencepiece) [{self.bpe_tokens}]
  --bpe TOOL             subword-nmt (default) or sentencepiece
  --joined-dictionary    one BPE model and one dictionary for both languages (shared embeddings)
  --no-joined-dictionary separate BPE models and dictionaries      [default: {joined}]
  --workers N            processes for tokenisation, BPE and fairseq-preprocess [1]
  --force                rebuild even if OUT holds a finished run (replaces only this script's
                         outputs; downloads in OUT/orig are kept)
  -h, --help             this help
Environment: PYTHON=/path/to/python (default: the repository's .venv, else python3 on PATH);
it needs fairseq, sacremoses, subword-nmt (and jieba / fugashi+unidic-lite / sentencepiece).
"""

    # ------------------------------------------------------------------------------------- running things

    def prep(self, module: ModuleType, *args: str, indent: bool = False) -> None:
        """Run a helper's command line (``module.main``) in this process; ``indent``: its standard output
        indented by four spaces. A helper that exits with an error fails the step."""
        self.flush()
        argv = sys.argv
        sys.argv = [module.__file__ or module.__name__]  # the helper's own name in its messages, as `python -m` gives
        captured = io.StringIO()
        try:
            with contextlib.redirect_stdout(captured) if indent else contextlib.nullcontext():
                module.main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
            if code is None or code == 0:
                return
            if not isinstance(code, int):
                self.flush()
                print(code, file=sys.stderr)
                code = 1
            raise Stop(code, failed=True) from None
        except Stop:
            raise
        except Exception:
            self.flush()
            traceback.print_exc()
            raise Stop(1, failed=True) from None
        finally:
            sys.argv = argv
            if indent and captured.getvalue():
                lines = captured.getvalue().split("\n")
                self.say("".join(f"    {line}\n" for line in lines[:-1]) + (f"    {lines[-1]}" if lines[-1] else ""))

    def call(self, *cmd: str) -> None:
        """Run a child process; a non-zero status fails the step."""
        self.flush()
        status = subprocess.run(list(cmd)).returncode
        if status:
            raise Stop(status if status > 0 else 128 - status, failed=True)

    def quiet(self, log: str, *cmd: str) -> None:
        """Run ``cmd`` with its output in ``log``; show the end of ``log`` if it fails."""
        self.flush()
        try:
            with open(log, "wb") as f:
                status = subprocess.run(list(cmd), stdout=f, stderr=subprocess.STDOUT).returncode
        except OSError as exc:
            sys.stderr.write(f"{exc}\n")
            status = 1
        if status:
            with contextlib.suppress(OSError), open(log, "rb") as f:
                sys.stderr.write(tail(f.read(), 20).decode("utf-8", "surrogateescape"))
            self.die(f"failed: {' '.join(cmd)} (log: {log})")

    # ------------------------------------------------------------------------------- arguments, checks

    def need_value(self, args: List[str]) -> None:
        if not (len(args) >= 2 and args[1] and not args[1].startswith("--")):
            self.die(f"{args[0]} needs a value (see --help)")

    def integer_value(self, args: List[str]) -> str:
        """The value of the flag ``args[0]``, which must be a positive integer (else a message naming the flag)."""
        self.need_value(args)
        if not is_int(args[1]):
            self.die(f"{args[0]} must be a positive integer, got '{args[1]}'")
        return args[1]

    def parse_args(self, argv: Sequence[str]) -> None:
        self.quoted_args = quote_args(argv)
        args = list(argv)
        while args:
            if args[0].startswith("--") and "=" in args[0][2:]:
                args[:1] = args[0].split("=", 1)
            flag = args[0]
            if flag == "--raw-dir":
                self.need_value(args)
                self.raw_dir = args[1]
                del args[:2]
            elif flag == "--out":
                self.need_value(args)
                self.out_dir = args[1]
                del args[:2]
            elif flag == "--bpe-tokens":
                self.bpe_tokens = self.integer_value(args)
                del args[:2]
            elif flag == "--bpe":
                self.need_value(args)
                if args[1] not in ("subword-nmt", "sentencepiece"):
                    self.die(f"--bpe must be subword-nmt or sentencepiece, got '{args[1]}'")
                self.bpe_tool = args[1]
                del args[:2]
            elif flag in ("--joined-dictionary", "--no-joined-dictionary"):
                self.joined = flag == "--joined-dictionary"
                del args[:1]
            elif flag == "--workers":
                self.workers = self.integer_value(args)
                del args[:2]
            elif flag == "--force":
                self.force = True
                del args[:1]
            elif flag in ("-h", "--help"):
                self.say(self.usage(self))
                raise Stop(0)
            else:
                shift = self.option(self, args) if self.option else 0
                if shift <= 0:
                    self.die(f"unknown option '{flag}' (see {self.name} --help)")
                del args[:shift]
        if not self.out_dir:
            self.die(f"--out DIR is required (see {self.name} --help)")
        if self.raw_dir and not os.path.isdir(self.raw_dir):
            self.die(f"--raw-dir '{self.raw_dir}' is not a directory")
        self.out_dir = os.path.realpath(self.out_dir)
        if self.raw_dir:
            self.raw_dir = os.path.realpath(self.raw_dir)
            inside = self.raw_dir + "/"
            if not inside.startswith(self.out_dir + "/orig/") and inside.startswith(self.out_dir + "/"):
                self.die("--raw-dir must not be --out or inside it (other than OUT/orig): outputs there may be "
                         "replaced")
        self.set_paths()

    def set_paths(self) -> None:
        self.orig, self.tmp, self.tok, self.rawtxt = (os.path.join(self.out_dir, d)
                                                      for d in ("orig", "tmp", "tok", "raw"))

    def require_modules(self, *modules: str) -> None:
        """Fail listing every Python module that the interpreter of the child processes cannot find."""
        if self.bpe_tool == "sentencepiece":
            modules += ("sentencepiece",)
        if self.py == sys.executable:
            missing = [m for m in modules if importlib.util.find_spec(m) is None]
        else:
            probe = subprocess.run([self.py, "-c", "import importlib.util as u, sys\n"
                                    "print(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))", *modules],
                                   stdout=subprocess.PIPE, text=True)
            if probe.returncode:
                self.die(f"cannot run {self.py}")
            missing = probe.stdout.split()
        if missing:
            self.die(f"python ({self.py}) lacks module(s): {' '.join(missing)}. Install the package with its extras "
                     "(pip install -e '.[ja]' in the repository) or set PYTHON to the right interpreter.")

    def prepare_out_dir(self) -> None:
        """Refuse to touch a finished run (unless --force) or a foreign non-empty directory."""
        out = self.out_dir
        if os.path.exists(out) and not os.path.isdir(out):
            self.die(f"--out {out}: a file, not a directory. Nothing was changed; choose another --out.")
        done = os.path.join(out, ".prep-done")
        if os.path.exists(done):
            if not self.force:
                with open(done, "rb") as f:
                    first = os.fsdecode(f.readline().rstrip(b"\n"))
                self.die(f"{out} already holds finished data ({first}).\nNothing was changed. To rebuild it, rerun "
                         f"with --force:\n  bash {self.path} {self.quoted_args} --force\nor choose another --out.")
            self.note(f"--force: replacing the previous outputs in {out} (downloads in orig/ are kept)")
        elif os.path.isdir(out) and os.listdir(out) and not os.path.exists(os.path.join(out, ".prep-started")):
            if not self.force:
                self.die(f"{out} is not empty and was not created by {self.name}; refusing to write into it.\n"
                         "Choose a new or empty --out, or pass --force to write there anyway (only these names are "
                         f"replaced:\n{' '.join(OUTPUT_NAMES)}).")
        if os.path.isdir(out):
            for name in OUTPUT_NAMES:
                for path in glob.glob(os.path.join(glob.escape(out), name)):
                    remove(path)
        for d in (out, self.tmp, self.tok, self.rawtxt):
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(out, ".prep-started"), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(f"{self.name} {time.strftime('%Y-%m-%d %H:%M:%S')}\n")

    def mark_done(self) -> None:
        """``.prep-done`` (script, date, arguments) replaces ``.prep-started``."""
        with open(os.path.join(self.out_dir, ".prep-done"), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(f"{self.name} {time.strftime('%Y-%m-%d %H:%M:%S')} | {self.quoted_args}\n")
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self.out_dir, ".prep-started"))

    # ------------------------------------------------------------------------------------------- inputs

    def need(self, source: str, url: str, *members: str) -> None:
        """``source`` is an archive holding ``members`` (paths inside it), or a plain file when no member is
        given. Each needed file is taken from --raw-dir (extracted file or the archive), else downloaded from
        ``url`` into OUT/orig. ``url`` "" means it cannot be downloaded (licensed data)."""
        for member in members or (source,):
            if self.raw_dir and os.path.isfile(os.path.join(self.raw_dir, member)):
                self.file_of[member] = os.path.join(self.raw_dir, member)
            else:
                self.pending.append((source, url, member))

    def download(self, url: str, dst: str) -> bool:
        self.note(f"downloading {url}")
        part = dst + ".part"
        if shutil.which("wget"):
            cmd = ["wget", "-q", "--tries=2", "--timeout=60", "-O", part, url]
        elif shutil.which("curl"):
            cmd = ["curl", "-fsSL", "--retry", "1", "--connect-timeout", "60", "-o", part, url]
        else:
            self.note("neither wget nor curl is installed")
            return False
        self.flush()
        if subprocess.run(cmd).returncode == 0:
            os.replace(part, dst)
            return True
        with contextlib.suppress(FileNotFoundError):
            os.remove(part)
        return False

    def fetch_inputs(self) -> None:
        """Resolve everything asked for with :meth:`need`: locate (or download) each source, then extract.
        Everything that is missing is reported in one message."""
        sources: List[str] = []
        url_of: Dict[str, str] = {}
        members_of: Dict[str, List[str]] = {}
        path_of: Dict[str, str] = {}
        problems: List[str] = []
        for source, url, member in self.pending:
            if source not in url_of:
                sources.append(source)
            url_of[source] = url
            if member != source:
                members_of.setdefault(source, []).append(member)
        for s in sources:
            what = s + (f" (or its files: {' '.join(members_of[s])})" if members_of.get(s) else "")
            if self.raw_dir and os.path.isfile(os.path.join(self.raw_dir, s)):
                path_of[s] = os.path.join(self.raw_dir, s)
            elif self.raw_dir:
                problems.append(what)
            elif os.path.isfile(os.path.join(self.orig, s)):
                path_of[s] = os.path.join(self.orig, s)  # downloaded by an earlier run
            elif not url_of[s]:
                problems.append(f"{what}: cannot be downloaded, pass --raw-dir")
            else:
                os.makedirs(self.orig, exist_ok=True)
                if self.download(url_of[s], os.path.join(self.orig, s)):
                    path_of[s] = os.path.join(self.orig, s)
                else:
                    problems.append(f"{s}  <- {url_of[s]}")
        listed = "\n".join(f"  {p}" for p in problems)
        if problems and self.raw_dir:
            expected = (": each archive as downloaded, or the listed files\nextracted from it (same relative paths)."
                        if members_of else " (same relative paths).")
            urls = "".join(f"\n  {s}  <- {url_of[s]}" for s in sources if url_of[s])
            self.die(f"missing input(s) in --raw-dir {self.raw_dir}:\n{listed}\nExpected inside {self.raw_dir}"
                     f"{expected}{urls}")
        elif problems:
            self.die(f"could not download (no network, or the URL moved):\n{listed}\nFetch these files yourself into "
                     f"a directory DIR and rerun with --raw-dir DIR, e.g.\n  bash {self.path} {self.quoted_args} "
                     "--raw-dir DIR")
        for s in sources:
            members = members_of.get(s, [])
            if not members:
                self.file_of[s] = path_of[s]
                continue
            os.makedirs(self.orig, exist_ok=True)
            self.flush()
            subprocess.run(["tar", "-xf", path_of[s], "-C", self.orig, "--", *members], stderr=subprocess.DEVNULL)
            absent = []
            for m in members:
                if os.path.isfile(os.path.join(self.orig, m)):
                    self.file_of[m] = os.path.join(self.orig, m)
                else:
                    absent.append(m)
            if absent:
                self.die(f"archive {path_of[s]} lacks: {' '.join(absent)}\n(its first entries: "
                         f"{self.first_entries(path_of[s])})")
            self.note(f"extracted {len(members)} file(s) from {path_of[s]}")
        self.pending = []

    @staticmethod
    def first_entries(archive: str, n: int = 8) -> str:
        """The first ``n`` names ``tar -tf`` lists, each followed by a space."""
        names = []
        with subprocess.Popen(["tar", "-tf", archive], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as tar:
            for line in tar.stdout:
                names.append(os.fsdecode(line.rstrip(b"\n")) + " ")
                if len(names) == n:
                    tar.kill()
                    break
        return "".join(names)

    def input(self, name: str) -> str:
        """Path of a file asked for with :meth:`need`."""
        if name not in self.file_of:
            raise KeyError(f"internal error: {name} was not requested with need")
        return self.file_of[name]

    # --------------------------------------------------------------------------------------- text steps

    def check_parallel(self, *files: str) -> None:
        """Equal line counts and valid UTF-8 of SRC TGT [SRC TGT ...]."""
        self.prep(checks, "parallel", *files)

    def tokenize_splits(self) -> None:
        """Tokenise RAW/{train,valid,test}.{SRC,TGT} into TOK/ (:mod:`.tokenize` picks the segmenter by language:
        jieba for zh, fugashi for ja, Moses otherwise), in one call."""
        jobs: List[str] = []
        for split in ("train", "valid", "test"):
            for lang in (self.src, self.tgt):
                jobs += ["--job", lang, f"{self.rawtxt}/{split}.{lang}", f"{self.tok}/{split}.{lang}"]
        self.prep(tokenize, "tok", "--workers", self.workers, *jobs)

    @staticmethod
    def split_every(n: int, path: str, keep: str, every: str) -> None:
        """Every ``n``-th line of ``path`` to ``every``, the others to ``keep`` (fairseq's valid split); a file
        is only created when a line goes there."""
        outs: Dict[str, io.BufferedWriter] = {}
        try:
            with open(path, "rb") as f:
                for number, line in enumerate(f, 1):
                    target = every if number % n == 0 else keep
                    if target not in outs:
                        outs[target] = open(target, "wb")
                    outs[target].write(line if line.endswith(b"\n") else line + b"\n")
        finally:
            for f in outs.values():
                f.close()

    def bpe_binarize_finish(self) -> None:
        """The last steps of every script whose tok/ splits are final: BPE of tok/ into OUT, fairseq-preprocess,
        and the summary."""
        self.step(f"BPE ({self.bpe_tool}, {self.bpe_tokens})")
        self.bpe_all(self.tok, self.out_dir)
        self.step("Binarise (fairseq-preprocess)")
        self.binarize()
        self.finish()

    def bpe_all(self, in_dir: str, out_dir: str) -> None:
        """Learn BPE on IN_DIR/train.*, apply it to IN_DIR/{train,valid,test}.*."""
        groups = [(self.src, self.tgt)] if self.joined else [(self.src,), (self.tgt,)]
        for langs in groups:
            suffix = "" if self.joined else f".{langs[0]}"
            train_files = [f"{in_dir}/train.{lang}" for lang in langs]
            if self.bpe_tool == "subword-nmt":
                model = f"{self.out_dir}/code{suffix}"
                self.note(f"learning {self.bpe_tokens} BPE merges (subword-nmt) on {' '.join(train_files)}")
                concatenate(train_files, f"{self.tmp}/bpe-train.txt")
                self.quiet(f"{self.tmp}/learn_bpe.log", self.py, "-m", "subword_nmt.learn_bpe", "-s", self.bpe_tokens,
                           "-i", f"{self.tmp}/bpe-train.txt", "-o", model)
                os.remove(f"{self.tmp}/bpe-train.txt")
                for lang in langs:
                    for split in ("train", "valid", "test"):
                        self.call(self.py, "-m", "subword_nmt.apply_bpe", "-c", model, "--num-workers", self.workers,
                                 "-i", f"{in_dir}/{split}.{lang}", "-o", f"{out_dir}/{split}.{lang}")
                self.note(f"BPE model: {model}")
            else:
                model = f"{self.out_dir}/spm{suffix}"
                self.note(f"training a {self.bpe_tokens}-piece sentencepiece BPE model on {' '.join(train_files)}")
                self.prep(spm, "train", "--model-prefix", model, "--vocab-size", self.bpe_tokens,
                          "--threads", self.workers, *train_files)
                pairs = [p for lang in langs for split in ("train", "valid", "test")
                         for p in (f"{in_dir}/{split}.{lang}", f"{out_dir}/{split}.{lang}")]
                self.prep(spm, "encode", "--model", f"{model}.model", *pairs)
                self.note(f"BPE model: {model}.model")

    def binarize(self) -> None:
        """fairseq-preprocess OUT/{train,valid,test} into OUT/data-bin."""
        out = self.out_dir
        remove(f"{out}/data-bin")
        self.quiet(f"{self.tmp}/preprocess.log", self.py, "-m", "fairseq_cli.preprocess", "--source-lang", self.src,
                   "--target-lang", self.tgt, "--trainpref", f"{out}/train", "--validpref", f"{out}/valid",
                   "--testpref", f"{out}/test", "--destdir", f"{out}/data-bin", "--workers", self.workers,
                   *(["--joined-dictionary"] if self.joined else []))
        self.note(f"fairseq-preprocess done{' (joined dictionary)' if self.joined else ''} -> {out}/data-bin")

    def detok_ref_name(self) -> str:
        """The raw test reference for sacreBLEU, relative to data-bin: raw/test-ref.TGT (the published text, where
        the tokeniser input raw/test.TGT was altered as fairseq does), else raw/test.TGT."""
        for name in (f"test-ref.{self.tgt}", f"test.{self.tgt}"):
            if os.path.isfile(f"{self.rawtxt}/{name}"):
                return f"../raw/{name}"
        return ""

    def finish(self) -> None:
        """Final report, data-bin/prep-info.json, mark the run as finished."""
        out = self.out_dir
        self.step("Summary")
        self.prep(checks, "report", out, self.src, self.tgt)
        # read by scripts/evaluate.sh for its defaults (BPE type, target language, casing, reference) and by
        # scripts/reproduce.sh (corpus: the training data's name; train_pairs: its sentence pairs after cleaning)
        pairs = count_lines(f"{out}/train.{self.src}")
        info = {"script": self.name, "src": self.src, "tgt": self.tgt, "bpe": self.bpe_tool.replace("-", "_", 1),
                "lowercased": bool(self.lowercased), "compound_split": bool(self.compound_split),
                "tok_ref": f"../tok/test.{self.tgt}", "detok_ref": self.detok_ref_name() or None,
                "corpus": self.corpus, "train_pairs": pairs}
        with open(f"{out}/data-bin/prep-info.json", "w") as f:
            json.dump(info, f, indent=1)
        self.note(f"corpus: {self.corpus}, {pairs} training pairs (data-bin/prep-info.json)")
        self.mark_done()
        self.say(f"\nDone: {out}\n  train:    fairseq-train {out}/data-bin --user-dir {self.repo}/fairseq_localness "
                 "...\n"
                 f"  evaluate: bash {self.repo}/scripts/evaluate.sh CHECKPOINT_DIR {out}/data-bin\n")

    # ------------------- sentence classification (sst2, imdb, sva): TOK/{input0,label}/{train,valid,test}.txt

    def classification_binarize(self) -> None:
        """fairseq-preprocess --only-source of input0/ and label/ into OUT/data-bin, the layout of fairseq's
        sentence_prediction task."""
        self.step("Binarise (fairseq-preprocess --only-source, input0 and label)")
        for key in ("input0", "label"):
            self.quiet(f"{self.tmp}/preprocess-{key}.log", self.py, "-m", "fairseq_cli.preprocess", "--only-source",
                       "--trainpref", f"{self.tok}/{key}/train.txt", "--validpref", f"{self.tok}/{key}/valid.txt",
                       "--testpref", f"{self.tok}/{key}/test.txt", "--destdir", f"{self.out_dir}/data-bin/{key}",
                       "--workers", self.workers)
        words = count_lines(f"{self.out_dir}/data-bin/input0/dict.txt")
        self.note(f"-> {self.out_dir}/data-bin (input0 vocabulary: {words} words)")

    def classification_done(self, criterion_line: str) -> None:
        """Mark the run finished; how to train on it."""
        self.mark_done()
        self.say(f"\nDone: {self.out_dir}\n  train: fairseq-train {self.out_dir}/data-bin --user-dir "
                 f"{self.repo}/fairseq_localness --task sentence_prediction --num-classes 2 \\\n")
        self.say(f"           {criterion_line}   (docs/tasks.md)\n")

    # ------------------------------- language-model corpora (1bw, lm-news-en): TOK/{train,valid,test}.txt

    def lm_binarize(self, *vocab_args: str) -> None:
        """fairseq-preprocess --only-source (language_modeling) into OUT/data-bin, with the vocabulary options
        given (--thresholdsrc N: the words seen at least N times in train; --nwordssrc N: N entries)."""
        remove(f"{self.out_dir}/data-bin")
        self.quiet(f"{self.tmp}/preprocess.log", self.py, "-m", "fairseq_cli.preprocess", "--only-source", *vocab_args,
                   "--trainpref", f"{self.tok}/train.txt", "--validpref", f"{self.tok}/valid.txt",
                   "--testpref", f"{self.tok}/test.txt", "--destdir", f"{self.out_dir}/data-bin",
                   "--workers", self.workers)

    def lm_finish(self) -> None:
        """Sizes (sentences, tokens, <unk> rates from fairseq-preprocess; vocabulary), data-bin/prep-info.json
        (script, corpus, train_sentences), mark the run finished."""
        out = self.out_dir
        sentences = count_lines(f"{self.tok}/train.txt")
        with open(f"{out}/data-bin/prep-info.json", "w") as f:
            json.dump({"script": self.name, "corpus": self.corpus, "train_sentences": sentences}, f, indent=1)
        self.note(f"corpus: {self.corpus}, {sentences} training sentences (data-bin/prep-info.json)")
        # fairseq-preprocess's own counts: tokens include one </s> a sentence
        pattern = re.compile(rb"[^/]*\.txt: [0-9]* sents, [0-9]* tokens, [0-9.]*% replaced")
        with contextlib.suppress(OSError):
            for line in read_lines(f"{self.tmp}/preprocess.log"):
                for match in pattern.finditer(line):
                    self.say(f"    {os.fsdecode(match.group(0))} by <unk>\n")
        words = sum(not line.startswith(b"madeupword") for line in read_lines(f"{out}/data-bin/dict.txt"))
        self.note(f"vocabulary: {words} words ({out}/data-bin/dict.txt, padded with madeupword* to a multiple of 8; "
                  "fairseq adds 4 special symbols)")
        self.mark_done()
        self.say(f"\nDone: {out}\n  train: fairseq-train {out}/data-bin --user-dir {self.repo}/fairseq_localness "
                 "--task language_modeling --arch transformer_lm_diffwin ...\n")
        self.say("  (docs/tasks.md)\n")


def run(script: Script, body: Callable[[Script, List[str]], None], argv: Optional[Sequence[str]] = None) -> int:
    """Run ``body(script, argv)`` as the shell scripts ran: the exit status, ``ERROR:`` and ``FAILED`` lines."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # not a StringIO
            stream.reconfigure(encoding="utf-8", errors="surrogateescape", line_buffering=True)
    os.environ["PYTHONIOENCODING"] = "utf-8"  # the child processes (subword-nmt, fairseq-preprocess)
    try:
        body(script, list(sys.argv[1:] if argv is None else argv))
        return 0
    except Stop as stop:
        if stop.failed:
            script.flush()
            sys.stderr.write(script.failed_line())
        return stop.status
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a file that cannot be read or written, ...: the step fails
        script.flush()
        if isinstance(exc, OSError):
            sys.stderr.write(f"{script.name}: {exc}\n")
        else:
            traceback.print_exc()
        sys.stderr.write(script.failed_line())
        return 1
    finally:
        script.flush()
