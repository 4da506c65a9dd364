import os
import sys
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # One pytest-xdist worker per core (README's test command): torch's intra-op threads in every worker would
    # oversubscribe the cores, and the fairseq processes the tests start inherit this too. Set before torch is
    # imported (below), which fixes its thread count at import.
    os.environ["OMP_NUM_THREADS"] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))

from localness_testing import BIN, REPO, preprocess, run, write_synthetic_corpus  # noqa: E402

#: Multi30k Task 1 as the dataset ships it (lowercased, normalised, tokenised); CI provides ../shared/data
SHARED_MULTI30K = REPO.parent / "shared" / "data" / "multi30k" / "tok"


@pytest.fixture(scope="session")
def tiny_data_bin(tmp_path_factory) -> Path:
    """Binarized synthetic corpus with a joined dictionary (built once per test session)."""
    root = tmp_path_factory.mktemp("tiny")
    write_synthetic_corpus(root / "raw")
    return preprocess(root / "raw", root / "data-bin")


@pytest.fixture(scope="session")
def multi30k_prepared(tmp_path_factory) -> Path:
    """Multi30k de-en with joint BPE (data-prep/prepare-multi30k.sh defaults), prepared once per test session.

    Returns the preparation directory (``data-bin/``, tokenised references, ``prep-info.json``). Set
    ``LOCALNESS_MULTI30K_BIN=DIR/data-bin`` to reuse an earlier preparation. Skips (with the reason) where
    the corpus is absent.
    """
    given = os.environ.get("LOCALNESS_MULTI30K_BIN")
    if given:
        if not (Path(given) / "dict.de.txt").is_file():
            pytest.fail(f"LOCALNESS_MULTI30K_BIN={given} is not a prepare-multi30k.sh data-bin (no dict.de.txt)")
        return Path(given).parent
    if not (SHARED_MULTI30K / "train.lc.norm.tok.de").is_file():
        pytest.skip(f"Multi30k not found at {SHARED_MULTI30K} (CI provides the corpora at ../shared/data)")
    out = tmp_path_factory.mktemp("multi30k") / "prep"
    run(["bash", str(REPO / "data-prep" / "prepare-multi30k.sh"), "--out", str(out), "--raw-dir", str(SHARED_MULTI30K)],
        env={"PYTHON": str(BIN / "python")})
    return out


#: the test files with the most end-to-end training (measured with --durations), in falling order: collected first,
#: so that the README's parallel run (pytest-xdist hands out whole files in collection order) starts them early
#: rather than ending on one of them while the other worker idles (docs/testing.md gives the measured effect)
LONGEST_FILES_FIRST = ("test_generate_options.py", "test_compare.py", "test_quickstart.py", "test_slow_multi30k.py",
                       "test_docs.py", "test_prep_compare_corpora.py", "test_man.py", "test_gpu.py",
                       "test_gaussian.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: place for place, name in enumerate(LONGEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: every file keeps its tests' order
