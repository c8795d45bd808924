"""Hypothesis strategies for damage to a segment (kseg.fixtures.damage): one per kind, each
drawing its positions and values (so a failure shrinks to a small damage), and ``damages``
drawing any of them."""

from __future__ import annotations

from hypothesis import strategies as st

from kseg.fixtures import damage as D
from kseg.format.entry import LOG_OVERHEAD

_I32 = st.integers(-(1 << 31), (1 << 31) - 1)
_I64 = st.integers(-(1 << 63), (1 << 63) - 1)


def _garbage(max_size: int = 300):
    return st.one_of(
        st.binary(min_size=1, max_size=max_size),
        st.integers(1, max_size).map(lambda n: b"\xff" * n),
        st.lists(st.integers(0, 2), min_size=1, max_size=max_size).map(bytes),
    )


@st.composite
def bit_flips(draw, data, entries):
    e = draw(st.sampled_from(entries))
    lo, hi = draw(st.sampled_from(((e.position * 8, e.end * 8), (0, len(data) * 8))))
    return D.BitFlips(tuple(draw(st.lists(st.integers(lo, hi - 1), min_size=1, max_size=8))))


@st.composite
def zero_page(draw, data, entries):
    unit = draw(st.sampled_from((D.PAGE, D.SECTOR)))
    start = draw(st.integers(0, (len(data) - 1) // unit)) * unit
    return D.ZeroPage(start, min(len(data), start + unit))


@st.composite
def torn(draw, data, entries):
    e = draw(st.sampled_from(entries))
    return D.Torn(draw(st.integers(e.position + 1, e.end - 1)), len(data))


@st.composite
def lying_length(draw, data, entries):
    e = draw(st.sampled_from(entries))
    boundary = st.sampled_from(
        [x.position for x in entries if x.position > e.position] or [len(data)]
    )
    value = draw(
        st.one_of(
            _I32,
            st.integers(0, 13),
            st.integers(-64, 64).map(lambda d: e.size - LOG_OVERHEAD + d),
            boundary.map(lambda p: p - e.position - LOG_OVERHEAD),
        )
    )
    return D.LyingLength(e.position, value)


@st.composite
def lying_count(draw, data, entries):
    batches = [x for x in entries if x.magic == 2]
    if not batches:
        return draw(lying_length(data, entries))
    e = draw(st.sampled_from(batches))
    return D.LyingCount(e.position, draw(st.one_of(_I32, st.integers(-1, 8))), draw(st.booleans()))


@st.composite
def lying_base_offset(draw, data, entries):
    e = draw(st.sampled_from(entries))
    return D.LyingBaseOffset(e.position, draw(st.one_of(_I64, st.integers(-2, 2000))))


@st.composite
def magic_flip(draw, data, entries):
    e = draw(st.sampled_from([x for x in entries if x.magic == 2] or entries))
    return D.MagicFlip(e.position, draw(st.integers(0, 255).filter(lambda m: m != e.magic)))


@st.composite
def garbage(draw, data, entries):
    at = draw(st.integers(0, len(data) - 1))
    return D.Garbage(at, draw(_garbage(600))[: len(data) - at])


@st.composite
def inserted(draw, data, entries):
    at = draw(st.one_of(st.sampled_from([e.position for e in entries]), st.integers(0, len(data))))
    return D.Inserted(at, draw(_garbage()))


@st.composite
def appended(draw, data, entries):
    return D.Appended(len(data), draw(_garbage()))


@st.composite
def copy_batch(draw, data, entries):
    src = draw(st.sampled_from(entries))
    at = draw(
        st.one_of(st.sampled_from([e.position for e in entries]), st.integers(0, len(data) - 1))
    )
    return D.CopyBatch(src.position, src.size, at if at != src.position else (at + 1) % len(data))


IN_PLACE = (
    bit_flips,
    zero_page,
    lying_length,
    lying_count,
    lying_base_offset,
    magic_flip,
    garbage,
    copy_batch,
)


@st.composite
def two(draw, data, entries):
    first = draw(st.one_of(*(s(data, entries) for s in IN_PLACE)))
    second = draw(st.one_of(*(s(first.apply(data), entries) for s in IN_PLACE)))
    return D.Two(first, second)


BY_KIND = {
    "bit-flips": bit_flips,
    "zero-page": zero_page,
    "torn": torn,
    "lying-length": lying_length,
    "lying-count": lying_count,
    "lying-base-offset": lying_base_offset,
    "magic-flip": magic_flip,
    "garbage": garbage,
    "inserted": inserted,
    "appended": appended,
    "copy-batch": copy_batch,
    "two": two,
}
assert set(BY_KIND) == set(D.KINDS)


def damages(data: bytes, entries):
    """Any damage to ``data`` (whose entries are ``entries``: kseg.fixtures.damage.EntryAt or
    kseg.fixtures.truth.OriginalEntry)."""
    return st.one_of(*(s(data, entries) for s in BY_KIND.values()))
