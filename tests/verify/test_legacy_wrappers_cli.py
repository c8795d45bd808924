"""Every command agrees on legacy compressed wrappers, on both kernels (KSEG_KERNEL=rust and
python), as Kafka judges them (AbstractLegacyRecordBatch; LogSegment.recover):

- magic-0 messages in a magic-1 wrapper are valid: every command reads them, exit 0;
- a wrapper holding no message, and a zstd wrapper, are invalid data (exit 4, an error with the
  file and the wrapper's byte position) for every command that meets them: dump (also
  --batches-only), verify (plain too: a wrapper's first message is checked; --deep checks them
  all), stats, seek on a path through them. They are NOT truncation points: Kafka's recovery
  checks a legacy wrapper's size and CRC-32 only and keeps them, so verify predicts no
  kafka_recovery action, `--repair` changes nothing (the finding stays, exit 4), and `index
  check` finds the indexes right (Kafka's recovery indexes the wrapper).
"""

from __future__ import annotations

import os
import shutil

import pytest

from kseg import kernel
from kseg.fixtures import recovery
from kseg.fixtures.tree import BASE_TS

from ..helpers import events, run_kseg

KERNELS = (kernel.RUST, kernel.PYTHON)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("wrappers")
    return {w: recovery.legacy_wrapper(root / w, w) for w in recovery.LEGACY_WRAPPERS}


def _run(which: str, *args):
    return run_kseg(*args, env={**os.environ, kernel.ENV: which})


def _errors(out: bytes) -> list[dict]:
    return [
        e
        for e in events(out)
        if e["type"] in ("error", "finding") and e.get("severity", "error") == "error"
    ]


@pytest.mark.parametrize("which", KERNELS)
@pytest.mark.parametrize("shape", ["empty", "zstd"])
def test_an_invalid_wrapper_is_invalid_data_for_every_command(cases, shape, which):
    case = cases[shape]
    pdir, middle = case.partition_dir, case.batches["middle"]
    log, pos = str(middle.segment), middle.position
    for args in (["dump"], ["dump", "--batches-only"], ["verify"], ["verify", "--deep"]):
        proc = _run(which, *args, pdir, "-f", "json")
        assert proc.returncode == 4, (args, proc.stderr)
        (err,) = _errors(proc.stdout)
        assert (err["file"], err["position"], err["kind"]) == (log, pos, "invalid_record"), args
        if args[0] == "verify":
            assert err["repairable"] is False
            assert "Kafka's recovery keeps it" in err["message"]
            # Kafka's recovery changes nothing here: no prediction, no truncation
            assert not [e for e in events(proc.stdout) if e["type"] == "kafka_recovery"]
    proc = _run(which, "stats", pdir)
    assert proc.returncode == 4 and f"byte {pos}" in proc.stderr.decode()
    # seek through it: the wrapper's own offset
    proc = _run(which, "seek", pdir, "--offset", str(middle.last_offset), "-f", "json")
    assert proc.returncode == 4 and f"byte {pos}" in proc.stderr.decode()
    proc = _run(which, "index", "check", pdir, "-f", "json", "--index-interval-bytes", "256")
    assert proc.returncode == 0, proc.stderr
    assert {e["status"] for e in events(proc.stdout) if e["type"] == "index_check"} == {"identical"}


@pytest.mark.parametrize("which", KERNELS)
def test_a_zstd_wrapper_on_a_time_lookup_path_is_invalid_data(cases, which):
    # the wrapper's records carry BASE_TS + 6..9: a lookup for +7 must decompress it
    proc = _run(which, "seek", cases["zstd"].partition_dir, "--time", str(BASE_TS + 7))
    assert proc.returncode == 4
    assert f"byte {cases['zstd'].batches['middle'].position}" in proc.stderr.decode()


@pytest.mark.parametrize("shape", ["empty", "zstd"])
def test_repair_keeps_an_invalid_wrapper_as_kafka_does(cases, shape, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(cases[shape].root, root)
    pdir = root / cases[shape].partition_dir.name
    sizes = {f.name: f.stat().st_size for f in pdir.iterdir()}
    proc = run_kseg("verify", pdir, "--repair", "-f", "json")
    assert proc.returncode == 4, proc.stderr
    assert not [e for e in events(proc.stdout) if e["type"].startswith("repair")]
    assert {f.name: f.stat().st_size for f in pdir.iterdir()} == sizes


@pytest.mark.parametrize("which", KERNELS)
def test_magic0_messages_in_a_magic1_wrapper_are_valid_everywhere(cases, which):
    case = cases["mixed"]
    pdir, middle = case.partition_dir, case.batches["middle"]
    for args in (
        ["dump"],
        ["dump", "--batches-only"],
        ["verify"],
        ["verify", "--deep"],
        ["stats"],
        ["index", "check", "--index-interval-bytes", "256"],
        ["seek", "--offset", str(middle.base_offset)],
        ["seek", "--time", str(BASE_TS + 12)],
    ):
        proc = _run(which, *args, pdir, "-f", "json")
        assert proc.returncode == 0, (args, proc.stderr)
        assert not _errors(proc.stdout), args
    proc = _run(which, "dump", pdir, "-f", "json")
    records = [e for e in events(proc.stdout) if e["type"] == "record"]
    assert [r["offset"] for r in records] == list(range(18))
    inner = [r for r in records if middle.base_offset <= r["offset"] <= middle.last_offset]
    assert {(r["timestamp"], r["timestamp_type"]) for r in inner} == {(-1, "NoTimestampType")}
    stats = events(_run(which, "stats", pdir, "-f", "json").stdout)
    assert [e["records"] for e in stats if e["type"] == "partition_stats"] == [18]
    proc = _run(which, "seek", pdir, "--offset", str(middle.base_offset + 1), "-f", "json")
    (hit,) = [e for e in events(proc.stdout) if e["type"] == "seek_offset"]
    assert hit["position"] == middle.position


@pytest.mark.parametrize("which", KERNELS)
@pytest.mark.parametrize("deep", [False, True])
def test_legacy_messages_carry_no_leader_epoch(tree, which, deep):
    """A legacy message has no partitionLeaderEpoch (Kafka reads -1 and LogSegment.recover
    assigns epochs from v2 batches only): a magic 1 wrapper after v2 batches is never compared
    with leader-epoch-checkpoint, whether verify looks at it closely (--deep, a wrapper) or not."""
    args = ["verify", tree / "skewed-0", "-f", "json"] + (["--deep"] if deep else [])
    proc = _run(which, *args)
    assert proc.returncode == 0, proc.stdout
    assert not [e for e in events(proc.stdout) if e.get("kind") == "leader_epoch_mismatch"]
