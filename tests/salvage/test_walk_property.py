"""The salvage walk under one random damage (a bit flip, a zeroed 4 KiB page, a run of garbage,
a lying length) anywhere in a partition of several segments written by LogWriter: every batch
whose bytes are untouched is kept, and nothing is invented: every kept range is made of whole
original batches, each equal to the original once its edits are applied (or damaged only in
partition_leader_epoch, or its magic byte,
outside the CRC, which Kafka keeps as they are too)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.salvage.walk import AMBIGUOUS, SegmentSource, salvage_walk
from kseg.storage.tree import segment_logs
from tests.salvage.cases import batches, write_partition

# partition_leader_epoch and magic in a v2 batch: outside the CRC, kept as they are by the
# walk (Kafka keeps a magic >= 2 and any epoch; the command applies verify's proven patches)
OUTSIDE_CRC = (12, 17)


@functools.cache
def _pristine() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as d:
        pdir = Path(d) / "walk-0"
        write_partition(pdir)
        return {p.name: p.read_bytes() for p in segment_logs(pdir)}


def _damage(data: bytes, kind: str, at: int, rnd: int) -> tuple[bytes, int, int]:
    """(damaged bytes, first damaged byte, end of the damaged bytes)."""
    b = bytearray(data)
    if kind == "flip":
        b[at] ^= 1 << (rnd % 8)
        return bytes(b), at, at + 1
    if kind == "zero_page":
        start = at - at % 4096
        end = min(start + 4096, len(b))
        b[start:end] = bytes(end - start)
        return bytes(b), start, end
    if kind == "garbage":
        end = min(at + 1 + rnd % 300, len(b))
        b[at:end] = bytes((rnd * 31 + i * 17) % 256 for i in range(end - at))
        return bytes(b), at, end
    # a lying length: the batch at or before ``at`` says it is longer or shorter
    pos = max(p for p, *_ in batches_of(data) if p <= at)
    size = int.from_bytes(b[pos + 8 : pos + 12], "big")
    b[pos + 8 : pos + 12] = max(0, size + (rnd % 200) - 100 or 1).to_bytes(4, "big")
    return bytes(b), pos + 8, pos + 12


def batches_of(data: bytes) -> list[tuple[int, int, int, int]]:
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        return batches(Path(f.name))


def _bytes(ranges) -> set[int]:
    return {i for a, b in ranges for i in range(a, b)}


def _covered(keep_all, keep_default, out) -> bool:
    """Does the default keep exactly what --keep-ambiguous keeps, less the ambiguous ranges?"""
    return _bytes(keep_default) == _bytes(keep_all) - _bytes(out)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seg=st.integers(0, 2),
    kind=st.sampled_from(["flip", "zero_page", "garbage", "lying_length"]),
    where=st.floats(0, 0.999),
    rnd=st.integers(0, 1 << 16),
)
def test_every_untouched_batch_is_kept_and_nothing_is_invented(tmp_path, seg, kind, where, rnd):
    pristine = _pristine()
    names = sorted(pristine)
    name = names[seg]
    at = int(len(pristine[name]) * where)
    data, lo, hi = _damage(pristine[name], kind, at, rnd)
    d = Path(tempfile.mkdtemp(dir=tmp_path))
    for n in names:
        (d / n).write_bytes(data if n == name else pristine[n])
    sources = [SegmentSource(d / n, n, int(n.split(".")[0])) for n in names]
    segs = salvage_walk(sources, keep_ambiguous=True)
    # by default the entries reached through an ambiguous resync are left out, as lost ranges
    # flagged ambiguous; the rest is the same
    plain = salvage_walk(sources)
    for n, s, p in zip(names, segs, plain, strict=True):
        out = [(x.start, x.end) for x in p.lost if x.kind == AMBIGUOUS]
        assert all(x.ambiguous for x in p.lost if x.kind == AMBIGUOUS)
        left = sorted(set(s.keep) ^ set(p.keep))
        assert _covered(s.keep, p.keep, out), (n, left, out)
    for n, s in zip(names, segs, strict=True):
        orig = pristine[n]
        bounds = {p for p, *_ in batches_of(orig)} | {len(orig)}
        now = bytearray(data if n == name else orig)
        for e in s.edits:
            now[e.position : e.position + len(e.new)] = e.new
        kept = set()
        for start, end in s.keep:
            assert start in bounds and end in bounds, (n, start, end)  # whole batches only
            for p, size, *_ in batches_of(orig):
                if start <= p < end:
                    kept.add(p)
                    if now[p : p + size] != orig[p : p + size]:  # damaged, yet kept
                        assert (
                            n == name and p + OUTSIDE_CRC[0] <= lo and hi <= p + OUTSIDE_CRC[1]
                        ), (n, p)
        for p, size, *_ in batches_of(orig):
            touched = n == name and p < hi and lo < p + size
            if not touched:
                assert p in kept, (n, p, kind, lo, hi)
