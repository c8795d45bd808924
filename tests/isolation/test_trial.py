"""`--isolation read_committed` as a new operator tries it: combinations found wanting in the
trial of issue #30 (through the real entry point)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kseg.fixtures.transactions import build_root
from tests.helpers import run_kseg


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("isotrial") / "logs"
    build_root(root)
    return root


def _torn(root: Path, dest: Path) -> Path:
    """payments-0 with its first segment cut inside a batch (byte 500, in the batch at 466)."""
    pdir = dest / "payments-0"
    shutil.copytree(root / "payments-0", pdir)
    log = pdir / "00000000000000000000.log"
    with open(log, "r+b") as f:
        f.truncate(500)
    return log


@pytest.mark.parametrize("kernel", ["rust", "python"])
def test_text_dump_names_the_file_where_the_replay_stopped(fixture_root, tmp_path, kernel):
    """The read_committed problem comes before any `Dumping` line: it names its file itself."""
    import os

    log = _torn(fixture_root, tmp_path)
    env = {**os.environ, "KSEG_KERNEL": kernel}
    proc = run_kseg("dump", log.parent, "--isolation", "read_committed", env=env)
    assert proc.returncode == 4
    lines = proc.stdout.decode().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("ERROR "):
            named = f" {log} at byte " in line
            under = any(x == f"Dumping {log}" for x in lines[:i])
            assert named or under, line
    (first,) = [x for x in lines if "read_committed: the transaction replay stops here" in x]
    assert first.startswith(f"ERROR torn_tail {log} at byte 466 [size]: ")
