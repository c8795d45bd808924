"""A batch from kseg.read_batches stays usable for as long as the caller holds it."""

from __future__ import annotations

import gc
import os

import kseg
from kseg.fixtures import PARTITIONS


def _logs(tree):
    for name in PARTITIONS:
        yield from sorted((tree / name).glob("*.log"))


def test_batches_kept_after_the_loop_still_decode(tree):
    for log in _logs(tree):
        kept = list(kseg.read_batches(log))  # the generator is exhausted and gone
        gc.collect()
        again = [[(r.offset, r.key, r.value) for r in b.records()] for b in kseg.read_batches(log)]
        assert [[(r.offset, r.key, r.value) for r in b.records()] for b in kept] == again, log
    # the example from the issue, verbatim
    first = list(kseg.read_batches(tree / "orders-0" / "00000000000000000000.log"))[0]
    assert next(iter(first.records())).offset == 0


def test_an_abandoned_generator_keeps_the_map_for_the_batch_it_gave(tree):
    log = tree / "orders-1" / "00000000000000000000.log"
    gen = kseg.read_batches(log)
    batch = next(gen)
    gen.close()
    del gen
    gc.collect()
    assert len(list(batch.records())) == batch.records_count


def test_the_file_is_closed_when_the_last_batch_goes(tree):
    """No descriptor outlives the batches (reference counting closes it)."""
    log = tree / "orders-0" / "00000000000000000000.log"

    def open_fds() -> int:
        fds = os.listdir(f"/proc/{os.getpid()}/fd")
        n = 0
        for fd in fds:
            try:
                n += os.readlink(f"/proc/{os.getpid()}/fd/{fd}") == str(log)
            except OSError:
                pass
        return n

    batches = list(kseg.read_batches(log))
    assert open_fds() == 1
    del batches
    gc.collect()
    assert open_fds() == 0


def test_a_batch_the_read_window_has_passed_reads_its_bytes_again(tmp_path):
    """Past the reader's window (it keeps 16 MiB behind the walk), a kept batch's bytes were
    released: records() reads just that batch again, and the walk itself copied nothing."""
    pdir = tmp_path / "big-0"
    with kseg.LogWriter(pdir, compression="none") as w:
        for i in range(400):  # ~40 MiB
            w.append([kseg.Record(key=b"k%d" % i, value=bytes([i % 251]) * 100_000)])
    w2 = tmp_path / "legacy-0"
    with kseg.LogWriter(w2, magic=1, compression="gzip") as w:
        for i in range(400):
            w.append([kseg.Record(key=b"k%d" % i, value=os.urandom(100_000))])
    for log in (pdir / "00000000000000000000.log", w2 / "00000000000000000000.log"):
        kept = list(kseg.read_batches(log))
        assert not kept[0].buf.covers(kept[0].position, kept[0].position + kept[0].size)
        fresh = [[(r.offset, r.key, r.value) for r in b.records()] for b in kseg.read_batches(log)]
        assert [[(r.offset, r.key, r.value) for r in b.records()] for b in kept] == fresh
