"""Issue 35, items 1-2: one record of millions of headers, a few KB on disk.

Before: one Python object per header; `dump -f json` died with SIGSEGV under a 2 GB address
space (orjson does not check its output allocation: it crashed once memory ran out), `dump`,
`--format-string %h` and `verify --deep` needed 1.9 GB, the JSON path 7.8 GB. Now the
headers are checked without an object each and written in chunks: peak memory (wait4's
ru_maxrss) stays under the run's baseline (the same command on a one-record segment) plus
RECORD_FACTOR times the record's decompressed bytes, whatever the header count, under a
2 GB limit, with exit 0 and nothing on stderr."""

from __future__ import annotations

import importlib.util
import os
import subprocess

import pytest

from kseg.fixtures.bombs import bomb_batch, header_bomb_batch, record_bomb

from .limits import assert_clean_failure_modes, run_with_rss

LIMIT = 2_000_000_000  # the prlimit --as
MIB = 1 << 20
RECORD_FACTOR = 4  # the decompressed batch, the codec's copy while it is made, the output buffer
SLACK = 24 * MIB

# (name, codec, header count, pairs): the recipes (smaller: each test a few seconds)
# and a record whose headers never repeat two in a row (no run to render once)
BOMBS = {
    "gzip-empty": ("gzip", 4_000_000, ((b"", b""),)),  # 8 MB decompressed
    "zstd-empty": ("zstd", 10_000_000, ((b"", b""),)),  # 20 MB decompressed
    "zstd-mixed": ("zstd", 50_000, ((b"a", None), (b"bb", b"x"), (b"", b"\xff"))),
}
RECORD_BYTES = {"gzip-empty": 8_000_000, "zstd-empty": 20_000_000, "zstd-mixed": 50_000 * 4}

COMMANDS = {
    "json": ["dump", "-f", "json"],
    "text": ["dump"],
    "table": ["dump", "-f", "table"],
    "format-string": ["dump", "--format-string", r"%o %h\n"],
    "search": ["dump", "-f", "json", "--header", "zz=."],
    "verify-deep": ["verify", "--deep"],
}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("header-bombs")
    out = {
        name: record_bomb(root / f"{name}-0", [header_bomb_batch(headers=n, codec=c, pairs=p)])
        for name, (c, n, p) in BOMBS.items()
    }
    out["tiny"] = record_bomb(root / "tiny-0", [bomb_batch(records=1, codec="gzip")])
    for name, log in out.items():
        assert log.stat().st_size < 64 << 10, name  # a few KB on disk
    return out


def run_measured(args, kernel: str, limit: int = LIMIT) -> tuple[subprocess.CompletedProcess, int]:
    """kseg under RLIMIT_AS ``limit``: (the finished process, its peak RSS in bytes from
    wait4, forked from a fresh interpreter: limits.run_with_rss). Stdout is discarded."""
    env = {**os.environ, "KSEG_KERNEL": kernel}
    code, _, err, rss = run_with_rss(*args, env=env, limit=limit, keep_stdout=False, timeout=300)
    return subprocess.CompletedProcess(list(args), code, b"", err), rss


_BASELINE: dict = {}


def baseline(logs, kernel: str, command: str) -> int:
    key = (kernel, command)
    if key not in _BASELINE:
        proc, peak = run_measured([*COMMANDS[command], logs["tiny"]], kernel)
        assert proc.returncode == 0, proc.stderr
        _BASELINE[key] = peak
    return _BASELINE[key]


def _params():
    for kernel in ("python", "rust"):
        for command in COMMANDS:
            for bomb in BOMBS:
                yield pytest.param(kernel, command, bomb, id=f"{kernel}-{command}-{bomb}")


@pytest.mark.parametrize(("kernel", "command", "bomb"), list(_params()))
def test_memory_follows_the_record_not_its_header_count(logs, kernel, command, bomb):
    if kernel == "rust" and importlib.util.find_spec("kseg._kernel") is None:
        pytest.skip("the compiled kernel (kseg._kernel) is not built")
    proc, peak = run_measured([*COMMANDS[command], logs[bomb]], kernel)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stderr == b""
    bound = baseline(logs, kernel, command) + RECORD_FACTOR * RECORD_BYTES[bomb] + SLACK
    assert peak <= bound, f"peak {peak / MIB:.0f} MiB over {bound / MIB:.0f} MiB"


@pytest.mark.parametrize("limit_mib", [90, 110, 130])
@pytest.mark.parametrize("bomb", ["gzip-empty", "zstd-empty"])
def test_out_of_memory_is_one_line(logs, bomb, limit_mib):
    """Under limits around what the record needs: done (0), or one line on stderr and exit 8;
    never a signal (orjson crashed when its allocation failed: it now only ever sees pieces
    of a few KB), never a false finding (zstd's or zlib's own allocation failing was
    "invalid zstd data", exit 4; a codec buffer that could not be mapped was "unreadable")."""
    proc, _peak = run_measured(["dump", "-f", "json", logs[bomb]], "python", limit_mib * MIB)
    assert_clean_failure_modes(proc)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode in (0, 8), (proc.returncode, lines)
    if proc.returncode == 8:
        assert len(lines) == 1 and "out of memory" in lines[0], lines
