"""Run every data-prep/prepare-*.sh script offline on small fixtures in the official formats.

The fixtures are built at test time from the real corpora in ``<repo>/../shared/data`` (the
IWSLT14 dev/test XML as released, Europarl/newstest text wrapped in the WMT archive layout,
newsdev/newstest2017 as WMT SGML, Tatoeba Japanese-English in the ASPEC-JE line format).
"""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
PREP = REPO / "data-prep"

from localness_prep import checks, clean, iwslt_xml, spm, tokenize  # noqa: E402


def require_corpora() -> Path:
    """SHARED, or skip the calling test (only it: the sample and error-path tests need no corpus)."""
    if not SHARED.is_dir():
        pytest.skip(f"real corpora not found at {SHARED} (CI provides them at ../shared/data)")
    return SHARED


# --- helpers ---------------------------------------------------------------------------------

def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def shared_lines(rel: str, start: int = 0, stop: int | None = None) -> list[str]:
    return lines(require_corpora() / rel)[start:stop]


def write(path: Path, rows: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def make_tgz(archive: Path, root: Path) -> Path:
    """Archive every file under ``root`` with paths relative to it."""
    with tarfile.open(archive, "w:gz") as tar:
        for f in sorted(root.rglob("*")):
            if f.is_file():
                tar.add(f, arcname=str(f.relative_to(root)))
    return archive


def sgm(rows: list[str], setid: str, lang: str, kind: str) -> list[str]:
    """WMT SGML (srcset/refset, one doc, one <seg> per line)."""
    tag = "srcset" if kind == "src" else "refset"
    return ([f'<{tag} setid="{setid}" srclang="any" trglang="{lang}">', f'<doc sysid="{kind}" docid="d1" genre="news">']
            + [f'<seg id="{i}">{r}</seg>' for i, r in enumerate(rows, 1)] + ["</doc>", f"</{tag}>"])


def run(script: str, *args: str | Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, PYTHON=sys.executable,
                    PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    full_env.update(env or {})
    proc = subprocess.run(["bash", str(PREP / script), *map(str, args)], capture_output=True, text=True,
                          env=full_env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def summary_counts(stdout: str) -> dict[str, int]:
    """{'train': n, 'valid': n, 'test': n, 'dict.xx': n} from the final report."""
    out = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(train|valid|test)\s+(\d+)\s", stdout, re.M)}
    out.update({f"dict.{m.group(1)}": int(m.group(2))
                for m in re.finditer(r"^vocabulary (\w+): (\d+) types", stdout, re.M)})
    return out


def check_output(out: Path, src: str, tgt: str, stdout: str, expect: dict[str, int]) -> dict[str, int]:
    """Common assertions on a finished run; returns the reported counts."""
    counts = summary_counts(stdout)
    for split in ("train", "valid", "test"):
        n_src, n_tgt = len(lines(out / f"{split}.{src}")), len(lines(out / f"{split}.{tgt}"))
        assert n_src == n_tgt == counts[split], (split, n_src, n_tgt, counts)
        if split in expect:
            assert counts[split] == expect[split], (split, counts)
        for lang in (src, tgt):
            assert (out / "data-bin" / f"{split}.{src}-{tgt}.{lang}.bin").stat().st_size > 0
    for lang in (src, tgt):
        assert counts[f"dict.{lang}"] == len(lines(out / "data-bin" / f"dict.{lang}.txt")) > 0
    assert 0 < counts["train"]
    assert (out / ".prep-done").is_file()
    return counts


# --- fixtures in the official layouts ----------------------------------------------------------

IWSLT_SETS = {  # name: number of segments in the official file (order = fairseq's test order)
    "IWSLT14.TED.dev2010": 887, "IWSLT14.TEDX.dev2012": 1165, "IWSLT14.TED.tst2010": 1565,
    "IWSLT14.TED.tst2011": 1433, "IWSLT14.TED.tst2012": 1700,
}
IWSLT_SEGS = 40  # segments kept per dev/test file


def truncated_xml(path: Path, n: int) -> list[str]:
    """The official XML cut after its n-th <seg>, closed again."""
    out, segs = [], 0
    for line in lines(path):
        out.append(line)
        segs += "<seg id" in line
        if segs == n:
            break
    root = "refset" if any("<refset" in x for x in out) else "srcset"
    return out + ["</doc>", f"</{root}>", "</mteval>"]


@pytest.fixture(scope="module")
def iwslt_raw(tmp_path_factory) -> Path:
    """de-en.tgz: TED-style train.tags (header lines + Europarl sentences) and the real XML files."""
    root = tmp_path_factory.mktemp("iwslt")
    src = root / "src" / "de-en"
    for lang in ("de", "en"):
        text = shared_lines(f"wmt14_ende/raw_sample_simt/europarl_head20k.{lang}", 0, 600)
        rows: list[str] = []
        for talk in range(3):
            chunk = text[talk * 200:(talk + 1) * 200]
            rows += [f"<url>http://www.ted.com/talks/lang/{lang}/talk_{talk}.html</url>",
                     "<keywords>talks, politics, europe</keywords>", f"<talkid>{talk}</talkid>",
                     f"<title>{chunk[0]}</title>", f"<description>TED Talk: {chunk[1]}</description>"]
            rows += chunk[2:]
        write(src / f"train.tags.de-en.{lang}", rows)
        for name in IWSLT_SETS:
            xml = f"{name}.de-en.{lang}.xml"
            write(src / xml, truncated_xml(SHARED / "iwslt14_de_en" / "orig_xml" / xml, IWSLT_SEGS))
    raw = root / "raw"
    raw.mkdir()
    make_tgz(raw / "de-en.tgz", root / "src")
    return raw


@pytest.fixture(scope="module")
def wmt14_raw(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wmt14")
    euro = {l: shared_lines(f"wmt14_ende/raw_sample_simt/europarl_head20k.{l}", 0, 450) for l in ("de", "en")}
    dev = {l: shared_lines(f"wmt14_ende/raw_sample_simt/unknown_test1000_probably_newstest2015.{l}", 0, 100)
           for l in ("de", "en")}
    test = {l: shared_lines(f"wmt14_ende/raw/newstest2014.full.{l}", 0, 100) for l in ("de", "en")}
    layout = {
        "training-parallel-europarl-v7.tgz": ("training/europarl-v7.de-en", 0, 200),
        "training-parallel-commoncrawl.tgz": ("commoncrawl.de-en", 200, 350),
        "training-parallel-nc-v12.tgz": ("training/news-commentary-v12.de-en", 350, 450),
    }
    raw = root / "raw"
    raw.mkdir()
    for archive, (prefix, a, b) in layout.items():
        for l in ("de", "en"):
            write(root / archive / f"{prefix}.{l}", euro[l][a:b])
        make_tgz(raw / archive, root / archive)
    for l in ("de", "en"):
        write(root / "dev" / "dev" / f"newstest2013.{l}", dev[l])
    make_tgz(raw / "dev.tgz", root / "dev")
    write(root / "test" / "test-full" / "newstest2014-deen-src.en.sgm", sgm(test["en"], "newstest2014", "en", "src"))
    write(root / "test" / "test-full" / "newstest2014-deen-ref.de.sgm", sgm(test["de"], "newstest2014", "de", "ref"))
    make_tgz(raw / "test-full.tgz", root / "test")
    return raw


@pytest.fixture(scope="module")
def stanford_raw(tmp_path_factory) -> Path:
    raw = tmp_path_factory.mktemp("stanford")
    for l in ("de", "en"):
        nt13 = shared_lines(f"wmt14_ende/tok_stanford/newstest2013.tok.{l}")
        write(raw / f"train.{l}", nt13[:300])
        write(raw / f"newstest2013.{l}", nt13[300:380])
        write(raw / f"newstest2014.{l}", shared_lines(f"wmt14_ende/tok_opennmt/newstest2014.filtered.tok.{l}", 0, 80))
    return raw


@pytest.fixture(scope="module")
def wmt17_raw(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wmt17")
    dev = {l: shared_lines(f"wmt17_zhen/newsdev2017.{l}") for l in ("zh", "en")}
    test = {l: shared_lines(f"wmt17_zhen/newstest2017.first2000.{l}") for l in ("zh", "en")}
    raw = root / "raw"
    raw.mkdir()
    for l in ("zh", "en"):
        write(root / "nc" / "training" / f"news-commentary-v12.zh-en.{l}", dev[l][:300])
        write(root / "extra" / f"cwmt-sample.{l}", test[l][1000:1100])
        write(root / "un" / "en-zh" / f"UNv1.0.en-zh.{l}", test[l][1100:1150])
    make_tgz(raw / "training-parallel-nc-v12.tgz", root / "nc")
    make_tgz(raw / "UNv1.0.en-zh.tar.gz", root / "un")
    # the six CWMT corpora in their layouts (NAME_ch.txt / NAME_cn.txt beside NAME_en.txt, several files per
    # corpus, Windows line ends): three as zip archives, three as extracted directories
    start = 1150
    for name, stems, zh_suffix in (("casia2015", ["casia2015"], "ch"), ("casict2011", ["casict-A", "casict-B"], "ch"),
                                   ("casict2015", ["casict2015"], "ch"), ("datum2015", ["datum"], "ch"),
                                   ("datum2017", ["Book1", "Book2"], "cn"), ("neu2017", ["NEU"], "cn")):
        for stem in stems:
            for l, suffix in (("zh", zh_suffix), ("en", "en")):
                path = root / "cwmt" / name / f"{stem}_{suffix}.txt"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes("".join(r + "\r\n" for r in test[l][start:start + 10]).encode("utf-8"))
            start += 10
        if name in ("casia2015", "casict2011", "datum2017"):
            with zipfile.ZipFile(raw / f"{name}.zip", "w") as archive:
                for f in sorted((root / "cwmt" / name).iterdir()):
                    archive.write(f, arcname=f"{name}/{f.name}")
        else:
            shutil.copytree(root / "cwmt" / name, raw / name)
    write(root / "dev" / "dev" / "newsdev2017-zhen-src.zh.sgm", sgm(dev["zh"][300:380], "newsdev2017", "zh", "src"))
    write(root / "dev" / "dev" / "newsdev2017-zhen-ref.en.sgm", sgm(dev["en"][300:380], "newsdev2017", "en", "ref"))
    make_tgz(raw / "dev.tgz", root / "dev")
    write(root / "test" / "test" / "newstest2017-zhen-src.zh.sgm", sgm(test["zh"][:80], "newstest2017", "zh", "src"))
    write(root / "test" / "test" / "newstest2017-zhen-ref.en.sgm", sgm(test["en"][:80], "newstest2017", "en", "ref"))
    make_tgz(raw / "test.tgz", root / "test")
    return root


@pytest.fixture(scope="module")
def aspec_raw(tmp_path_factory) -> Path:
    """A parent directory holding ASPEC-JE/{train,dev,test}/ in the ASPEC line format."""
    root = tmp_path_factory.mktemp("aspec")
    ja, en = shared_lines("tatoeba_laser_test/tatoeba.jpn-eng.jpn"), shared_lines("tatoeba_laser_test/tatoeba.jpn-eng.eng")
    base = root / "ASPEC-JE"

    def train_rows(a: int, b: int, section: int) -> list[str]:
        return [f"{0.95 - i / 2000:.3f} ||| A-A-{section}-{i // 10} ||| {i % 10 + 1} ||| {ja[i]} ||| {en[i]}"
                for i in range(a, b)]

    def eval_rows(a: int, b: int) -> list[str]:
        return [f"A-B-{i // 10} ||| {i % 10 + 1} ||| {ja[i]} ||| {en[i]}" for i in range(a, b)]

    write(base / "train" / "train-1.txt", train_rows(0, 300, 1))
    write(base / "train" / "train-2.txt", train_rows(300, 600, 2))
    write(base / "train" / "train-3.txt", train_rows(600, 650, 3))  # not used: only sections 1-2
    write(base / "dev" / "dev.txt", eval_rows(700, 760))
    write(base / "test" / "test.txt", eval_rows(800, 870))
    return root


# --- the scripts on their fixtures ------------------------------------------------------------

def test_iwslt14(iwslt_raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "iwslt"
    proc = run("prepare-iwslt14.sh", "--raw-dir", iwslt_raw, "--out", out, "--bpe-tokens", "300", "--workers", "2")
    counts = check_output(out, "de", "en", proc.stdout, {"test": 5 * IWSLT_SEGS})
    for step in ("==> [1] Inputs", "Tokenise (Moses) and lowercase", "every 23rd", "Binarise", "Summary"):
        assert step in proc.stdout
    # train.tags: 3 talks x (198 sentences + title + description); url/keywords/talkid lines dropped
    assert len(lines(out / "raw" / "train.de")) == 3 * 200
    train_tok = (out / "tok" / "train.en").read_text() + (out / "tok" / "valid.en").read_text()
    assert "ted.com" not in train_tok and "talkid" not in train_tok and "<title>" not in train_tok
    assert train_tok == train_tok.lower()
    # every 23rd cleaned pair is valid
    assert counts["valid"] == (counts["train"] + counts["valid"]) // 23
    # the test set is byte-identical to fairseq's official tokenised+lowercased IWSLT14 test set
    official = {l: lines(SHARED / "iwslt14_de_en" / "fairseq_tok_lc" / f"test.{l}") for l in ("de", "en")}
    for lang in ("de", "en"):
        expected, offset = [], 0
        for size in IWSLT_SETS.values():
            expected += official[lang][offset:offset + IWSLT_SEGS]
            offset += size
        assert lines(out / "tok" / f"test.{lang}") == expected
    # joined dictionary, BPE codes, info for evaluate.sh
    assert (out / "code").is_file()
    assert lines(out / "data-bin" / "dict.de.txt") == lines(out / "data-bin" / "dict.en.txt")
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert info == {"script": "prepare-iwslt14.sh", "src": "de", "tgt": "en", "bpe": "subword_nmt",
                    "lowercased": True, "compound_split": False, "tok_ref": "../tok/test.en",
                    "detok_ref": "../raw/test-ref.en", "corpus": "iwslt14", "train_pairs": counts["train"]}
    # the sacreBLEU reference is the published text: entities decoded, typographic quotes kept
    ref, tok_input = lines(out / "raw" / "test-ref.en"), lines(out / "raw" / "test.en")
    assert len(ref) == len(tok_input) == 5 * IWSLT_SEGS
    assert [html.unescape(x) for x in tok_input] == [x.replace("’", "'") for x in ref] and ref != tok_input

    # a finished run is never overwritten without --force
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = run("prepare-iwslt14.sh", "--raw-dir", iwslt_raw, "--out", out, "--bpe-tokens", "300", check=False)
    assert again.returncode != 0
    assert "already holds finished data" in again.stderr and "--force" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


def test_wmt14(wmt14_raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "wmt14"
    proc = run("prepare-wmt14en2de.sh", "--raw-dir", wmt14_raw, "--out", out, "--bpe-tokens", "400")
    counts = check_output(out, "en", "de", proc.stdout, {"valid": 100, "test": 100})
    assert counts["train"] <= 450
    assert len(lines(out / "raw" / "train.en")) == 450  # the three corpora, concatenated
    assert lines(out / "raw" / "test-ref.de") == shared_lines("wmt14_ende/raw/newstest2014.full.de", 0, 100)
    assert json.loads((out / "data-bin" / "prep-info.json").read_text())["detok_ref"] == "../raw/test-ref.de"
    assert " @-@ " in (out / "tok" / "train.en").read_text()  # Moses -a
    assert lines(out / "data-bin" / "dict.en.txt") == lines(out / "data-bin" / "dict.de.txt")
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert info["compound_split"] is True and info["lowercased"] is False
    assert (info["corpus"], info["train_pairs"]) == ("wmt14-en-de", counts["train"])
    # cleaning after BPE: no training pair longer than 250 BPE tokens or with ratio > 1.5
    for s, t in zip(lines(out / "train.en"), lines(out / "train.de")):
        ns, nt = len(s.split()), len(t.split())
        assert 1 <= ns <= 250 and 1 <= nt <= 250 and ns <= 1.5 * nt and nt <= 1.5 * ns


def test_wmt14_stanford(stanford_raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "stanford"
    proc = run("prepare-wmt14en2de.sh", "--stanford", "--raw-dir", stanford_raw, "--out", out,
               "--bpe-tokens", "300", "--bpe", "sentencepiece")
    check_output(out, "en", "de", proc.stdout, {"valid": 80, "test": 80})
    valid = (out / "tok" / "valid.de").read_text()
    assert "##AT##" not in valid and " @-@ " in valid
    assert (out / "spm.model").is_file() and "▁" in (out / "train.en").read_text()
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert (info["bpe"], info["corpus"]) == ("sentencepiece", "wmt14-en-de-stanford")


CWMT_PAIRS = 8 * 10  # the fixture's eight CWMT file pairs of 10 lines


def test_wmt17_zh_en(wmt17_raw: Path, tmp_path: Path) -> None:
    """The default is the full WMT17 Zh-En corpus (Yang et al. 2018 Sec. 4.1): News Commentary v12, UN v1.0 and the
    six CWMT corpora (zips or extracted directories); prep-info.json records its name and training pairs."""
    out = tmp_path / "wmt17"
    proc = run("prepare-wmt17zh2en.sh", "--raw-dir", wmt17_raw / "raw", "--out", out, "--bpe-tokens", "300")
    counts = check_output(out, "zh", "en", proc.stdout, {"valid": 80, "test": 80})
    raw_zh = lines(out / "raw" / "train.zh")
    assert len(raw_zh) == 300 + 50 + CWMT_PAIRS  # NC + UN + CWMT
    assert not any("\r" in line for line in raw_zh + lines(out / "raw" / "train.en"))
    first_cwmt = shared_lines("wmt17_zhen/newstest2017.first2000.zh", 1150, 1151)[0]
    assert raw_zh[350] == first_cwmt  # casia2015 first, in the order of the WMT17 list
    assert counts["train"] < len(raw_zh)  # the 50-token limit removes long news sentences
    tok = [l.split() for l in lines(out / "tok" / "train.zh") + lines(out / "tok" / "train.en")]
    assert max(map(len, tok)) <= 50
    zh_words = [w for l in lines(out / "tok" / "test.zh") for w in l.split()]
    assert sum(map(len, zh_words)) / len(zh_words) < 2.5  # jieba words, not unsegmented sentences
    assert (out / "code.zh").is_file() and (out / "code.en").is_file()  # separate BPE and dictionaries
    assert lines(out / "data-bin" / "dict.zh.txt") != lines(out / "data-bin" / "dict.en.txt")
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert info["corpus"] == "wmt17-zh-en-all" and info["train_pairs"] == counts["train"]
    assert "corpus: wmt17-zh-en-all" in proc.stdout


def test_wmt17_zh_en_reduced_variants_are_recorded(wmt17_raw: Path, tmp_path: Path) -> None:
    """--nc-only (News Commentary alone) and --extra-corpus / --max-len name another corpus in prep-info.json."""
    out = tmp_path / "nc"
    proc = run("prepare-wmt17zh2en.sh", "--raw-dir", wmt17_raw / "raw", "--out", out, "--bpe-tokens", "300", "--nc-only")
    assert len(lines(out / "raw" / "train.zh")) == 300 and "--nc-only: training on News Commentary v12 alone" in proc.stdout
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert info["corpus"] == "wmt17-zh-en-nc-v12" and 0 < info["train_pairs"] <= 300
    out = tmp_path / "extra"
    run("prepare-wmt17zh2en.sh", "--raw-dir", wmt17_raw / "raw", "--out", out, "--bpe-tokens", "300", "--nc-only",
        "--extra-corpus", wmt17_raw / "extra" / "cwmt-sample", "--max-len", "80")
    assert len(lines(out / "raw" / "train.zh")) == 400
    assert json.loads((out / "data-bin" / "prep-info.json").read_text())["corpus"] == "wmt17-zh-en-nc-v12-maxlen80+extra"


def test_wmt17_zh_en_names_every_missing_corpus(tmp_path: Path) -> None:
    """Offline, the full corpus's inputs are listed with their sources, and --raw-dir is named."""
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run("prepare-wmt17zh2en.sh", "--raw-dir", empty, "--out", tmp_path / "o1", check=False)
    assert proc.returncode == 1 and "missing input(s) in --raw-dir" in proc.stderr
    for name in ("training-parallel-nc-v12.tgz", "UNv1.0.en-zh.tar.gz", "en-zh/UNv1.0.en-zh.zh", "casia2015.zip",
                 "casict2011.zip", "casict2015.zip", "datum2015.zip", "datum2017.zip", "neu2017.zip", "dev.tgz", "test.tgz"):
        assert name in proc.stderr, name
    assert "ftp://cwmt-wmt:cwmt-wmt@nlp.nju.edu.cn/parallel/neu2017.zip" in proc.stderr
    closed = "http://127.0.0.1:9"  # nothing listens: no real download even where there is network
    env = {"http_proxy": closed, "https_proxy": closed, "HTTP_PROXY": closed, "HTTPS_PROXY": closed,
           "ftp_proxy": closed, "FTP_PROXY": closed, "no_proxy": ""}
    proc = run("prepare-wmt17zh2en.sh", "--out", tmp_path / "o2", env=env, check=False)
    assert proc.returncode == 1 and "--raw-dir DIR" in proc.stderr
    assert "UNv1.0.en-zh.tar.gz (or its files: en-zh/UNv1.0.en-zh.zh en-zh/UNv1.0.en-zh.en): cannot be downloaded, " \
           "pass --raw-dir" in proc.stderr
    help_text = run("prepare-wmt17zh2en.sh", "--help").stdout
    assert "--nc-only" in help_text and "https://conferences.unite.un.org/UNCorpus" in help_text


def test_wat17_ja_en_and_force(aspec_raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "aspec"
    proc = run("prepare-wat17ja2en.sh", "--raw-dir", aspec_raw, "--out", out, "--bpe-tokens", "300")
    counts = check_output(out, "ja", "en", proc.stdout, {"valid": 60, "test": 70})
    assert len(lines(out / "raw" / "train.ja")) == 600  # train-1 + train-2, not train-3
    assert lines(out / "raw" / "test.en") == shared_lines("tatoeba_laser_test/tatoeba.jpn-eng.eng", 800, 870)
    raw_ja, tok_ja = lines(out / "raw" / "test.ja"), lines(out / "tok" / "test.ja")
    assert all(t.replace(" ", "") == r.replace(" ", "") and " " in t for r, t in zip(raw_ja, tok_ja))
    # no length limit (Yang et al. 2019 Sec. 5 and Xu et al. 2019 Sec. 4 state none): every pair with two non-empty
    # sides is kept, as the papers' "2M sentence pairs" of train-1 + train-2
    assert counts["train"] == 600
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert info["corpus"] == "aspec-je-train-1-2" and info["train_pairs"] == 600

    # --force rebuilds in place (here with a joint sentencepiece model and a length limit, another corpus)
    proc = run("prepare-wat17ja2en.sh", "--raw-dir", aspec_raw, "--out", out, "--bpe-tokens", "1200",
               "--bpe", "sentencepiece", "--joined-dictionary", "--force", "--max-len", "8")
    assert "--force: replacing the previous outputs" in proc.stdout
    counts = check_output(out, "ja", "en", proc.stdout, {"valid": 60, "test": 70})
    assert counts["train"] < 600 and max(len(l.split()) for l in lines(out / "tok" / "train.en")) <= 8
    assert json.loads((out / "data-bin" / "prep-info.json").read_text())["corpus"] == "aspec-je-train-1-2-maxlen8"
    assert not (out / "code.ja").exists() and (out / "spm.model").is_file()
    assert lines(out / "data-bin" / "dict.ja.txt") == lines(out / "data-bin" / "dict.en.txt")


def test_sample(tmp_path: Path) -> None:
    out = tmp_path / "sample"
    proc = run("prepare-sample.sh", "--out", out, "--bpe-tokens", "500")
    check_output(out, "zh", "en", proc.stdout, {"train": 19000, "valid": 500, "test": 500})
    assert lines(out / "raw" / "test.en") == lines(REPO / "data" / "sample-zh-en" / "test.en")


# --- the shipped sample ------------------------------------------------------------------------

def test_shipped_sample_is_consistent() -> None:
    d = REPO / "data" / "sample-zh-en"
    sizes = {"train": 19000, "valid": 500, "test": 500}
    for split, n in sizes.items():
        for side in ("zh", "en", "attribution"):
            assert checks.scan(str(d / f"{split}.{side}")) == n
        assert all(a.startswith("CC-BY 2.0 (France) Attribution: tatoeba.org #") for a in lines(d / f"{split}.attribution"))
    norm = lambda s: re.sub(r"[\W_]+", "", s.lower())  # noqa: E731  (as localness_prep/sample.py)
    for side in ("zh", "en"):
        train = {norm(x) for x in lines(d / f"train.{side}")}
        valid, test = ({norm(x) for x in lines(d / f"{s}.{side}")} for s in ("valid", "test"))
        assert not (valid & train) and not (test & train) and not (valid & test)
    assert sum(f.stat().st_size for f in d.iterdir()) < 3_100_000
    assert "CC BY 2.0 FR" in (d / "ATTRIBUTION.md").read_text()


# --- refusals and errors ------------------------------------------------------------------------

def test_missing_files_are_listed(iwslt_raw: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run("prepare-iwslt14.sh", "--raw-dir", empty, "--out", tmp_path / "o1", check=False)
    assert proc.returncode == 1
    assert "missing input(s) in --raw-dir" in proc.stderr and "de-en.tgz" in proc.stderr
    assert "de-en/train.tags.de-en.de" in proc.stderr and "IWSLT14.TED.tst2012.de-en.en.xml" in proc.stderr

    # an archive lacking one of the expected files
    partial = tmp_path / "partial"
    with tarfile.open(iwslt_raw / "de-en.tgz") as tar:
        members = [m for m in tar.getmembers() if not m.name.endswith("tst2011.de-en.de.xml")]
        tar.extractall(partial / "x", members=members, filter="data")
    make_tgz(partial / "de-en.tgz", partial / "x")
    proc = run("prepare-iwslt14.sh", "--raw-dir", partial, "--out", tmp_path / "o2", check=False)
    assert proc.returncode == 1
    assert "lacks: de-en/IWSLT14.TED.tst2011.de-en.de.xml" in proc.stderr

    # licensed ASPEC: a missing section is named
    proc = run("prepare-wat17ja2en.sh", "--raw-dir", empty, "--out", tmp_path / "o3", check=False)
    assert proc.returncode == 1 and "train/train-1.txt" in proc.stderr and "test/test.txt" in proc.stderr
    proc = run("prepare-wat17ja2en.sh", "--out", tmp_path / "o4", check=False)
    assert proc.returncode == 1 and "licensed" in proc.stderr and "--raw-dir" in proc.stderr


def test_mismatched_and_invalid_input(tmp_path: Path) -> None:
    src = REPO / "data" / "sample-zh-en"
    bad = tmp_path / "bad"
    for split in ("train", "valid", "test"):
        for l in ("zh", "en"):
            rows = lines(src / f"{split}.{l}")[:50]
            write(bad / f"{split}.{l}", rows[:-1] if (split, l) == ("valid", "en") else rows)
    proc = run("prepare-sample.sh", "--raw-dir", bad, "--out", tmp_path / "o1", check=False)
    assert proc.returncode != 0
    assert "line counts differ" in proc.stderr and "valid.zh has 50 lines" in proc.stderr and "has 49" in proc.stderr
    assert "FAILED in step [1]" in proc.stderr

    write(bad / "valid.en", lines(src / "valid.en")[:50])
    with open(bad / "train.en", "ab") as f:
        f.write("caf\xe9 latin-1\n".encode("latin-1"))
    write(bad / "train.zh", lines(src / "train.zh")[:51])
    proc = run("prepare-sample.sh", "--raw-dir", bad, "--out", tmp_path / "o2", check=False)
    assert proc.returncode != 0 and "train.en:51: not valid UTF-8" in proc.stderr


@pytest.mark.parametrize("script,flag", [("prepare-wat17ja2en.sh", "--max-len"), ("prepare-wmt17zh2en.sh", "--max-len"),
                                         ("prepare-europarl-length.sh", "--max-len"),
                                         ("prepare-wmt14en2fr.sh", "--valid-every"), ("prepare-iwslt14.sh", "--bpe-tokens"),
                                         ("prepare-iwslt14.sh", "--workers")])
def test_integer_flags_name_the_flag_and_the_value(script: str, flag: str, tmp_path: Path) -> None:
    proc = run(script, flag, "ten", "--out", tmp_path / "o", check=False)
    assert proc.returncode != 0 and f"{flag} must be a positive integer, got 'ten'" in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()


def test_offline_without_raw_dir_fails_clearly(tmp_path: Path) -> None:
    closed = "http://127.0.0.1:9"  # nothing listens: no real download even where there is network
    env = {"http_proxy": closed, "https_proxy": closed, "HTTP_PROXY": closed, "HTTPS_PROXY": closed, "no_proxy": ""}
    out = tmp_path / "o"
    proc = run("prepare-wmt14en2de.sh", "--out", out, env=env, check=False)
    assert proc.returncode == 1
    assert "could not download" in proc.stderr and "--raw-dir DIR" in proc.stderr
    assert "http://statmt.org/wmt14/test-full.tgz" in proc.stderr
    assert not list((out / "orig").glob("*.part"))


def test_output_directory_guards(tmp_path: Path) -> None:
    foreign = tmp_path / "mine"
    write(foreign / "notes.txt", ["keep me"])
    proc = run("prepare-sample.sh", "--out", foreign, check=False)
    assert proc.returncode == 1 and "not empty and was not created by" in proc.stderr
    assert lines(foreign / "notes.txt") == ["keep me"] and sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]

    proc = run("prepare-sample.sh", "--out", tmp_path / "o", "--raw-dir", tmp_path / "o" / "raw", check=False)
    assert proc.returncode == 1 and "is not a directory" in proc.stderr
    (tmp_path / "o" / "raw").mkdir(parents=True)
    proc = run("prepare-sample.sh", "--out", tmp_path / "o", "--raw-dir", tmp_path / "o" / "raw", check=False)
    assert proc.returncode == 1 and "must not be --out or inside it" in proc.stderr
    for bad in (["--bpe-tokens", "x"], ["--bpe", "wordpiece"], ["--frobnicate"], []):
        proc = run("prepare-sample.sh", *bad, check=False)
        assert proc.returncode == 1 and "ERROR:" in proc.stderr
    proc = run("prepare-wmt14en2de.sh", "--help")
    assert "--stanford" in proc.stdout and "--raw-dir DIR" in proc.stdout and "--joined-dictionary" in proc.stdout


# --- the Python helpers ------------------------------------------------------------------------

def test_helpers() -> None:
    moses = tokenize.make_tokenizer("en", tokenize.TokOptions(aggressive_dash=True))
    assert moses("It's a well-known fact about the U.S.") == "It &apos;s a well @-@ known fact about the U.S ."
    detok = tokenize.make_detokenizer("en")
    assert detok("It &apos;s a well @-@ known fact .") == "It's a well-known fact."
    assert tokenize.make_detokenizer("zh")("我 爱 北京 。") == "我爱北京。"
    assert tokenize.make_tokenizer("zh")("我爱北京天安门。") == "我 爱 北京 天安门 。"
    assert tokenize.make_tokenizer("ja")("彼は手紙を書く。") == "彼 は 手紙 を 書く 。"
    assert clean.keep_pair("a b c", "a b", 1, 175, 1.5) and not clean.keep_pair("a b c d", "a b", 1, 175, 1.5)
    assert not clean.keep_pair("", "a", 1, 175, 9) and not clean.keep_pair("a " * 176, "a " * 170, 1, 175, 9)
    assert list(iwslt_xml.seg_lines(['<seg id="3"> It’s here. </seg>', "<doc>"])) == ["It's here."]
    assert list(iwslt_xml.train_tag_lines(["<url>x</url>", "<title>T</title>", "Hi."])) == ["T", "Hi."]


def test_sentencepiece_gives_back_the_tokenised_text_in_its_own_characters(tmp_path: Path) -> None:
    """`--remove-bpe sentencepiece` must return the text the model was trained on, character for character:
    SentencePiece's default NFKC normalisation would turn the full-width comma of Chinese text into ',' and
    full-width Latin letters into ASCII, so hypotheses and references would differ in characters."""
    from fairseq.data.data_utils import post_process

    words = ["全角", "，", "逗号", "Ｔｅｓｔ", "①", "ﬁne", "x²", "café", "ｶﾀｶﾅ", "hello"]
    rows = [" ".join(words[(i * 7 + k * 3) % len(words)] for k in range(6)) for i in range(200)]
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n".join(rows) + "\n", encoding="utf-8")
    spm.train(str(tmp_path / "spm"), 60, [str(corpus)])
    spm.encode(str(tmp_path / "spm.model"), [(str(corpus), str(tmp_path / "train.spm"))])
    pieces = (tmp_path / "train.spm").read_text(encoding="utf-8").split("\n")[:-1]
    assert [post_process(p, "sentencepiece") for p in pieces] == rows


def test_sentencepiece_sample_of_a_large_corpus_is_the_same_in_every_process(tmp_path: Path) -> None:
    """Above the sample size the model is trained on a seeded sample, so two preparations in two processes give
    the same pieces (SentencePiece's own sampler draws another sample in each process)."""
    import random

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(12)) for _ in range(3000)]
    corpus = tmp_path / "train.txt"
    corpus.write_text("".join(f"{w} {w} {w} {w}\n" for w in words), encoding="utf-8")
    code = ("import sys, sentencepiece; from localness_prep import spm; "
            "spm.train(sys.argv[1], 200, [sys.argv[2]], sample_sentences=150); "
            "sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1] + '.model'); "
            "print('\\n'.join(sp.id_to_piece(i) for i in range(sp.get_piece_size())))")
    pieces = [subprocess.run([sys.executable, "-c", code, str(tmp_path / f"m{i}"), str(corpus)], cwd=REPO,
                             check=True, capture_output=True, text=True).stdout.split() for i in range(2)]
    assert pieces[0] == pieces[1] and len(pieces[0]) == 200
    assert not list(tmp_path.glob("*.sample.txt"))  # the sample is not left behind


def test_sentencepiece_sample_is_uniform_exact_and_in_corpus_order(tmp_path: Path) -> None:
    files = []
    for name, span in (("a", range(0, 60)), ("b", range(60, 100))):
        (tmp_path / name).write_text("".join(f"{i}\n" for i in span), encoding="utf-8")
        files.append(str(tmp_path / name))
    counts = [0] * 100
    for seed in range(2000):
        spm.write_sample(files, 100, str(tmp_path / "s"), 30, seed)
        kept = [int(x) for x in (tmp_path / "s").read_text().split()]
        assert len(kept) == 30 and kept == sorted(set(kept))  # exactly 30 distinct lines, in the corpus's order
        for i in kept:
            counts[i] += 1
    # each line is kept with probability 30/100: 600 of 2000 draws, sd sqrt(2000 * 0.3 * 0.7) = 20.5
    assert all(600 - 5 * 20.5 < c < 600 + 5 * 20.5 for c in counts), counts
    spm.write_sample(files, 100, str(tmp_path / "t"), 30)
    spm.write_sample(files, 100, str(tmp_path / "u"), 30)
    assert (tmp_path / "t").read_text() == (tmp_path / "u").read_text()
