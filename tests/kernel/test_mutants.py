"""Issue 35: the structure-aware mutants of tests/kernel/mutants.py (the fuzz target's custom
mutator) as a deterministic differential test, so CI covers them without atheris: record counts,
record lengths, header counts and header key/value lengths rewritten to huge, negative and
off-by-one values, CRCs fixed; the kernel and the core agree on every one (walk, JSON lines,
`kseg dump -f json` of the file, the Spark decoder's Arrow table)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import kseg
from kseg.spark.planning import Task

from .diff import (
    ARROW_OPTIONS,
    DUMP_OPTIONS,
    check_arrow,
    check_dump,
    check_json,
    check_raw_walk,
    core_walk,
    spliced_walk,
)
from .mutants import batches, mutants


def segment(tmp: Path, codec: str) -> bytes:
    """Two batches of records with headers (and one without), from kseg's writer."""
    pdir = tmp / f"{codec}-0"
    with kseg.LogWriter(pdir, compression=codec, clock=lambda: 1_700_000_000_000) as w:
        for i in range(2):
            w.append(
                [
                    kseg.Record(
                        b"k%d" % j,
                        b"v" * j,
                        1_700_000_000_000 + j,
                        [("h", b"x"), ("\u00e9", None)][: j % 3],
                    )
                    for j in range(3 + i)
                ]
            )
    return next(pdir.glob("*.log")).read_bytes()


@pytest.fixture(scope="module")
def segments(tmp_path_factory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("mutants")
    return {codec: segment(tmp, codec) for codec in ("none", "zstd")}


def check(buf: bytes, k, name: str, whole: bool) -> int:
    """Both paths agree on the mutant; ``whole``: the file's dump and Arrow table too (slower).
    Returns how many batches the kernel rendered itself."""
    assert spliced_walk(buf) == core_walk(buf), name
    check_raw_walk(buf, k)
    rendered = check_json(buf, name, k, modes=("auto", "hex"))
    if not whole:
        return rendered
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "m-0" / "00000000000000000000.log"
        log.parent.mkdir()
        log.write_bytes(buf)
        check_dump(log, "auto", options=DUMP_OPTIONS[:1])
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return rendered
        check_arrow(Task(str(log), "m", 0, 0, 0, len(buf)), options=ARROW_OPTIONS[1:2])
    return rendered


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_mutants_of_counts_and_lengths(k, segments, codec):
    buf = segments[codec]
    assert len(batches(buf)) == 2
    seen = rendered = 0
    for i, (what, mutant) in enumerate(mutants(buf)):
        rendered += check(mutant, k, f"{codec}: {what}", whole=i % 8 == 0)
        seen += 1
    assert seen > 500
    assert (
        rendered > 50
    )  # the kernel did render some mutants (a lie kept in bounds), not only decline
