"""Golden outputs: `kseg dump` of fixture partitions, byte for byte (the fixtures are
deterministic). After an intended output change: KSEG_UPDATE_GOLDEN=1 pytest tests/cli/test_golden.py
and review the diff of tests/golden/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import run_cli

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CASES = [
    ("upgrade-0", "text", ["--limit", "40"]),  # magic 0 -> 1 -> 2, every codec, wrappers
    ("txn-0", "text", ["--limit", "30"]),  # transactions, control records
    ("compacted-0", "json", []),  # gaps, an empty batch, indexes
    ("logappend-0", "json", ["--payload", "hex"]),  # LogAppendTime, legacy wrapper
    ("skewed-0", "text", ["--batches-only"]),
]


@pytest.mark.parametrize(("partition", "fmt", "extra"), CASES)
def test_dump_matches_golden(tree, monkeypatch, capsysbinary, partition, fmt, extra):
    code, out, err = run_cli(monkeypatch, capsysbinary, "dump", tree / partition, "-f", fmt, *extra)
    assert code == 0, err
    text = out.replace(str(tree), "<root>")
    golden = (
        GOLDEN
        / f"dump-{partition}-{fmt}{'-' + '-'.join(a.strip('-') for a in extra) if extra else ''}.txt"
    )
    if os.environ.get("KSEG_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"missing {golden}: run with KSEG_UPDATE_GOLDEN=1"
    assert text == golden.read_text()
