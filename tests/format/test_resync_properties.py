"""Property tests of the resync walk (kseg.format.resync.walk_resync) on damaged segments
written by kseg's writer, against ground truth (tests/format/resync_truth.py states the
properties and the rules that excuse a break): a seeded run of 20,000 damages, hypothesis on
top, bounded time on megabytes of garbage and zeros, and one xfail(strict) test for each
weakness of the rules the properties found (resync_truth.KNOWN)."""

from __future__ import annotations

import random
from collections import Counter
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kseg.fixtures import damage as D
from kseg.fixtures.segments import embedded_batches
from kseg.fixtures.truth import original_entries
from kseg.format.resync import Skipped, walk_resync
from tests.format.damage_strategies import damages
from tests.format.resync_truth import KNOWN, check

SEEDED = 2000  # damages per fixture segment in the seeded run (x 10 segments = 20,000)
BIG = 4 << 20


def _assert_holds(verdict, damage) -> None:
    assert not verdict.problems, (damage, verdict.problems, verdict.events)
    assert verdict.known <= KNOWN, (damage, verdict.known - KNOWN)


def test_an_undamaged_segment_walks_whole(damage_segments):
    for _, data, entries, after in damage_segments.values():
        events = list(walk_resync(data, after_offset=after))
        assert [(e.position, e.size) for e in events] == [(e.position, e.size) for e in entries]


@pytest.mark.parametrize(
    "name",
    [
        "codecs",
        "many-small",
        "legacy-v0",
        "legacy-v1",
        "upgrade",
        "txn",
        "compacted",
        "hostile-zero",
        "hostile-in-range",
        "hostile-legacy",
    ],
)
def test_seeded_damages_keep_the_properties(name, damage_segments):
    """2,000 damages of every kind in turn (x 10 segments: 20,000), deterministic."""
    _, data, entries, after = damage_segments[name]
    seen, excused, known = Counter(), Counter(), Counter()
    for damage in D.damage_stream(20261128, data, SEEDED):
        verdict = check(data, entries, damage, after)
        _assert_holds(verdict, damage)
        seen[type(damage).__name__] += 1
        if isinstance(damage, D.ZeroPage) and not name.startswith("hostile"):
            # a zeroed page (a power loss) with intact batches after it: a confirmed resync
            assert not any(isinstance(e, Skipped) and e.ambiguous for e in verdict.events)
        excused.update(verdict.excused)
        known.update(verdict.known)
    v2 = any(e.magic == 2 for e in entries)  # lying-count needs a v2 batch (else: a length)
    assert len(seen) == len(D.KINDS) - (not v2), seen
    # the excuses stay the exception: most damage is explained by the plain properties (what
    # follows a resume flagged ambiguous aside: the hostile segments are made of such)
    assert sum(excused.values()) - excused["after-ambiguous"] < SEEDED // 4, excused
    if not name.startswith("hostile"):
        assert excused["after-ambiguous"] < SEEDED // 4, excused


NAMES = [
    "codecs",
    "many-small",
    "legacy-v0",
    "legacy-v1",
    "upgrade",
    "txn",
    "compacted",
    "hostile-zero",
    "hostile-in-range",
    "hostile-legacy",
]


class Found(NamedTuple):
    """A damage random draws found, by the index of the entries it hits (the fixtures'
    positions depend on the codecs' output): ``make(entries)`` gives the damage."""

    what: str
    k: int

    def make(self, entries):
        e = entries[self.k]
        if self.what == "copy-of-a-rewritten-batch":
            # Two(LyingCount(e, 0, fix_crc=True), CopyBatch(e, e.size, at=0)): a CRC-valid
            # batch (its CRC computed again) copied over position 0, offsets below the
            # segment's base. The plain walk yields it, as Kafka's recovery reads it (salvage's
            # liar rule drops it later); the harness counted it invented (resync_truth now
            # knows a copy of a rewritten batch)
            return D.Two(D.LyingCount(e.position, 0, True), D.CopyBatch(e.position, e.size, 0))
        if self.what == "holder-copied-one-byte-on":
            # a batch whose record values hold batches, copied one byte after itself: the
            # held batches end where the next real batch starts (its first byte, 0, is the
            # copy's last) and run on into it to the end; only their offsets (the holder's)
            # do not rise into it: the chain-to-the-end rule checks offsets too
            return D.CopyBatch(e.position, e.size, e.position + 1)
        if self.what == "rewritten-batch-one-byte-longer":
            # its size field says one byte more, then its CRC is computed again over that:
            # a valid batch (Kafka reads it) over the next one's first byte; the harness had
            # excused only an original entry covering an intact one
            return D.Two(D.LyingLength(e.position, e.size - 11), D.LyingCount(e.position, 0, True))
        raise AssertionError(self.what)


@settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.sampled_from(NAMES), pick=st.data(), found=st.none())
@example(name="codecs", pick=None, found=Found("copy-of-a-rewritten-batch", 8))
@example(name="txn", pick=None, found=Found("copy-of-a-rewritten-batch", 3))
@example(name="hostile-in-range", pick=None, found=Found("holder-copied-one-byte-on", 3))
@example(name="codecs", pick=None, found=Found("rewritten-batch-one-byte-longer", 3))
def test_any_damage_keeps_the_properties(damage_segments, name, pick, found):
    _, seg, entries, after = damage_segments[name]
    damage = found.make(entries) if found else pick.draw(damages(seg, entries))
    _assert_holds(check(seg, entries, damage, after), damage)


