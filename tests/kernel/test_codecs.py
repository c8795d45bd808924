"""The kernel's codecs (kernel/src/codecs.rs) against the core's (kseg.format.compression):
on every framing Kafka writes the same bytes; on truncated, corrupt and over-limit payloads the
kernel declines (None) and the core, which the Spark decoder then calls, raises its error. The
one rule: whenever the kernel gives bytes, the core gives the same bytes without an error."""

from __future__ import annotations

import gzip
import io
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kseg
from kseg.format import compression as codecs
from kseg.format.errors import DECOMPRESSION_LIMIT, DecompressionError

from .test_differential import fix_crcs

LIMIT = codecs.DEFAULT_MAX_DECOMPRESSED
CODECS = (codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD)


def core(cid: int, data: bytes, limit: int = LIMIT):
    """The core's bytes, or its error as (kind, message)."""
    try:
        return codecs.decompress(cid, data, limit)
    except DecompressionError as exc:
        return (exc.kind, exc.message)


def check(k, cid: int, data: bytes, limit: int = LIMIT):
    """The kernel's answer (bytes or None), after checking it against the core's."""
    got = k.decompress(cid, data, limit)
    if got is not None:
        assert core(cid, data, limit) == got, (cid, data[:40])
    return got


def payloads() -> list[bytes]:
    rng = random.Random(33)
    text = b"".join(b"record-%d,value=%s;" % (i, b"x" * (i % 40)) for i in range(6000))
    noise = bytes(rng.getrandbits(8) for _ in range(70_000))
    return [b"", b"a", text[:1000], text, noise, noise[:100] + text + noise[:5000]]


def framings(data: bytes) -> list[tuple[int, bytes, str]]:
    """Every framing of ``data`` the core reads, as Kafka's clients write them."""
    import cramjam

    z = cramjam.zstd.Compressor()
    z.compress(data)
    streamed = bytes(z.finish())
    member = codecs.compress(codecs.GZIP, data)
    named = io.BytesIO()
    with gzip.GzipFile(filename="a.txt", mode="wb", fileobj=named, mtime=0) as g:
        g.write(data)
    return [
        (codecs.GZIP, member, "gzip"),
        (codecs.GZIP, member + member + b"\x00" * 8, "gzip members, trailing zeros"),
        (codecs.GZIP, named.getvalue(), "gzip with a file name"),
        (codecs.SNAPPY, codecs.compress(codecs.SNAPPY, data), "xerial snappy"),
        (codecs.SNAPPY, codecs.compress(codecs.SNAPPY, data, xerial_snappy=False), "raw snappy"),
        (codecs.LZ4, codecs.compress(codecs.LZ4, data), "lz4 frame"),
        (codecs.LZ4, codecs.compress(codecs.LZ4, data, magic=0), "lz4, KAFKA-3160 checksum"),
        (codecs.LZ4, codecs.compress(codecs.LZ4, data) * 2, "two lz4 frames"),
        (codecs.ZSTD, codecs.compress(codecs.ZSTD, data), "zstd with content size"),
        (codecs.ZSTD, streamed, "zstd streamed, no content size"),
        (codecs.ZSTD, streamed + codecs.compress(codecs.ZSTD, data), "two zstd frames"),
    ]


def test_every_framing_gives_the_core_bytes(k):
    for data in payloads():
        for cid, comp, what in framings(data):
            got = check(k, cid, comp)
            if data or cid != codecs.ZSTD:
                assert got == data * (2 if "two" in what or "members" in what else 1), what


def test_truncated_and_corrupt_payloads_are_the_core_s(k):
    """Every cut and thousands of byte flips: the kernel never gives what the core refuses."""
    rng = random.Random(7)
    declined = 0
    for data in payloads()[2:4]:
        for cid, comp, _what in framings(data):
            for cut in sorted({*rng.sample(range(len(comp)), min(len(comp), 40)), 1, 7}):
                declined += check(k, cid, comp[:cut]) is None
            for _ in range(60):
                bad = bytearray(comp)
                for _ in range(rng.choice((1, 1, 2, 8))):
                    bad[rng.randrange(len(bad))] = rng.getrandbits(8)
                check(k, cid, bytes(bad))
    assert declined > 100


def test_bombs_stop_at_the_core_s_limit(k):
    """Over the limit the kernel declines and the core says why; at the limit both decode."""
    data = b"\x00" * 300_000
    for cid, comp, what in framings(data):
        n = len(data) * (2 if "two" in what or "members" in what else 1)
        assert check(k, cid, comp, n) is not None, what
        assert k.decompress(cid, comp, n - 1) is None, what
        err = core(cid, comp, n - 1)
        assert err[0] == DECOMPRESSION_LIMIT, (what, err)


