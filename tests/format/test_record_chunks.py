"""Records stream out of a batch in bounded lists (issue 13, item 1)."""

from __future__ import annotations

import struct

import pytest

import kseg
from kseg.fixtures.bombs import bomb_batch
from kseg.format import batch as v2
from kseg.format.crc import crc32c
from kseg.format.log import iter_entries
from kseg.format.varint import read_varint


def _batch(n: int, codec: int = 0) -> bytes:
    recs = [kseg.Record(b"k%d" % i, b"v" * (i % 7), 1000 + i, [], i) for i in range(n)]
    return v2.build_batch(recs, 0, compression_id=codec)


@pytest.mark.parametrize("codec", [0, 1, 4])
def test_chunks_are_bounded_and_add_up_to_the_records(codec):
    (batch,) = iter_entries(_batch(5000, codec))
    chunks = list(batch.record_chunks())
    assert [len(c) for c in chunks] == [1024] * 4 + [904]
    assert [t[4] for c in chunks for t in c] == list(range(5000))
    assert [r.offset for r in batch.records()] == list(range(5000))


def test_a_bad_record_comes_after_the_good_ones_and_keeps_its_partial_list():
    data = bytearray(_batch(1500))
    # the length varint of record 1200: lie that it is 6 bytes long (fields then disagree)
    (batch,) = iter_entries(bytes(data))
    pos = v2.HEADER_SIZE
    for _ in range(1200):
        length, nxt = read_varint(data, pos)
        pos = nxt + length
    data[pos] = 0x0C
    struct.pack_into(">I", data, v2.CRC_POS, crc32c(bytes(data[v2.CRC_COVERAGE_START :])))
    (batch,) = iter_entries(bytes(data))
    chunks = batch.record_chunks()
    assert len(next(chunks)) == 1024
    with pytest.raises(kseg.CorruptionError) as err:
        next(chunks)
    assert err.value.field.startswith("records[1200]")
    assert [t[4] for t in err.value.records] == list(range(1024, 1200))


def test_legacy_wrapper_chunks():
    (entry,) = iter_entries(bomb_batch(records=3000, codec="gzip", magic=1))
    assert entry.records_count == 3000
    assert [len(c) for c in entry.record_chunks()] == [1024, 1024, 952]
