"""Issue 35, item 1: the compiled kernel never aborts the process, whatever a record holds.

A zstd batch of ~1 KB whose one record holds millions of empty headers: the kernel's list of
headers (32 bytes each) and its whole JSON line in memory made it die with SIGABRT ("memory
allocation ... failed", exit 134) under an address-space limit. Now nothing in the kernel is
sized by a count on disk, every allocation the input sizes is fallible, and a line longer than a
part goes out a part at a time."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from kseg.fixtures.bombs import header_bomb_batch, record_bomb
from tests.kernel.diff import kernel_built

from .limits import assert_clean_failure_modes, run_measured

MIB = 1 << 20
HEADERS = 8_000_000  # 16 MB decompressed, ~1 KB on disk; its JSON line: 120 MB
LIMIT = 512 * MIB  # RLIMIT_AS: the kernel before the fix died with SIGABRT under it
RSS_BOUND = 160 * MIB  # measured: 59 MB with the kernel (the line goes out in 4 MiB parts), 60 MB
# with the core (its headers past 64 a view, rendered in chunks)

needs_kernel = pytest.mark.skipif(not kernel_built(), reason="the compiled kernel is not built")


def env_for(choice: str) -> dict:
    return {**os.environ, "KSEG_KERNEL": choice}


def expected_record_line(tmp_path, n: int) -> tuple[int, str]:
    """(length, sha256) of the record line `dump -f json` prints for the bomb's record with
    ``n`` empty headers: the core's line for the same record with 2 headers (same relative
    path), its header lists stretched to ``n``."""
    root = tmp_path / "small"
    record_bomb(root / "t-0", [header_bomb_batch(headers=2)])
    proc = subprocess.run(
        [sys.executable, "-m", "kseg", "dump", "t-0", "-f", "json"],
        capture_output=True,
        cwd=root,
        env=env_for("python"),
        check=True,
    )
    (line,) = [
        x for x in proc.stdout.splitlines(keepends=True) if x.startswith(b'{"type":"record"')
    ]
    head, rest = line.split(b'"headers":[["",""],["",""]],', 1)
    assert rest == b'"header_encodings":["utf8","utf8"]}\n', rest
    digest, size = hashlib.sha256(), 0

    def add(part: bytes) -> None:
        nonlocal size
        digest.update(part)
        size += len(part)

    add(head + b'"headers":[')
    for item, sep in ((b'["",""]', b","), (b'"utf8"', b",")):
        block = (item + sep) * 100_000
        left = n
        while left > 1:
            take = min(left - 1, 100_000)
            add(block[: take * (len(item) + 1)])
            left -= take
        add(item)
        if item.startswith(b"["):
            add(b'],"header_encodings":[')
    add(b"]}\n")
    return size, digest.hexdigest()


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    root = tmp_path_factory.mktemp("headers")
    record_bomb(root / "t-0", [header_bomb_batch(headers=HEADERS)])
    assert (root / "t-0" / "00000000000000000000.log").stat().st_size < 4096
    return root


@pytest.mark.parametrize("choice", [pytest.param("rust", marks=needs_kernel), "python"])
def test_dump_json_of_a_record_with_millions_of_headers(bomb, tmp_path, choice):
    got = run_measured(
        "dump", "t-0", "-f", "json", limit=LIMIT, env=env_for(choice), cwd=bomb, timeout=60
    )
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stderr == b""
    assert got.max_rss < RSS_BOUND, got.max_rss
    kinds = [json.loads(line)["type"] for line in got.lines]
    assert kinds == ["file", "batch", "file", "leader_epoch"], kinds  # + the checkpoint
    assert got.long_lines == [expected_record_line(tmp_path, HEADERS)]


@pytest.mark.parametrize("choice", [pytest.param("rust", marks=needs_kernel), "python"])
def test_both_kernels_print_the_same_long_record_line(bomb, tmp_path, choice):
    """100k empty headers: a line the kernel writes a header at a time (its bound is over a
    part) and the core can still print; both print the same bytes."""
    root = tmp_path / "mid"
    record_bomb(root / "t-0", [header_bomb_batch(headers=100_000)])
    got = run_measured("dump", "t-0", "-f", "json", env=env_for(choice), cwd=root, timeout=60)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stderr == b""
    assert got.long_lines == [expected_record_line(tmp_path, 100_000)]  # a 1.5 MB line


KERNEL_CALLS = r"""
import json, sys
from kseg import _kernel as k
from kseg.fixtures.bombs import header_bomb_batch
from kseg.format import compression
from kseg.format.batch import HEADER_SIZE

batch = header_bomb_batch(headers=int(sys.argv[1]))
data = compression.decompress(compression.ZSTD, batch[HEADER_SIZE:], 1 << 30)
seen = {}
lines = k.JsonRecords(b'"f"', "auto", None, None, None, None)
start, done, step, hpos, validated, total, parts = 0, 0, 0, 0, False, 0, 0
while start >= 0:
    text, start, done, emitted, lo, hi, step, hpos = lines.render(
        data, start, len(data), 1, 0, 0, None, -1, done, validated, None, 4 << 20, step, hpos)
    validated, total, parts = True, total + len(text), parts + 1
seen["render"] = [total, parts]
seen["records_json"] = k.records_json(data, 1, 0, 0, None, -1, b'"f"', "auto")
names = [b"none", b"gzip", b"snappy", b"lz4", b"zstd", b"", b"", b""]
rec = k.Records(True, True, False, None, None, None, None, 0, -(1 << 40), 1 << 45, names)
seen["walk"] = rec.walk(batch, 0, len(batch), 1000)
seen["arrow"] = [rec.decompressed(batch, 0, data), rec.rows]
print(json.dumps(seen))
"""


@needs_kernel
def test_the_kernel_functions_never_abort():
    """Each kernel entry point on the records of 8M empty headers (16 MB) under a 512 MiB
    address-space limit: the JSON renderer writes the 120 MB line in 4 MiB parts, the whole-batch
    renderer leaves it to the core, the Arrow decoder takes it (or, without room, leaves it to
    the Python decoder): before, each of them died with SIGABRT."""

    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    proc = subprocess.run(
        [sys.executable, "-c", KERNEL_CALLS, str(HEADERS)],
        capture_output=True,
        preexec_fn=cap,
        timeout=120,
        env=env_for("rust"),
    )
    assert_clean_failure_modes(proc)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout)
    assert seen["render"][0] == 15 * HEADERS + 227 and seen["render"][1] > 25
    assert seen["records_json"] is None
    assert seen["walk"] == [0, 3]  # compressed: its records come decompressed
    assert seen["arrow"] in ([True, 1], [False, 0])
