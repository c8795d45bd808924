"""Issue 35, items 8 and 10: a segment with a huge sparse tail, and one larger than Kafka can
address (2 GiB: positions are int32). The inputs are a few KB written by kseg's LogWriter, made
huge by ``os.truncate`` (a sparse file: no disk is used)."""

from __future__ import annotations

import os

import pytest

from kseg.fixtures.offsets import write_offsets_partition
from kseg.fixtures.tree import build_orders
from tests.helpers import events

from .limits import run_with_rss

MIB = 1 << 20
MAX_SEGMENT = (1 << 31) - 1
KERNELS = ("rust", "python")
ZERO_TAIL = "zero bytes from here to the end (zero-filled tail)"
RSS_BOUND = 200 * MIB  # the files are 100 GB and 3 GiB


def _env(kernel: str) -> dict:
    return dict(os.environ, KSEG_KERNEL=kernel)


def _last_log(pdir):
    return sorted(pdir.glob("*.log"))[-1]


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """orders-1 whose last segment gets a 100 GB sparse tail; a __consumer_offsets partition
    with the same; orders-2 whose last segment is a 3 GiB sparse file."""
    root = tmp_path_factory.mktemp("sparse")
    tail = root / "tail"
    build_orders(tail / "orders-1", preallocate=False, seed=1)
    write_offsets_partition(tail / "__consumer_offsets-0")
    big = root / "big"
    build_orders(big / "orders-2", preallocate=False, seed=2)
    valid = {}
    for pdir, size in (
        (tail / "orders-1", 100 << 30),
        (tail / "__consumer_offsets-0", 100 << 30),
        (big / "orders-2", 3 << 30),
    ):
        log = _last_log(pdir)
        valid[pdir.name] = log.stat().st_size
        os.truncate(log, size)
    return {"tail": tail, "big": big, "valid": valid}


def _check(proc, bound: int = RSS_BOUND) -> tuple[int, str, str]:
    rc, out, err, rss = proc
    assert rc >= 0, f"killed by signal {-rc}"
    text = err.decode(errors="replace")
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    assert rss < bound, f"peak RSS {rss >> 20} MiB"
    return rc, out.decode(errors="replace"), text


TAIL_COMMANDS = {
    "dump": ("dump", "{p}", "-f", "json"),
    "index-check": ("index", "check", "{p}"),
    "offsets": ("offsets", "{p}", "--list"),
    "seek": ("seek", "{p}", "--offset", "10"),
    "stats": ("stats", "{p}"),
    "verify": ("verify", "{p}"),
}


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("command", sorted(TAIL_COMMANDS))
def test_a_sparse_100g_tail_stops_at_the_zeros(sparse, command, kernel):
    """dump, index check, offsets (and seek, stats, verify) stop at the zero run after the
    valid part at once: the zero-tail rule skips a sparse file's holes (lseek SEEK_DATA)."""
    name = "__consumer_offsets-0" if command == "offsets" else "orders-1"
    p = sparse["tail"] / name
    args = [a.format(p=p) for a in TAIL_COMMANDS[command]]
    rc, out, err = _check(run_with_rss(*args, timeout=60, env=_env(kernel)))
    assert rc == 4, (rc, out[-500:], err[-500:])
    assert ZERO_TAIL in out + err
    at = sparse["valid"][name]
    assert f"byte {at}" in out + err or f'"position":{at}' in out


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_segment_over_2_gib_is_a_finding_at_the_int32_limit(sparse, kernel):
    """verify: one invalid_size finding naming the file at byte 2**31-1; the part Kafka could
    address is read (its zero tail found); memory stays small."""
    pdir = sparse["big"] / "orders-2"
    log = _last_log(pdir)
    rc, out, err = _check(run_with_rss("verify", pdir, "-f", "json", env=_env(kernel)))
    assert rc == 4
    found = [e for e in events(out) if e["type"] == "finding" and e["severity"] == "error"]
    big = [f for f in found if f["kind"] == "invalid_size"]
    assert [(f["file"], f["position"]) for f in big] == [(str(log), MAX_SEGMENT)]
    assert f"segment of {3 << 30} bytes: positions stop fitting Kafka's int32" in big[0]["message"]
    tail = [f for f in found if f["kind"] == "zero_filled_tail"]
    assert [f["position"] for f in tail] == [sparse["valid"]["orders-2"]]


