"""The damage generator (kseg.fixtures.damage), the fixtures it damages (kseg.fixtures.segments)
and the ground truth over them (kseg.fixtures.truth): each damage touches what it says and
nothing else, the stream is deterministic, the truth matches hand-placed damage."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.fixtures import damage as D
from kseg.fixtures.segments import MID_LOG, embedded_batches
from kseg.fixtures.tree import BASE_TS, CODECS, FixedClock, _records
from kseg.fixtures.truth import damage_partition, merge_ranges, partition_truth, segment_truth
from kseg.format import errors as E
from kseg.format.crc import crc32c
from kseg.format.log import iter_entries, v2_crc_matches
from kseg.storage.writer import LogWriter
from tests.format.damage_strategies import damages


def _expected_size(damage, n: int) -> int:
    if isinstance(damage, D.Torn):
        return damage.at
    if isinstance(damage, (D.Inserted, D.Appended)):
        return n + len(damage.data)
    return n


def _honest(damage, data: bytes) -> None:
    """Every byte outside ``damage.touched()`` is unchanged at ``damage.moved(pos)``; the size
    is what the kind says; moved positions keep their order."""
    out = damage.apply(data)
    assert len(out) == _expected_size(damage, len(data)), damage
    touched = damage.touched()
    inside = bytearray(len(data))
    for a, b in touched:
        assert 0 <= a <= b, damage
        inside[a:b] = b"\x01" * (min(b, len(data)) - a)
    prev = -1
    for pos in range(len(data)):
        to = damage.moved(pos)
        if to is None:
            assert inside[pos], (damage, pos)
            continue
        assert to > prev, (damage, pos)
        prev = to
        if not inside[pos]:
            assert out[to] == data[pos], (damage, pos)


def test_fixture_segments_cover_every_codec_magic_and_shape(damage_segments):
    codecs, magics = set(), set()
    control = transactional = gaps = hostile = False
    for name, (_, data, entries, after) in damage_segments.items():
        assert 500 < len(data) < 8 << 10, name  # small: thousands of damages run fast
        assert entries[0].first_offset == after + 1, name
        for e in next_entries(data):
            magics.add(e.magic)
            codecs.add(e.compression)
            if e.magic == 2:
                control |= e.is_control
                transactional |= e.is_transactional
        gaps |= any(
            b.first_offset > a.last_offset + 1 for a, b in zip(entries, entries[1:], strict=False)
        )
        hostile |= embedded_batches(MID_LOG)[:20] in data
    assert codecs == set(CODECS) and magics == {0, 1, 2}
    assert control and transactional and gaps and hostile


def next_entries(data: bytes):
    return list(iter_entries(data, validate=True))


def test_hostile_values_hold_valid_chaining_batches(damage_segments):
    for name, want_base in (("hostile-zero", 0), ("hostile-in-range", None)):
        _, data, entries, _ = damage_segments[name]
        found = 0
        for e in entries:
            inner = e.data[61:]
            for pos in range(len(inner) - 70):
                if inner[pos + 16] != 2 or inner[pos + 8 : pos + 12] == b"\x00\x00\x00\x00":
                    continue
                try:
                    b = next(iter_entries(inner, pos, validate=True))
                except (StopIteration, E.CorruptionError):
                    continue
                found += 1
                if want_base is not None:
                    assert b.base_offset < 10
                else:
                    assert e.first_offset <= b.base_offset <= e.last_offset + 3
        assert found >= 16, name


@pytest.mark.parametrize("kind", D.KINDS)
def test_each_kind_touches_only_what_it_says(kind, damage_segments):
    for name, (_, data, _entries, _) in damage_segments.items():
        rng = random.Random(f"{kind}-{name}")
        at = D.entries_of(data)
        for _ in range(25):
            _honest(D.random_damage(rng, data, at, kind), data)


def test_stream_is_deterministic_from_its_seed(damage_segments):
    _, data, _, _ = damage_segments["codecs"]
    a = list(D.damage_stream(5, data, 60))
    assert a == list(D.damage_stream(5, data, 60))
    assert a != list(D.damage_stream(6, data, 60))
    assert [type(d) for d in a[: len(D.KINDS)]] == [
        D.BitFlips,
        D.ZeroPage,
        D.Torn,
        D.LyingLength,
        D.LyingCount,
        D.LyingBaseOffset,
        D.MagicFlip,
        D.Garbage,
        D.Inserted,
        D.Appended,
        D.CopyBatch,
        D.Two,
    ]


def test_zero_pages_are_aligned_in_the_file(damage_segments):
    _, data, _, _ = damage_segments["hostile-zero"]
    pages = [d for d in D.damage_stream(1, data, 600, ("zero-page",))]
    assert {d.start % D.SECTOR for d in pages} == {0}
    assert any(d.end - d.start == D.PAGE for d in pages)
    assert all(d.apply(data)[d.start : d.end] == bytes(d.end - d.start) for d in pages)


def test_fields_outside_the_crc_keep_a_v2_batch_valid(damage_segments):
    _, data, entries, _ = damage_segments["codecs"]
    e = entries[3]
    for d in (D.LyingBaseOffset(e.position, 7), D.MagicFlip(e.position, 3)):
        out = d.apply(data)
        assert v2_crc_matches(out, e.position, len(out)) and out != data
    assert next(iter_entries(D.MagicFlip(e.position, 3).apply(data), e.position)).magic == 3


def test_lying_count_with_and_without_its_crc(damage_segments):
    _, data, entries, _ = damage_segments["codecs"]
    e = entries[2]
    stale = D.LyingCount(e.position, 99, False).apply(data)
    with pytest.raises(E.CorruptionError) as err:
        list(iter_entries(stale, e.position, validate=True))
    assert err.value.kind == E.CRC_MISMATCH
    fixed = D.LyingCount(e.position, 99, True).apply(data)
    batch = next(iter_entries(fixed, e.position, validate=True))
    assert batch.records_count == 99
    assert batch.crc == crc32c(fixed[e.position + 21 : e.end])


def test_lying_length_and_torn_and_garbage_give_kafkas_errors(damage_segments):
    _, data, entries, _ = damage_segments["many-small"]
    e = entries[5]
    cases = (
        (D.LyingLength(e.position, 0x7FFFFFF0), E.TORN_TAIL),
        (D.LyingLength(e.position, 3), E.INVALID_SIZE),
        (D.Torn(e.position + 30, len(data)), E.TORN_TAIL),
        (D.Inserted(e.position, b"\xff" * 20), E.INVALID_SIZE),
        (D.ZeroPage(e.position, len(data)), E.ZERO_FILLED_TAIL),
    )
    for d, kind in cases:
        with pytest.raises(E.CorruptionError) as err:
            list(iter_entries(d.apply(data), validate=True))
        assert (err.value.kind, err.value.position) == (kind, e.position), d


def test_truth_of_placed_damage(damage_segments):
    _, data, entries, _ = damage_segments["many-small"]
    n, k = len(data), 7
    e = entries[k]
    # a torn entry: everything before it intact, it and everything after lost
    t = segment_truth(data, D.Torn(e.position + 10, n), entries)
    assert [x for x, _ in t.intact] == entries[:k] and list(t.lost) == entries[k:]
    assert t.lost_ranges() == [(entries[k].first_offset, entries[-1].last_offset)]
    # garbage inserted between two entries: every entry intact, the later ones moved
    t = segment_truth(data, D.Inserted(e.position, b"junk"), entries)
    assert not t.lost
    assert [p for _, p in t.intact] == [x.position + 4 * (i >= k) for i, x in enumerate(entries)]
    # inserted inside an entry: only that one is lost
    t = segment_truth(data, D.Inserted(e.position + 20, b"junk"), entries)
    assert list(t.lost) == [e]
    # a flip: only the entry holding the byte; nothing touched: nothing lost
    t = segment_truth(data, D.BitFlips(((e.position + 40) * 8,)), entries)
    assert list(t.lost) == [e] and t.intact_at()[entries[k + 1].position] == entries[k + 1]
    assert not segment_truth(data, D.Appended(n, b""), entries).lost
    # the same bytes written over themselves change nothing
    assert not segment_truth(data, D.Garbage(e.position, e.data[:10]), entries).lost


def test_merge_ranges():
    assert merge_ranges([(5, 6), (0, 1), (2, 3), (9, 9), (8, 8)]) == [(0, 3), (5, 6), (8, 9)]
    assert merge_ranges([]) == []


def test_partition_truth_over_segments(tmp_path):
    src = tmp_path / "p-0"
    with LogWriter(src, clock=FixedClock(), segment_bytes=1500) as w:
        infos = [
            w.append(_records(i * 3, 3, BASE_TS), compression=CODECS[i % 5]) for i in range(12)
        ]
    logs = sorted(src.glob("*.log"))
    assert len(logs) >= 3
    second = [i for i in infos if i.segment == logs[1]]
    hit = second[1]
    damages = {logs[1].name: D.BitFlips(((hit.position + hit.size - 5) * 8,))}
    truth = partition_truth(src, damages)
    assert truth.lost_ranges == ((hit.base_offset, hit.last_offset),)
    every = set(range(infos[-1].last_offset + 1))
    assert set(truth.intact_offsets) == every - set(range(hit.base_offset, hit.last_offset + 1))
    assert truth.bytes_before == sum(p.stat().st_size for p in logs)
    assert truth.intact_bytes == truth.bytes_before - hit.size
    out = damage_partition(src, tmp_path / "damaged-0", damages)
    assert (out / logs[1].name).read_bytes() == damages[logs[1].name].apply(logs[1].read_bytes())
    assert (out / logs[0].name).read_bytes() == logs[0].read_bytes()
    with pytest.raises(ValueError):
        partition_truth(src, {"00000000000000099999.log": damages[logs[1].name]})


def test_partition_truth_counts_compacted_records_not_offsets(damage_segments):
    pdir, data, entries, _ = damage_segments["compacted"]
    truth = partition_truth(pdir, {})
    assert truth.intact_offsets[:4] == (1, 4, 5, 9) and not truth.lost_ranges
    gone = partition_truth(
        pdir, {next(pdir.glob("*.log")).name: D.Torn(entries[1].position + 5, len(data))}
    )
    assert gone.intact_offsets == (1, 4, 5, 9)
    # lost ranges are the lost batches' header ranges, merged where they touch: gaps stay
    lost = merge_ranges((e.first_offset, e.last_offset) for e in entries[1:])
    assert gone.lost_ranges == tuple(lost) and lost[0] == (10, 24) and (25, 39) not in lost


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_strategies_touch_only_what_they_say(damage_segments, data):
    name = data.draw(st.sampled_from(sorted(damage_segments)))
    _, seg, entries, _ = damage_segments[name]
    _honest(data.draw(damages(seg, entries)), seg)
