"""Record search (`kseg dump --key ...`, --count) with KSEG_KERNEL=rust and =python: stdout,
stderr and exit status identical on the fixtures, the corrupt cases, the real broker data and
fuzzed segments (the kernel walks and CRC-checks the batches the filter's pre-check rules out;
the core decodes the rest)."""

from __future__ import annotations

import random

import pytest

from .diff import kernel_built
from .test_differential import segments
from .test_dump_cli import mutated, real_dirs, records, same

pytestmark = pytest.mark.skipif(not kernel_built(), reason="the compiled kernel is not built")

FILTERS = (
    ("--key", "key-1"),
    ("--key", "^key-1$"),  # no pre-check: every batch decoded
    ("--key-eq", "key-3"),
    ("--value-contains", "order 1"),
    ("--header", "trace-id=0+1"),
    ("--value", "(?i)ORDER [0-9]+ 5"),
    ("--key", "nothing-like-this"),
)
SELECTIONS = (
    (),
    ("--limit", "7"),
    ("--from-offset", "30", "--to-offset", "120"),
    ("--from-time", "1700000000050", "--to-time", "1700000020100"),
    ("--max-bytes", "3000"),
    ("--count",),
)


@pytest.mark.parametrize("filt", FILTERS, ids=" ".join)
@pytest.mark.parametrize("selection", SELECTIONS, ids=lambda s: " ".join(s) or "all")
def test_fixture_tree(tree, filt, selection):
    same(str(tree), "--payload", "base64", *filt, *selection)


def test_fixture_tree_text_and_format_string(tree):
    for fmt in (("-f", "text"), ("--format-string", r"%t %p %o %k\n")):
        same(str(tree), "--key", "key-1", *fmt)  # same() adds -f json first; these override it


def test_corrupt_cases(corrupt_cases):
    dirs = [str(c.partition_dir) for c in corrupt_cases]
    for filt in FILTERS[:4]:
        out = same(*dirs, "--payload", "base64", *filt)
        assert b'"type":"error"' in out
        same(*dirs, *filt, "--count")


def test_real_broker_data(real_root):
    dirs = real_dirs(real_root)
    assert records(same(*dirs, "--payload", "base64", "--value", "[0-9]")) > 1000
    same(*dirs, "--key", "^$|a", "--count")


def test_fuzzed_segments(tree, tmp_path):
    rng = random.Random(2026)
    logs = [p.read_bytes() for p in segments(tree) if p.suffix == ".log" and p.stat().st_size]
    pdir = tmp_path / "fuzz-0"
    pdir.mkdir()
    for i in range(120):
        (pdir / f"{i * 1000:020d}.log").write_bytes(mutated(rng.choice(logs), rng))
    for filt in FILTERS:
        out = same(str(pdir), "--payload", "base64", *filt)
        if filt[1] == "key-1":
            assert records(out) > 10 and b'"type":"error"' in out
    same(str(pdir), "--value-contains", "order", "--count")