@pytest.mark.parametrize("kernel", KERNELS)
def test_dump_of_a_segment_over_2_gib_says_so_in_one_error(sparse, kernel):
    log = _last_log(sparse["big"] / "orders-2")
    rc, out, err = _check(run_with_rss("dump", log, "-f", "json", env=_env(kernel)))
    assert rc == 4
    errors = [e for e in events(out) if e["type"] == "error"]
    assert [e["kind"] for e in errors] == ["zero_filled_tail", "invalid_size"]
    assert errors[1]["position"] == MAX_SEGMENT and errors[1]["file"] == str(log)
    assert sum(e["type"] == "record" for e in events(out)) > 0  # the valid part is dumped
    rc, out, err = _check(run_with_rss("dump", log, env=_env(kernel)))
    assert rc == 4
    assert err.count(f"{log} at byte {MAX_SEGMENT}") == 1, err


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(
    "args",
    [
        ("index", "check"),
        ("index", "rebuild", "--dry-run"),
        ("stats",),
        ("seek", "--offset", "10"),
        ("verify", "--deep"),
    ],
    ids=lambda a: "-".join(a),
)
def test_every_command_reads_the_addressable_part_of_a_segment_over_2_gib(sparse, args, kernel):
    pdir = sparse["big"] / "orders-2"
    cmd = [*args[:2], pdir, *args[2:]] if args[0] == "index" else [args[0], pdir, *args[1:]]
    rc, out, err = _check(run_with_rss(*cmd, timeout=60, env=_env(kernel)))
    assert rc == 4, (rc, out[-500:], err[-500:])
    assert ZERO_TAIL in out + err


def _batches_past_2_gib(pdir):
    """A segment Kafka never writes: a v2 batch whose records run, through a sparse hole of
    zeros, past byte 2**31-1 (its batch_length grown and its CRC computed again, as
    kseg.fixtures.corrupt does), then another batch: a concatenated or damaged file. Before
    the int32 bound, the index entry due for that last batch (its position past 2**31-1) was an
    internal error, "'i' format requires -2147483648 <= number <= 2147483647"."""
    import struct

    from kseg.format import batch as v2
    from kseg.format.crc import crc32c
    from kseg.format.record import Record
    from kseg.storage.writer import LogWriter

    scratch = pdir.with_name(pdir.name + "-scratch")
    with LogWriter(scratch, clock=lambda: 1_700_000_000_000) as w:
        infos = [w.append([Record(b"k", b"v" * 100, 1_700_000_000_000 + i)]) for i in range(3)]
    raw = _last_log(scratch).read_bytes()
    (a, b, c) = (raw[i.position : i.position + i.size] for i in infos)
    pdir.mkdir()
    log = pdir / "00000000000000000000.log"
    at = len(a)  # the grown batch's position
    length = MAX_SEGMENT - 64  # batch_length is an int32: it ends past 2**31-1 all the same
    assert at + v2.LOG_OVERHEAD + length > MAX_SEGMENT
    grown = bytearray(b)
    struct.pack_into(">i", grown, v2.FIELD_POS["batch_length"], length)
    crc = crc32c(bytes(grown[v2.CRC_COVERAGE_START :]))
    zeros = bytes(16 << 20)
    left = length + v2.LOG_OVERHEAD - len(grown)
    from kseg.format.crc import _crc32c

    while left:
        n = min(left, len(zeros))
        crc = _crc32c(zeros[:n], crc)
        left -= n
    struct.pack_into(">I", grown, v2.CRC_POS, crc)
    with open(log, "wb") as f:
        f.write(a + grown)
        f.seek(at + length + v2.LOG_OVERHEAD)  # a hole, then the last batch
        f.write(c)
    return log, at


@pytest.mark.parametrize("kernel", KERNELS)
def test_batches_past_2_gib_are_not_read_and_no_internal_error(tmp_path, kernel):
    log, at = _batches_past_2_gib(tmp_path / "orders-3")
    rc, out, err = _check(run_with_rss("verify", log.parent, "-f", "json", env=_env(kernel)))
    assert rc == 4
    found = [(e["kind"], e["position"]) for e in events(out) if e["type"] == "finding"]
    # the batch that runs past the addressable part is cut there, as a torn tail
    assert ("torn_tail", at) in found and ("invalid_size", MAX_SEGMENT) in found, found
    rc, out, err = _check(run_with_rss("index", "rebuild", "--dry-run", log, env=_env(kernel)))
    assert rc == 4 and "torn_tail" in out + err
