from __future__ import annotations

from pathlib import Path

import pytest

from kseg.fixtures import build_corrupt_tree, build_tree
from kseg.fixtures.kafka07 import build_kafka07_tree

REAL = Path(__file__).resolve().parents[2] / "shared" / "real"


@pytest.fixture(scope="session")
def tree(tmp_path_factory) -> Path:
    """The clean fixture log.dirs tree (read-only for tests: copy before changing)."""
    return build_tree(tmp_path_factory.mktemp("fixtures") / "logs")


@pytest.fixture(scope="session")
def log07(tmp_path_factory) -> Path:
    """A Kafka 0.7 log dir written by Log07Writer (read-only for tests: copy before changing)."""
    return build_kafka07_tree(tmp_path_factory.mktemp("k07") / "logs")


@pytest.fixture(scope="session")
def corrupt_cases(tmp_path_factory):
    return build_corrupt_tree(tmp_path_factory.mktemp("corrupt"))


@pytest.fixture(scope="session")
def real_root() -> Path:
    if not REAL.is_dir():
        pytest.skip("shared/real (real broker data) is not beside the project")
    return REAL
