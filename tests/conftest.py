import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from localness_testing import preprocess, write_synthetic_corpus  # noqa: E402


@pytest.fixture(scope="session")
def tiny_data_bin(tmp_path_factory) -> Path:
    """Binarized synthetic corpus with a joined dictionary (built once per test session)."""
    root = tmp_path_factory.mktemp("tiny")
    write_synthetic_corpus(root / "raw")
    return preprocess(root / "raw", root / "data-bin")
