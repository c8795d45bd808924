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


def test_the_map_is_released_when_the_last_batch_goes(tree):
    """No descriptor or mapping outlives the batches (reference counting frees it)."""
    log = tree / "orders-0" / "00000000000000000000.log"

    def maps() -> int:
        with open(f"/proc/{os.getpid()}/maps") as f:
            return sum(str(log) in line for line in f)

    batches = list(kseg.read_batches(log))
    assert maps() == 1
    del batches
    gc.collect()
    assert maps() == 0
