"""Kafka 0.7 messages: round trips, positioned corruption for every codec and both magics, and
cross-checks of CRC-32 and the snappy/gzip framing against kafka-python's independent codecs."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kseg.format import compression as codecs
from kseg.format import kafka07 as k7
from kseg.format.errors import (
    CRC_MISMATCH,
    DECOMPRESSION_FAILED,
    DECOMPRESSION_LIMIT,
    INVALID_MAGIC,
    INVALID_RECORD,
    INVALID_SIZE,
    TORN_TAIL,
    UNKNOWN_CODEC,
    ZERO_FILLED_TAIL,
    CorruptionError,
)

CASES = [(0, codecs.NONE)] + [(1, c) for c in (codecs.NONE, codecs.GZIP, codecs.SNAPPY)]


def _payloads(n: int = 12) -> list[bytes]:
    return [(b"message %d " % i) * (i + 1) for i in range(n)] + [b""]


def _read_all(buf: bytes, **kw):
    """(entry offset, magic, codec, payloads) for every top-level entry."""
    out = []
    for e in k7.entries(buf, **kw):
        if e.is_compressed:
            payloads = [m.payload for m in k7.inner_messages(e)]
        else:
            with e.payload() as p:
                payloads = [bytes(p)]
        out.append((e.offset, e.magic, e.codec, payloads))
    return out


def test_layout_is_derived_from_the_field_lists():
    assert k7.PAYLOAD_POS == {0: 9, 1: 10}
    assert k7.CRC_POS == {0: 5, 1: 6}
    assert k7.MIN_SIZE == {0: 5, 1: 6}
    assert k7.MAGIC_POS == 4


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_round_trip(magic, codec):
    data = b"".join(k7.encode_message_set(_payloads(), magic=magic, codec=codec) for _ in range(3))
    got = _read_all(data, base=1000)
    assert len(got) == (3 if codec else 3 * len(_payloads()))
    flat = [p for *_, ps in got for p in ps]
    assert flat == _payloads() * 3
    assert got[0][0] == 1000
    for (off, m, c, _), e in zip(got, k7.entries(data, base=1000), strict=True):
        assert (off, m, c) == (e.offset, magic if not codec else 1, codec)
        assert e.next_offset == off + e.entry_size


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=20),
    case=st.sampled_from(CASES),
    base=st.integers(0, 1 << 40),
)
def test_round_trip_property(payloads, case, base):
    magic, codec = case
    data = k7.encode_message_set(payloads, magic=magic, codec=codec)
    got = _read_all(data, base=base)
    assert [p for *_, ps in got for p in ps] == payloads
    assert got[0][0] == base
    # the encoded size is exactly the header arithmetic
    if codec == codecs.NONE:
        assert len(data) == sum(k7.PAYLOAD_POS[magic] + len(p) for p in payloads)


def test_consumer_offsets_of_inner_messages():
    first = k7.encode_message_set([b"a"], codec=codecs.NONE)
    wrapper = k7.encode_message_set([b"x", b"y", b"z"], codec=codecs.GZIP)
    data = first + wrapper
    entries = list(k7.entries(data, base=50))
    w = entries[1]
    assert w.offset == 50 + len(first)
    inner = k7.inner_messages(w)
    # 0.7's deep iterator: the wrapper's start for all but the last, its end for the last
    assert [m.consumer_offset for m in inner] == [w.offset, w.offset, w.next_offset]
    assert w.next_offset == 50 + len(data)


def test_nested_wrappers_are_read_and_bounded_in_depth():
    inner = k7.encode_message_set([b"deep-1", b"deep-2"], codec=codecs.SNAPPY)
    outer = k7.encode_wrapper(inner + k7.encode_message(b"after"), codec=codecs.GZIP)
    (w,) = k7.entries(outer)
    got = k7.inner_messages(w)
    assert [(m.payload, m.depth) for m in got] == [(b"deep-1", 2), (b"deep-2", 2), (b"after", 1)]
    with pytest.raises(CorruptionError) as e:
        k7.inner_messages(w, max_depth=1)
    assert e.value.kind == INVALID_RECORD and "nested" in e.value.message
    data = k7.encode_message(b"x")
    for _ in range(k7.MAX_DEPTH + 1):
        data = k7.encode_wrapper(data, codec=codecs.GZIP)
    (w,) = k7.entries(data)
    with pytest.raises(CorruptionError, match="nested more than"):
        k7.inner_messages(w)


def test_decompression_is_bounded_across_nesting():
    big = k7.encode_message_set([b"\0" * 100_000], codec=codecs.GZIP)
    (w,) = k7.entries(big)
    with pytest.raises(CorruptionError) as e:
        k7.inner_messages(w, max_decompressed=50_000)
    assert e.value.kind == DECOMPRESSION_LIMIT and e.value.position == 0
    nested = k7.encode_wrapper(big, codec=codecs.SNAPPY)
    (w,) = k7.entries(nested)
    # the outer level takes ~few hundred bytes; the inner 100 KB exceed what is left
    with pytest.raises(CorruptionError) as e:
        k7.inner_messages(w, max_decompressed=60_000)
    assert e.value.kind == DECOMPRESSION_LIMIT


# --- positioned corruption ----------------------------------------------------------------------


def _log(magic: int, codec: int) -> tuple[bytes, list[int]]:
    """Three appends; returns the bytes and the entry positions."""
    data = b""
    for i in range(3):
        data += k7.encode_message_set(
            [b"p%d-%d" % (i, j) * 20 for j in range(4)], magic=magic, codec=codec
        )
    return data, [e.position for e in k7.entries(data)]


def _first_error(data: bytes, base: int = 0) -> CorruptionError:
    with pytest.raises(CorruptionError) as e:
        for w in k7.entries(data, base=base, source="x.kafka"):
            if w.is_compressed:
                k7.inner_messages(w)
    return e.value


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_crc_mismatch_is_positioned(magic, codec):
    data, pos = _log(magic, codec)
    victim = pos[1]
    bad = bytearray(data)
    bad[victim + k7.PAYLOAD_POS[magic] + 3] ^= 0x40
    err = _first_error(bytes(bad), base=7000)
    assert (err.kind, err.position, err.offset, err.field) == (
        CRC_MISMATCH,
        victim,
        7000 + victim,
        "crc",
    )
    assert err.file == "x.kafka" and f"byte {victim}" in str(err)


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_magic_and_attributes_lie_outside_the_crc(magic, codec):
    """A flipped codec bit passes the CRC (payload only) and shows as a wrong codec."""
    data, pos = _log(magic, codec)
    if magic == 0:
        bad = bytearray(data)
        bad[pos[1] + k7.MAGIC_POS] = 1  # magic 0 read as 1: the CRC moves, so it mismatches
        assert _first_error(bytes(bad)).position == pos[1]
        return
    bad = bytearray(data)
    bad[pos[1] + k7.FIELD_POS[1]["attributes"]] = 3
    err = _first_error(bytes(bad))
    assert (err.kind, err.position, err.field) == (UNKNOWN_CODEC, pos[1], "attributes")


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_torn_tail_bad_magic_and_lying_sizes(magic, codec):
    data, pos = _log(magic, codec)
    # torn: the last entry cut short
    err = _first_error(data[:-3])
    assert (err.kind, err.position) == (TORN_TAIL, pos[-1])
    # three bytes left after the last entry
    err = _first_error(data + b"\x00\x00\x07")
    assert (err.kind, err.position) == (TORN_TAIL, len(data))
    # zeros after the log
    err = _first_error(data + bytes(64))
    assert (err.kind, err.position) == (ZERO_FILLED_TAIL, len(data))
    # a bad magic
    bad = bytearray(data)
    bad[pos[2] + k7.MAGIC_POS] = 7
    err = _first_error(bytes(bad))
    assert (err.kind, err.position, err.field) == (INVALID_MAGIC, pos[2], "magic")
    # a size that lies long (past the end) and short (below the minimum, and magic 1's 6)
    for lie, kind in ((1 << 30, TORN_TAIL), (4, INVALID_SIZE), (-9, INVALID_SIZE)):
        bad = bytearray(data)
        struct.pack_into(">i", bad, pos[1], lie)
        err = _first_error(bytes(bad))
        assert (err.kind, err.position, err.field) == (kind, pos[1], "size")
    if magic == 1:
        bad = bytearray(data)
        struct.pack_into(">i", bad, pos[1], 5)
        err = _first_error(bytes(bad))
        assert (err.kind, err.position) == (INVALID_SIZE, pos[1])
        assert "magic 1" in err.message
    # a size that lies by a little: the CRC then covers the wrong bytes
    bad = bytearray(data)
    struct.pack_into(">i", bad, pos[0], struct.unpack_from(">i", data, pos[0])[0] - 1)
    err = _first_error(bytes(bad))
    assert err.position == pos[0]


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY])
def test_corrupt_compressed_payload_with_a_matching_crc(codec):
    """Garbage the CRC agrees with (a buggy producer): only decompression can tell."""
    data, pos = _log(1, codec)
    w = list(k7.entries(data))[1]
    payload = bytearray(data[w.payload_start : w.payload_end])
    payload[len(payload) // 2 :] = b"\xff" * (len(payload) - len(payload) // 2)
    bad = data[: w.position] + k7.encode_message(payload, codec=codec) + data[w.payload_end :]
    err = _first_error(bad, base=100)
    assert err.kind == DECOMPRESSION_FAILED
    assert (err.position, err.offset) == (pos[1], 100 + pos[1])
    assert err.field.startswith(f"payload ({codecs.codec_name(codec)}")


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY])
def test_inner_message_crc_and_size(codec):
    inner = bytearray(k7.encode_message_set([b"one", b"two"], codec=codecs.NONE))
    inner[-1] ^= 1  # the second inner payload
    bad = k7.encode_wrapper(bytes(inner), codec=codec)
    err = _first_error(k7.encode_message(b"lead") + bad)
    assert (err.kind, err.position, err.field) == (CRC_MISMATCH, 14, "payload.crc")
    assert "decompressed byte 13" in err.message
    torn = k7.encode_wrapper(k7.encode_message(b"one")[:-1], codec=codec)
    err = _first_error(torn)
    assert (err.kind, err.position) == (TORN_TAIL, 0) and "decompressed byte 0" in err.message


def test_writer_rejects_what_07_cannot_hold():
    with pytest.raises(ValueError):
        k7.encode_message(b"x", magic=0, codec=codecs.GZIP)
    with pytest.raises(ValueError):
        k7.encode_message(b"x", magic=2)
    with pytest.raises(ValueError):
        k7.encode_message(b"x", codec=codecs.LZ4)


# --- independent implementations ------------------------------------------------------------


def _crc32_bitwise(data: bytes) -> int:
    """CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320) bit by bit: independent of zlib."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_crc_is_crc32_of_the_payload_only(magic, codec):
    assert _crc32_bitwise(b"123456789") == 0xCBF43926  # the standard check value
    for e in k7.entries(k7.encode_message_set(_payloads(4), magic=magic, codec=codec)):
        with e.payload() as p:
            assert e.crc == _crc32_bitwise(bytes(p)) == zlib.crc32(p)


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY])
def test_kafka_python_codecs_agree(codec):
    """kafka-python's gzip and xerial snappy code (kafka/codec.py) decodes what kseg writes and
    writes what kseg reads: the framing is snappy-java's, not only kseg's own idea of it."""
    kc = pytest.importorskip("kafka.codec")
    if codec == codecs.SNAPPY and not kc.has_snappy():
        pytest.skip("kafka-python has no snappy here")
    inner = k7.encode_message_set([b"x" * 70_000, b"y" * 10, b""], codec=codecs.NONE)
    ours = k7.encode_wrapper(inner, codec=codec)
    (w,) = k7.entries(ours)
    with w.payload() as p:
        compressed = bytes(p)
    if codec == codecs.SNAPPY:
        assert compressed[:8] == b"\x82SNAPPY\x00"
        assert kc.snappy_decode(compressed) == inner
        theirs = kc.snappy_encode(inner, xerial_compatible=True, xerial_blocksize=32 * 1024)
    else:
        assert kc.gzip_decode(compressed) == inner
        theirs = kc.gzip_encode(inner)
    wrapper = k7.encode_message(theirs, codec=codec)
    (w,) = k7.entries(wrapper)
    assert [m.payload for m in k7.inner_messages(w)] == [b"x" * 70_000, b"y" * 10, b""]