@pytest.mark.parametrize(
    "junk",
    [random.Random(0).randbytes(BIG), bytes(BIG)],
    ids=["garbage", "zeros"],
)
def test_megabytes_of_junk_are_skipped_in_one_range(junk, damage_segments):
    """4 MiB of random bytes or of zeros between two halves of a segment: one Skipped over
    exactly the junk, every entry on either side yielded (terminates; no time is asserted)."""
    _, data, entries, after = damage_segments["many-small"]
    k = len(entries) // 2
    cut = entries[k].position
    buf = data[:cut] + junk + data[cut:]
    events = list(walk_resync(buf, after_offset=after))
    skipped = [e for e in events if isinstance(e, Skipped)]
    assert [(s.start, s.end) for s in skipped] == [(cut, cut + len(junk))]
    assert skipped[0].first_offset is None  # no offset lies between the entries around it
    got = [(e.position, e.size) for e in events if not isinstance(e, Skipped)]
    want = [(e.position + (len(junk) if i >= k else 0), e.size) for i, e in enumerate(entries)]
    assert got == want


# --- weaknesses of the rules the properties found, fixed (each was resync_truth.KNOWN) ----------------------


def _hostile_holder(entries):
    """The last entry of the hostile-in-range segment whose record values hold batches, and
    where its embedded batches end inside it."""
    for e in reversed(entries):
        for count in (3, 2):
            inner = embedded_batches(e.first_offset, count)
            at = e.data.find(inner)
            if at >= 0:
                return e, e.position + at + len(inner)
    raise AssertionError("no entry holds batches")


def _invented(data: bytes, entries, events) -> list:
    """Entries yielded that are no original entry and follow a Skipped not flagged ambiguous."""
    originals = {e.data for e in entries}
    out, prev = [], None
    for ev in events:
        if isinstance(ev, Skipped):
            prev = ev
        elif data[ev.position : ev.position + ev.size] not in originals and not (
            prev and prev.ambiguous
        ):
            out.append(ev)
    return out


def test_a_torn_batch_holding_batches_flags_its_resume_ambiguous(damage_segments):
    _, data, entries, after = damage_segments["hostile-in-range"]
    holder, inner_end = _hostile_holder(entries)
    torn = D.Torn(inner_end + 3, len(data)).apply(data)
    events = list(walk_resync(torn, after_offset=after))
    assert not _invented(torn, entries, events), events


def test_a_damaged_last_batch_holding_batches_flags_its_resume_ambiguous(damage_segments):
    _, data, entries, after = damage_segments["hostile-in-range"]
    holder, inner_end = _hostile_holder(entries)
    data = data[: holder.end]  # the holder ends the data
    flipped = D.BitFlips(((holder.end - 2) * 8,)).apply(data)
    events = list(walk_resync(flipped, after_offset=after))
    skipped = [e for e in events if isinstance(e, Skipped)]
    assert skipped and skipped[0].start == holder.position
    assert not _invented(flipped, original_entries(data), events), events


def test_a_zeroed_size_field_before_held_batches_flags_ambiguous(damage_segments):
    _, data, entries, after = damage_segments["hostile-in-range"]
    holder, _ = _hostile_holder(entries)
    bad = D.LyingLength(holder.position, 0).apply(data)
    events = list(walk_resync(bad, after_offset=after))
    assert not _invented(bad, entries, events), events


def test_a_size_field_that_lands_on_a_later_batch_skips_no_intact_one(damage_segments):
    _, data, entries, after = damage_segments["many-small"]
    e, later = entries[3], entries[6]
    bad = D.LyingLength(e.position, later.position - e.position - 12).apply(data)
    events = list(walk_resync(bad, after_offset=after))
    yielded = {ev.position for ev in events if not isinstance(ev, Skipped)}
    assert {entries[4].position, entries[5].position} <= yielded, events


def test_zeros_over_the_last_entries_report_offsets_lost(damage_segments):
    _, data, entries, after = damage_segments["many-small"]
    k = len(entries) - 4
    zeroed = D.ZeroPage(entries[k].position, len(data)).apply(data)
    before = entries[-1].last_offset + 1  # the next segment's base offset
    events = list(walk_resync(zeroed, after_offset=after, before_offset=before))
    tail = events[-1]
    assert isinstance(tail, Skipped) and tail.start == entries[k].position
    assert tail.first_offset == entries[k - 1].last_offset + 1, tail
    assert tail.last_offset == entries[-1].last_offset, tail
    # without the next segment's base, zeros at the end may be preallocation: none lost
    plain = list(walk_resync(zeroed, after_offset=after))[-1]
    assert (plain.first_offset, plain.last_offset) == (None, None), plain


def test_a_resumed_wrapper_with_a_lying_offset_does_not_raise(damage_segments):
    _, data, entries, after = damage_segments["legacy-v1"]
    first, wrapper = entries[0], entries[1]  # a plain message, then a wrapper of 3 messages
    assert after == -1 and wrapper.last_offset - wrapper.first_offset == 2
    damage = D.Two(
        D.BitFlips(((first.end - 3) * 8,)),  # the first message's CRC fails
        D.LyingBaseOffset(wrapper.position, 1),  # above -1, below its last inner offset 2
    )
    events = list(walk_resync(damage.apply(data), after_offset=after))
    # the wrapper is refused as a resume (its inner offsets disagree with its own): skipped
    assert isinstance(events[0], Skipped) and events[0].end == wrapper.end, events
    assert events[1].position == wrapper.end