def test_other_ids_and_zlib_wrapped_gzip_are_the_core_s(k):
    import zlib

    assert k.decompress(0, b"abc", LIMIT) is None
    assert k.decompress(5, b"abc", LIMIT) is None
    wrapped = zlib.compress(b"hello" * 100)  # the core's wbits 47 takes zlib's header too
    assert k.decompress(codecs.GZIP, wrapped, LIMIT) is None
    assert codecs.decompress(codecs.GZIP, wrapped) == b"hello" * 100


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cid=st.sampled_from(CODECS), data=st.binary(max_size=300))
def test_random_payloads(cid, data, k):
    check(k, cid, data)


# --- in the Spark decoder ----------------------------------------------------------------------


def compressed_segment(tmp_path, codec: str):
    pdir = tmp_path / f"{codec}-0"
    with kseg.LogWriter(pdir, compression=codec, clock=lambda: 1_700_000_000_000) as w:
        for i in range(6):
            w.append(
                [
                    kseg.Record(b"k%d" % j, b"value %d " % j * (j + 1), None, [("h", b"x")])
                    for j in range(20 + i)
                ]
            )
    return next(pdir.glob("*.log"))


def batch_positions(buf: bytes) -> list[tuple[int, int]]:
    from kseg.format.log import walk_headers

    return [(r[0], r[1]) for r in walk_headers(buf)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_spark_decoder_decompresses_in_the_kernel(tmp_path, codec, k, monkeypatch):
    """The kernel's walk takes compressed batches whole (no stop for the core's codecs); with
    KERNEL_CODECS off it stops at each; both give the Python decoder's table."""
    from kseg.spark import kernel_arrow
    from kseg.spark.planning import Task

    from .diff import ARROW_OPTIONS, check_arrow

    log = compressed_segment(tmp_path, codec)
    buf = log.read_bytes()
    names = [codecs.codec_name(c).encode() for c in range(8)]
    args = (False, False, False, None, None, None, None, 0, -(1 << 62), 1 << 62, names)
    rec = k.Records(*args, LIMIT)
    assert rec.walk(buf, 0, len(buf), 1 << 20) == (len(buf), 0)
    assert rec.rows == sum(20 + i for i in range(6))
    assert k.Records(*args).walk(buf, 0, len(buf), 1 << 20) == (0, 3)
    task = Task(str(log), "t", 0, 0, 0, len(buf))
    assert check_arrow(task, ARROW_OPTIONS) > 0
    monkeypatch.setattr(kernel_arrow, "KERNEL_CODECS", False)
    assert check_arrow(task, ARROW_OPTIONS[:2]) > 0


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_spark_decoder_corrupt_payloads_warn_as_the_core(tmp_path, codec, k):
    """A payload cut or flipped (its CRC made right again): the same warnings and rows as the
    Python decoder, which reports the core's decompression error."""
    from kseg.spark.planning import Task

    from .diff import arrow_run, check_arrow

    log = compressed_segment(tmp_path, codec)
    good = log.read_bytes()
    rng = random.Random(codec)
    warned = 0
    for pos, size in batch_positions(good)[1:4]:
        for _ in range(4):
            buf = bytearray(good)
            at = pos + 61 + rng.randrange(size - 61)
            buf[at] ^= 1 << rng.randrange(8)
            fix_crcs(buf)
            bad = tmp_path / f"bad-{codec}-0" / "00000000000000000000.log"
            bad.parent.mkdir(exist_ok=True)
            bad.write_bytes(bytes(buf))
            task = Task(str(bad), "t", 0, 0, 0, len(buf))
            check_arrow(task, ({},))
            warned += bool(arrow_run(task, "rust")[1])
    assert warned > 0


def test_spark_decoder_bomb_goes_to_the_core(tmp_path, k, monkeypatch):
    """A batch over the kernel's limit is decoded by the core (here with its own, larger
    default): the same table; the kernel never holds more than the limit."""
    from kseg.spark.planning import Task

    from .diff import check_arrow

    log = compressed_segment(tmp_path, "zstd")
    monkeypatch.setattr(codecs, "DEFAULT_MAX_DECOMPRESSED", 100)
    task = Task(str(log), "t", 0, 0, 0, log.stat().st_size)
    check_arrow(task, ({},))
