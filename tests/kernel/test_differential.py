"""Kernel vs core on every fixture segment, the real broker data and hypothesis-made segments."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.format.batch import build_batch
from kseg.format.crc import crc32c
from kseg.format.errors import CorruptionError
from kseg.format.index_rule import IndexBuilder
from kseg.format.record import Record
from kseg.render.dump_json import record_json_maker

from .diff import check_json, check_raw_walk, core_walk, spliced_walk, v2_positions

LOG_SUFFIXES = (".log", ".checkpoint")


def segments(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in LOG_SUFFIXES)


def check_segment(buf: bytes, name: str, k) -> int:
    """Both paths agree; returns how many (batch, mode) pairs the kernel rendered."""
    assert spliced_walk(buf) == core_walk(buf)
    check_raw_walk(buf, k)
    return check_json(buf, name, k)


def test_fixture_tree(tree, k):
    logs = segments(tree)
    assert len(logs) >= 7
    rendered = sum(check_segment(log.read_bytes(), str(log), k) for log in logs)
    assert rendered >= 100  # the kernel rendered real batches, not only declined


def test_corrupt_tree(corrupt_cases, k):
    stopped = 0
    for case in corrupt_cases:
        for log in segments(case.partition_dir):
            buf = log.read_bytes()
            check_segment(buf, str(log), k)
            _, _, reason = k.walk(buf, 0, len(buf), 1 << 30)
            stopped += reason == 2
    assert stopped >= len(corrupt_cases) // 2  # the cases do reach the "stopped at" path


def test_real_broker_data(real_root, k):
    logs = segments(real_root)
    assert logs, "no segments under shared/real"
    rendered = 0
    for log in logs:
        buf = log.read_bytes()
        check_segment(buf, str(log), k)
    for log in logs[:3]:
        rendered += check_json(log.read_bytes(), str(log), k, modes=("base64",))
    assert rendered > 0


def test_mmap_and_memoryview_are_read_in_place(tree, k):
    import mmap

    rendered = 0
    for log in segments(tree / "orders-0"):
        data = log.read_bytes()
        with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            assert k.walk(mm, 0, len(mm), 1 << 30) == k.walk(data, 0, len(mm), 1 << 30)
            with memoryview(mm) as mv:
                assert k.walk(mv, 0, len(mv), 1 << 30)[1:] == (len(mm), 0)
                for pos in v2_positions(data):
                    lines = k.batch_json(mv, pos, b'"f"', "base64")
                    assert lines == k.batch_json(data, pos, b'"f"', "base64")
                    rendered += lines is not None
    assert rendered > 0


def test_bounds_are_clamped(k):
    buf = build_batch([Record(b"k", b"v", 5, [], 0)], 0)
    for start, end in ((-5, 10**12), (10**12, -1), (3, 2), (0, 0)):
        rows, stop, reason = k.walk(buf, start, end, 10)
        assert 0 <= stop <= len(buf)
    assert k.batch_json(buf, -1, b'"f"', "auto") is None
    assert k.batch_json(buf, len(buf) + 7, b'"f"', "auto") is None
    with pytest.raises(ValueError, match="not compiled"):
        k.batch_json(buf, 0, b'"f"', "json")


def test_index_rule(tree, k):
    """index_add over kernel walk blocks builds the same .index/.timeindex bytes as the core."""
    from kseg.storage import kernel_walk

    for log in segments(tree):
        buf = log.read_bytes()
        base = int(log.name.split(".")[0]) if log.suffix == ".log" else 0
        for interval in (0, 1, 100, 4096):
            core, kern = IndexBuilder(base, interval), IndexBuilder(base, interval)
            try:
                for block in kernel_walk.walk_blocks(buf):
                    kernel_walk.index_add(kern, block)
            except Exception:
                pass
            rows, _ = core_walk(buf)
            for r in rows:
                core.add(r[4], r[5], r[1])
            core.finish()
            kern.finish()
            assert (kern.offset_index, kern.time_index, kern.valid_bytes) == (
                core.offset_index,
                core.time_index,
                core.valid_bytes,
            )


def test_index_rule_out_of_range_goes_to_the_core(k):
    """A relative offset beyond int32 is the core's to handle (it raises struct.error)."""
    from kseg.storage import kernel_walk

    block = kernel_walk.ROW.pack(0, 100, 2, 0, 1 << 40, 5, 1, 0, -1, 1, 0) * 3
    core, kern = IndexBuilder(0, 0), IndexBuilder(0, 0)
    core.add(1 << 40, 5, 100)
    with pytest.raises(Exception) as core_exc:
        core.add(1 << 40, 5, 100)
    kernel_walk.index_add(kern, block[: kernel_walk.ROW.size])
    with pytest.raises(type(core_exc.value)):
        kernel_walk.index_add(kern, block[kernel_walk.ROW.size :])


