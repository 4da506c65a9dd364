"""data-prep/prepare-wmt14en2fr.sh offline on a small fixture in the WMT archive layout (Nguyen et al. 2020's En-Fr)."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

from localness_testing import REPO

CORPORA = {  # archive: (member prefix, pairs)
    "training-parallel-europarl-v7.tgz": ("training/europarl-v7.fr-en", 120),
    "training-parallel-commoncrawl.tgz": ("commoncrawl.fr-en", 60),
    "training-parallel-un.tgz": ("un/undoc.2000.fr-en", 60),
    "training-parallel-nc-v9.tgz": ("training/news-commentary-v9.fr-en", 60),
}
GIGA = 100
EN = "the cat eats a well-known fish in the garden with friends today while birds sing".split()
FR = "le chat mange un poisson bien-connu dans le jardin avec des amis aujourd'hui pendant que oiseaux chantent".split()


def sentences(rng: random.Random, n: int):
    for _ in range(n):
        k = rng.randint(3, 10)
        yield " ".join(rng.choice(EN) for _ in range(k)), " ".join(rng.choice(FR) for _ in range(k))


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def text(lines) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def sgm(lines, kind: str, lang: str) -> bytes:
    tag = "srcset" if kind == "src" else "refset"
    return text([f'<{tag} setid="newstest2014" srclang="any" trglang="{lang}">', '<doc docid="d1" genre="news">']
                + [f'<seg id="{i}">{line}</seg>' for i, line in enumerate(lines, 1)] + ["</doc>", f"</{tag}>"])


def make_raw(raw: Path) -> int:
    rng = random.Random(0)
    raw.mkdir()
    total = 0
    for archive, (prefix, n) in CORPORA.items():
        pairs = list(sentences(rng, n))
        with tarfile.open(raw / archive, "w:gz") as tar:
            add(tar, f"{prefix}.en", text(e for e, _ in pairs))
            add(tar, f"{prefix}.fr", text(f for _, f in pairs))
        total += n
    pairs = list(sentences(rng, GIGA))
    with tarfile.open(raw / "training-giga-fren.tar", "w") as tar:
        add(tar, "giga-fren.release2.fixed.en.gz", gzip.compress(text(e for e, _ in pairs)))
        add(tar, "giga-fren.release2.fixed.fr.gz", gzip.compress(text(f for _, f in pairs)))
    test = list(sentences(rng, 30))
    with tarfile.open(raw / "test-full.tgz", "w:gz") as tar:
        add(tar, "test-full/newstest2014-fren-src.en.sgm", sgm([e for e, _ in test], "src", "en"))
        add(tar, "test-full/newstest2014-fren-ref.fr.sgm", sgm([f for _, f in test], "ref", "fr"))
    return total + GIGA


def test_prepare_wmt14en2fr_offline(tmp_path):
    total = make_raw(tmp_path / "raw")
    env = dict(os.environ, PYTHON=sys.executable, OMP_NUM_THREADS="1")
    out = tmp_path / "wmt14_en_fr"
    proc = subprocess.run(["bash", str(REPO / "data-prep" / "prepare-wmt14en2fr.sh"), "--raw-dir", str(tmp_path / "raw"),
                           "--out", str(out), "--bpe-tokens", "200", "--valid-every", "20"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    read = lambda path: path.read_text(encoding="utf-8").splitlines()  # noqa: E731
    assert len(read(out / "raw" / "train.en")) == total  # the five corpora, giga-fren decompressed
    assert len(read(out / "tok" / "valid.en")) == total // 20 and len(read(out / "tok" / "train.fr")) == total - total // 20
    assert len(read(out / "test.en")) == len(read(out / "test.fr")) == 30  # newstest2014 is never cleaned
    assert " @-@ " in (out / "tok" / "train.en").read_text()  # Moses -a, as fairseq's script
    assert read(out / "data-bin" / "dict.en.txt") == read(out / "data-bin" / "dict.fr.txt")  # shared vocabulary
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert info["src"] == "en" and info["tgt"] == "fr" and info["detok_ref"] == "../raw/test-ref.fr"
    again = subprocess.run(["bash", str(REPO / "data-prep" / "prepare-wmt14en2fr.sh"), "--raw-dir", str(tmp_path / "raw"),
                            "--out", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode != 0 and "already holds finished data" in again.stderr
