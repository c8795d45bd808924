from __future__ import annotations

import os

import lz4.frame
import pytest
import snappy
import xxhash
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kseg.format import compression, lz4frame, xerial
from kseg.format.errors import DECOMPRESSION_LIMIT, DecompressionError

DATA = b"".join(b"line %d of some moderately repetitive text\n" % i for i in range(5000))


@given(st.binary(max_size=64))
def test_xxh32_matches_reference(data):
    assert lz4frame.xxh32(data) == xxhash.xxh32(data).intdigest()


@pytest.mark.parametrize("codec", sorted(compression.CODEC_NAMES))
@settings(max_examples=25, deadline=None)
@given(data=st.binary(max_size=5000))
def test_codec_round_trip(codec, data):
    assert compression.decompress(codec, compression.compress(codec, data)) == data


def test_gzip_is_deterministic():
    a = compression.compress(compression.GZIP, DATA)
    assert a == compression.compress(compression.GZIP, DATA)
    assert a[4:8] == b"\x00\x00\x00\x00"  # gzip mtime field


def test_xerial_framing_and_raw_snappy_are_both_read():
    framed = xerial.compress(DATA)
    assert framed.startswith(xerial.MAGIC)
    assert xerial.decompress(framed, 1 << 30) == DATA
    assert xerial.decompress(snappy.compress(DATA), 1 << 30) == DATA  # raw block, other clients


def test_lz4_frames_interoperate_with_reference_library():
    assert lz4.frame.decompress(lz4frame.compress(DATA)) == DATA
    for linked in (False, True):
        ref = lz4.frame.compress(DATA, block_linked=linked, content_checksum=True, store_size=True)
        if not linked:
            assert lz4frame.decompress(ref, 1 << 30) == DATA


def test_lz4_kafka_3160_header_checksum_is_accepted():
    broken = lz4frame.compress(DATA, broken_header_checksum=True)
    good = lz4frame.compress(DATA)
    assert broken != good and broken[6] != good[6]
    assert lz4frame.decompress(broken, 1 << 30) == DATA


def test_lz4_wrong_header_checksum_is_rejected():
    frame = bytearray(lz4frame.compress(DATA))
    frame[6] ^= 0xFF
    with pytest.raises(DecompressionError, match="header checksum"):
        lz4frame.decompress(bytes(frame), 1 << 30)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_is_bounded(codec):
    bomb = bytes(8 << 20)  # 8 MiB of zeros compresses to almost nothing
    packed = compression.compress(codec, bomb)
    assert len(packed) < 1 << 20
    with pytest.raises(DecompressionError) as err:
        compression.decompress(codec, packed, limit=1 << 20)
    assert err.value.kind == DECOMPRESSION_LIMIT
    assert compression.decompress(codec, packed, limit=8 << 20) == bomb


def test_zstd_from_reference_library():
    assert (
        compression.decompress(compression.ZSTD, zstandard.ZstdCompressor().compress(DATA)) == DATA
    )


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_is_a_clean_error(codec):
    with pytest.raises(DecompressionError):
        compression.decompress(codec, os.urandom(64) + b"\x00" * 8, limit=1 << 20)


def test_snappy_lying_length_is_refused_before_allocation():
    # a raw snappy block whose varint preamble claims 2 GiB
    lie = b"\x80\x80\x80\x80\x08" + b"\x00" * 10
    with pytest.raises(DecompressionError) as err:
        xerial.decompress(lie, 1 << 20)
    assert err.value.kind == DECOMPRESSION_LIMIT


def test_unknown_codec():
    with pytest.raises(DecompressionError, match="unknown compression"):
        compression.decompress(6, b"x")
    with pytest.raises(ValueError):
        compression.codec_id("brotli")
