"""Fuzz target for the kernel's entry points (atheris), through the module, against the core.

    python -m tests.kernel.fuzz [--seconds 60] [--seed-corpus]   # from the project root

Each input is a segment: the first byte chooses whether the CRCs are recomputed after the
mutation (so lies reach the record loop) and the payload mode; the rest is the log. Both paths
must agree (walk rows, stop positions, errors, JSON bytes; the whole file's `kseg dump -f json`
output for the selection bits 6-7 choose; and, with pyarrow installed, the Spark decoder's Arrow
table and warnings for the option set bits 4-5 choose; the bytes after the first batch header
as each codec's payload: whenever the kernel's codecs decode them, the core's give the same
bytes); a difference or a crash is a finding.
Runs for a bounded time; new inputs go to a temporary directory, the committed corpus
(tests/kernel/corpus/, written by --seed-corpus from kseg's own writer) stays as it is.

A custom mutator makes about a third of the inputs structure-aware (tests/kernel/mutants.py): a
batch's record count, or a record's length, header count or header key/value length, rewritten
to a huge, negative or off-by-one value, CRCs recomputed, so the lie reaches the record decoders
(issue 35); the rest are libFuzzer's byte mutations.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"


def one_input(data: bytes) -> None:
    from kseg import _kernel as k

    from .diff import (
        KERNEL_MODES,
        check_codecs,
        check_json,
        check_raw_walk,
        core_walk,
        spliced_walk,
    )
    from .test_differential import fix_crcs

    if not data:
        return
    flags, buf = data[0], bytearray(data[1:])
    if flags & 1:
        fix_crcs(buf)
    buf = bytes(buf)
    assert spliced_walk(buf) == core_walk(buf)
    check_raw_walk(buf, k)
    mode = KERNEL_MODES[(flags >> 1) % len(KERNEL_MODES)]
    check_json(buf, "fuzz.log", k, modes=(mode,))
    check_arrow_input(buf, flags)
    check_dump_input(buf, flags, mode)
    check_codecs(buf[61:], k)  # the bytes after a first batch header as each codec's payload


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """A structure-aware mutant of the segment (the flags byte kept) about a third of the time,
    else libFuzzer's own mutation."""
    import atheris

    rng = random.Random(seed)
    if len(data) > 1 and rng.random() < 0.35:
        from .mutants import mutate

        out = data[:1] + mutate(data[1:], rng)
        if len(out) <= max_size and out != data:
            return out
    return atheris.Mutate(data, max_size)


def check_dump_input(buf: bytes, flags: int, mode: str) -> None:
    """`kseg dump -f json` of the whole segment through both paths (the kernel's runs of
    batches, the core for what they leave), with the selection bits 6-7 choose."""
    from .diff import DUMP_OPTIONS, check_dump

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "fuzz-0" / "00000000000000000000.log"
        log.parent.mkdir()
        log.write_bytes(buf)
        check_dump(log, mode, options=(DUMP_OPTIONS[(flags >> 6) % len(DUMP_OPTIONS)],))


def check_arrow_input(buf: bytes, flags: int) -> None:
    """records -> Arrow through both paths (kseg.spark.arrow.record_batches reads a file)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return
    from kseg.spark.planning import Task

    from .diff import ARROW_OPTIONS, check_arrow

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "fuzz-0" / "00000000000000000000.log"
        log.parent.mkdir()
        log.write_bytes(buf)
        task = Task(str(log), "fuzz", 0, 0, 0, len(buf))
        check_arrow(task, options=(ARROW_OPTIONS[(flags >> 4) % len(ARROW_OPTIONS)],))


def seed_corpus() -> None:
    """A small corpus from kseg's writer: the fixture batches of each kind, one file each."""
    from kseg.fixtures import build_tree

    CORPUS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = build_tree(Path(tmp) / "logs")
        for log in sorted(root.rglob("*.log")):
            data = log.read_bytes()[:4096]
            if data:
                name = f"{log.parent.name}-{log.stem[-4:]}"
                (CORPUS / name).write_bytes(b"\x01" + data)
    # for the Arrow decoder: headers in compressed batches, and timestamps it turns into nulls
    import kseg
    from kseg.format.timestamps import MAX_MS

    with tempfile.TemporaryDirectory() as tmp:
        for name, codec, ts, flags in (
            ("arrow-gzip-headers", "gzip", 1_700_000_000_000, 0x11),
            ("arrow-null-timestamps", "none", MAX_MS + 1, 0x21),
        ):
            pdir = Path(tmp) / f"{name}-0"
            with kseg.LogWriter(pdir, compression=codec, clock=lambda: 1_700_000_000_000) as w:
                for i in range(3):
                    recs = [
                        kseg.Record(b"k", b"v%d" % j, ts - j, [("h", b"x"), ("\u00e9", None)])
                        for j in range(i + 1)
                    ]
                    w.append(recs)
            (CORPUS / name).write_bytes(bytes([flags]) + next(pdir.glob("*.log")).read_bytes())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--seed-corpus", action="store_true")
    args, rest = ap.parse_known_args()
    if args.seed_corpus:
        seed_corpus()
        return
    import os

    os.environ["KSEG_KERNEL"] = "rust"
    import atheris

    with atheris.instrument_imports():
        import kseg.dump.kernel_json  # noqa: F401
        import kseg.dump.plan  # noqa: F401
        import kseg.format.batch  # noqa: F401
        import kseg.format.log  # noqa: F401
        import kseg.kernel  # noqa: F401
        import kseg.spark.arrow  # noqa: F401
        import kseg.spark.kernel_arrow  # noqa: F401
        import kseg.storage.kernel_walk  # noqa: F401
    with tempfile.TemporaryDirectory() as new:
        argv = [sys.argv[0], f"-max_total_time={args.seconds}", "-max_len=8192", *rest]
        atheris.Setup([*argv, new, str(CORPUS)], one_input, custom_mutator=custom_mutator)
        atheris.Fuzz()


if __name__ == "__main__":
    main()
