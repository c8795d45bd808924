"""Issue 13, items 1-2: memory stays bounded on compressed input whatever it claims.

Each bomb is tiny on disk (kseg's writer, then a payload of one minimal record repeated) and
before the fix made the command exceed 1 GiB (MemoryError) or take a minute."""

from __future__ import annotations

import subprocess

import pytest

from kseg.fixtures.bombs import bomb_batch, record_bomb
from kseg.format import compression, scratch
from tests.helpers import events

from .limits import GIB, assert_clean_failure_modes, run_limited


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    root = tmp_path_factory.mktemp("bombs")
    good = bomb_batch(records=1000, codec="gzip")
    bad = bomb_batch(records=40_000_000, codec="gzip")  # 280 MB: over the 256 MiB bound
    return {
        # 8M records (56 MB decompressed) in ~5 KB: 8M tuples were ~1.6 GB of Python objects
        "zstd": record_bomb(root / "zstd-0", records=8_000_000, codec="zstd"),
        "legacy": record_bomb(root / "legacy-0", records=4_000_000, codec="gzip", magic=1),
        "dump": record_bomb(root / "dump-0", records=1_500_000, codec="lz4"),
        "legacy-small": record_bomb(root / "legacy1-0", records=500_000, codec="snappy", magic=1),
        "failing": record_bomb(root / "failing-0", [good] + [bad, good] * 5),
    }


def test_dump_with_limit_streams_the_records_of_a_huge_batch(bombs):
    proc = run_limited("dump", bombs["zstd"], "-f", "json", "--limit", "10", timeout=60)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 0
    evs = events(proc.stdout.decode())
    assert sum(e["type"] == "record" for e in evs) == 10
    assert [e["count"] for e in evs if e["type"] == "batch"] == [8_000_000]


def test_dump_of_every_record_of_a_bomb_stays_under_the_limit(bombs):
    proc = run_limited(
        "dump", bombs["dump"], "-f", "json", "--payload", "none", stdout=subprocess.DEVNULL
    )
    assert_clean_failure_modes(proc)
    assert proc.returncode == 0


def test_verify_deep_streams_and_reports(bombs):
    proc = run_limited("verify", "--deep", bombs["zstd"], "-f", "json", timeout=60)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 4
    found = [e for e in events(proc.stdout.decode()) if e["type"] == "finding"]
    assert any("does not increase" in f["message"] and f["position"] == 0 for f in found), found


def test_batches_only_never_decompresses_a_legacy_wrapper(bombs):
    proc = run_limited("dump", "--batches-only", bombs["legacy"], "-f", "json", timeout=20)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 0
    (batch,) = [e for e in events(proc.stdout.decode()) if e["type"] == "batch"]
    assert batch["magic"] == 1 and batch["base_offset"] is None and batch["count"] is None


def test_legacy_wrapper_records_stream(bombs):
    proc = run_limited("dump", bombs["legacy-small"], "-f", "json", "--limit", "3", timeout=60)
    assert_clean_failure_modes(proc)
    evs = events(proc.stdout.decode())
    assert [e["count"] for e in evs if e["type"] == "batch"] == [500_000]
    assert sum(e["type"] == "record" for e in evs) == 3


def test_failing_batches_do_not_accumulate_memory(bombs):
    """Batches over the decompression bound between good ones: each is one positioned
    decompression_limit error, the good ones decode, and nothing is falsely reported as
    decompression_failed (which happened when the failed ones' buffers piled up)."""
    proc = run_limited("dump", bombs["failing"], "-f", "json", "--payload", "none", timeout=120)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 4
    evs = events(proc.stdout.decode())
    errors = [e for e in evs if e["type"] == "error"]
    assert [e["kind"] for e in errors] == ["decompression_limit"] * 5
    batches = [e for e in evs if e["type"] == "batch"]
    assert [e["position"] for e in errors] == [b["position"] for b in batches[1::2]]
    assert sum(e["type"] == "record" for e in evs) == 6 * 1000


def test_a_count_the_bytes_cannot_hold_is_refused_before_decoding(tmp_path):
    log = record_bomb(tmp_path / "lie-0", records=10, codec="zstd", count=2_000_000_000)
    proc = run_limited("dump", log, "-f", "json", timeout=20)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 4
    (err,) = [e for e in events(proc.stdout.decode()) if e["type"] == "error"]
    assert err["position"] == 0 and "declares 2000000000 records" in err["message"]


def test_scratch_buffer_shrinks_back_after_a_large_batch():
    big = compression.compress(compression.ZSTD, bytes(64 << 20))
    assert len(compression.decompress(compression.ZSTD, big)) == 64 << 20
    assert scratch.kept_bytes() <= scratch.KEEP_BYTES
    small = compression.compress(compression.ZSTD, b"x" * 1000)
    assert compression.decompress(compression.ZSTD, small) == b"x" * 1000
    assert scratch.kept_bytes() <= scratch.KEEP_BYTES


def test_limit_helper_really_limits():
    """The limit is real: a child that allocates 2 GiB under it fails (so the tests above could)."""
    import resource
    import sys

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))

    proc = subprocess.run(
        [sys.executable, "-c", "b = bytearray(2 << 30)"], capture_output=True, preexec_fn=cap
    )
    assert proc.returncode != 0 and b"MemoryError" in proc.stderr