# --- hypothesis: segments of random records, then lies with their CRCs made right again ------

payloads = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.text(max_size=20).map(str.encode),
    st.sampled_from([b"", b"\x7f", b"a\x00b", b"\t\n\r", b'"\\', b"\xed\xa0\x80", b"\xf0\x80A"]),
)
headers = st.lists(
    st.tuples(st.one_of(st.text(max_size=8), st.binary(max_size=8)), payloads), max_size=3
)
records = st.lists(st.tuples(payloads, payloads, headers, st.integers(-(2**40), 2**40)), max_size=4)
batches = st.lists(
    st.tuples(
        records,
        st.integers(0, 2**40),  # base offset
        st.booleans(),  # LogAppendTime
        st.one_of(st.none(), st.integers(0, 2**31 - 1)),  # producer id -> base sequence
        st.sampled_from([0, 0, 0, 1, 4]),  # codec
    ),
    min_size=1,
    max_size=4,
)


def make_segment(spec) -> bytes:
    out = bytearray()
    for recs, base, log_append, seq, codec in spec:
        rs = [Record(kk, v, ts, list(hs), base + i) for i, (kk, v, hs, ts) in enumerate(recs)]
        out += build_batch(
            rs,
            base,
            compression_id=codec,
            log_append_time=1_700_000_000_000 if log_append else None,
            # a base sequence without a producer id too: records still count from it
            producer_id=-1 if seq is None or seq % 3 == 0 else 7,
            producer_epoch=-1 if seq is None or seq % 3 == 0 else 0,
            base_sequence=-1 if seq is None else seq,
            last_offset=None if rs else base,
        )
    return bytes(out)


def fix_crcs(buf: bytearray) -> None:
    """Recompute the CRC of every v2 batch the sizes still frame, so lies reach the records."""
    pos = 0
    while pos + 61 <= len(buf) and buf[pos + 16] == 2:
        size = int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True) + 12
        if size < 61 or pos + size > len(buf):
            return
        buf[pos + 17 : pos + 21] = crc32c(bytes(buf[pos + 21 : pos + size])).to_bytes(4, "big")
        pos += size


def patched_segment(spec, patches, cut: int | None, fix: bool) -> bytes:
    """``spec``'s segment with ``patches`` written over it (positions wrapped), cut at ``cut``,
    its CRCs recomputed when ``fix`` (so the lies reach the records)."""
    buf = bytearray(make_segment(spec))
    for at, data in patches:
        at %= len(buf)
        buf[at : at + len(data)] = data
    if cut is not None:
        del buf[cut % (len(buf) + 1) :]
    if fix:
        fix_crcs(buf)
    return bytes(buf)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=batches)
def test_fuzz_valid_segments(spec, k):
    buf = make_segment(spec)
    check_segment(buf, "fuzz.log", k)
    assert k.walk(buf, 0, len(buf), 1 << 30)[1:] == (len(buf), 0)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    spec=batches,
    patches=st.lists(
        st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=3)), max_size=4
    ),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    fix=st.booleans(),
)
def test_fuzz_mutated_segments(spec, patches, cut, fix, k):
    check_segment(patched_segment(spec, patches, cut, fix), "fuzz.log", k)


