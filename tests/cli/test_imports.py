"""Start-up: a command imports only what it needs. Checked on the real entry point with
``python -X importtime`` (which names every module the process imported), not timed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kseg.format.record import Record
from kseg.storage.writer import LogWriter

# never needed by verify or index check: rendering libraries, Arrow/Spark, data frames
HEAVY = ("rich", "tabulate", "pyarrow", "pyspark", "numpy", "pandas", "kafka", "aiokafka")


def imported(*args) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kseg", *map(str, args)],
        capture_output=True,
        timeout=120,
    )
    names = set()
    for line in proc.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "kseg.cli" in names, proc.stderr[-2000:]  # the parse saw the imports
    return names


@pytest.fixture(scope="module")
def one_batch(tmp_path_factory):
    pdir = tmp_path_factory.mktemp("startup") / "t-0"
    with LogWriter(pdir) as w:
        w.append([Record(b"k", b"v", 1_700_000_000_000, [], 0)])
    return pdir


@pytest.mark.parametrize(
    "args", [("verify",), ("verify", "-f", "json"), ("index", "check"), ("dump", "--batches-only")]
)
def test_commands_import_no_heavy_modules(one_batch, args):
    names = imported(*args, one_batch)
    heavy = sorted(n for n in names if n.split(".")[0] in HEAVY)
    assert heavy == []
