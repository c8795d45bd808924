"""Issue 35, items 8 and 10: a segment with a huge sparse tail, and one larger than Kafka can
address (2 GiB: positions are int32). The inputs are a few KB written by kseg's LogWriter, made
huge by ``os.truncate`` (a sparse file: no disk is used)."""

from __future__ import annotations

import os

import pytest

from kseg.fixtures.offsets import write_offsets_partition
from kseg.fixtures.tree import build_orders
from tests.helpers import events

from .limits import run_measured

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
    rc, out, err = _check(run_measured(*args, timeout=60, env=_env(kernel)))
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
    rc, out, err = _check(run_measured("verify", pdir, "-f", "json", env=_env(kernel)))
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
    rc, out, err = _check(run_measured("dump", log, "-f", "json", env=_env(kernel)))
    assert rc == 4
    errors = [e for e in events(out) if e["type"] == "error"]
    assert [e["kind"] for e in errors] == ["zero_filled_tail", "invalid_size"]
    assert errors[1]["position"] == MAX_SEGMENT and errors[1]["file"] == str(log)
    assert sum(e["type"] == "record" for e in events(out)) > 0  # the valid part is dumped
    rc, out, err = _check(run_measured("dump", log, env=_env(kernel)))
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
    rc, out, err = _check(run_measured(*cmd, timeout=60, env=_env(kernel)))
    assert rc == 4, (rc, out[-500:], err[-500:])
    assert ZERO_TAIL in out + err
