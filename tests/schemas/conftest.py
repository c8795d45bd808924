"""The Schema Registry fixture root (kseg.fixtures.schemas), written once per session."""

from __future__ import annotations

import pytest

from kseg.fixtures import schemas as fx


@pytest.fixture(scope="session")
def sr_root(tmp_path_factory):
    root = fx.write_schemas_root(tmp_path_factory.mktemp("sr") / "data")
    return root, dict(fx.EXPECTED), dict(fx.BAD)