@pytest.mark.parametrize(
    "ts_varint",
    [
        bytes([0xFF] * 9 + [0x7F]),  # 70 bits: the core keeps 64, as Java does
        bytes([0xFE] + [0xFF] * 8 + [0x01]),  # exactly 64 bits
        bytes([0x80] * 9 + [0x02]),  # bit 64 only: 0 after the cut
        bytes([0xFF] * 10 + [0x01]),  # 11 bytes: too long, the core raises
    ],
)
def test_long_varints(ts_varint, k):
    """A 10-byte timestamp delta: the kernel keeps the same 64 bits the core keeps."""
    from kseg.format.batch import iter_record_chunks
    from kseg.format.varint import write_varint

    body = b"\x00" + ts_varint + b"\x00" + b"\x01" + b"\x00" + b"\x00"  # null key, empty value
    rec = bytearray()
    write_varint(rec, len(body))
    data = bytes(rec + body) * 2
    for mode in ("base64", "auto"):
        make = record_json_maker("f", mode)
        try:
            chunks = iter_record_chunks(data, 0, len(data), 2, 10, 1000, None, 5, 0, "CreateTime")
            expected = b"".join(make(t) for chunk in chunks for t in chunk)
        except CorruptionError:
            expected = None
        assert k.records_json(data, 2, 10, 1000, None, 5, b'"f"', mode) == expected
    assert (expected is None) == (len(ts_varint) > 10)  # the case does what it says


def test_shadow_map(tree, k):
    """A buffer read on demand (storage.mapped): the kernel paths make it readable first."""
    from kseg.dump import kernel_json
    from kseg.storage import kernel_walk
    from kseg.storage.mapped import mapped

    log = max(segments(tree / "orders-0"), key=lambda p: p.stat().st_size)
    data = log.read_bytes()
    expected = b"".join(kernel_walk.walk_blocks(data))
    with mapped(log) as buf:
        assert hasattr(buf, "ensure")
        assert b"".join(kernel_walk.walk_blocks(buf)) == expected
    rendered = 0
    for pos in v2_positions(data):
        with mapped(log) as buf:  # fresh: nothing read yet
            lines = kernel_json.batch_json(buf, pos, b'"f"', "base64")
        assert lines == k.batch_json(data, pos, b'"f"', "base64")
        rendered += lines is not None
    assert rendered > 0


@pytest.mark.parametrize("base_timestamp", [(1 << 63) - 1, (1 << 63) - 40, -(1 << 63), 0])
@pytest.mark.parametrize("delta", [1, 63, -64, 300, (1 << 62), -(1 << 62)])
def test_timestamp_sums_wrap_like_java(base_timestamp, delta, k):
    """baseTimestamp + timestampDelta is a Java long sum: both paths wrap it the same way."""
    from kseg.format.batch import iter_record_chunks
    from kseg.format.varint import write_varint

    body = bytearray(b"\x00")
    write_varint(body, delta)
    body += b"\x00" + b"\x01" + b"\x00" + b"\x00"  # offset delta 0, null key, empty value, 0 hdrs
    rec = bytearray()
    write_varint(rec, len(body))
    data = bytes(rec + body)
    (chunk,) = iter_record_chunks(
        data, 0, len(data), 1, 10, base_timestamp, None, 5, 0, "CreateTime"
    )
    wrapped = (base_timestamp + delta + (1 << 63)) % (1 << 64) - (1 << 63)
    assert chunk[0][2] == wrapped
    make = record_json_maker("f", "base64")
    expected = b"".join(make(t) for t in chunk)
    assert k.records_json(data, 1, 10, base_timestamp, None, 5, b'"f"', "base64") == expected
