"""Issue 13, items 5 and 12 (part): a full disk on stdout, numbers beyond 64 bits, index
positions that point nowhere, negative sizes, and a closed pipe that must not hide corruption."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from kseg.format.offset_index import ENTRY as INDEX_ENTRY
from tests.helpers import events, kseg_command, run_kseg

from .limits import assert_clean_failure_modes


@pytest.mark.parametrize(
    "args",
    [
        ("dump", "-f", "json"),
        ("dump",),
        ("verify", "-f", "json"),
        ("seek", "--time", "0"),
        ("index", "check"),
    ],
    ids=" ".join,
)
def test_a_full_disk_on_stdout_is_one_line_and_exit_8(tree, args):
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [*kseg_command(), *args, str(tree / "orders-0")],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert proc.returncode == 8
    assert proc.stderr == b"kseg: cannot write output: No space left on device\n"


@pytest.mark.parametrize("args", [("dump",), ("dump", "-f", "json"), ("verify",)], ids=" ".join)
def test_a_full_disk_after_corruption_ors_4_and_8(tree, tmp_path, args):
    """README: every command ORs what it met; a full stdout used to drop the 4 already found."""
    pdir = _copy(tree, tmp_path) / "orders-0"
    log = sorted(pdir.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    # a CRC failure in the first batch, met before the first write to stdout (the compiled
    # kernel writes the lines of a run of valid batches to descriptor 1 as soon as it has them)
    data[70] ^= 0x40
    log.write_bytes(bytes(data))
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [*kseg_command(), *args, str(pdir)], stdout=full, stderr=subprocess.PIPE, timeout=60
        )
    assert proc.returncode == 12, proc.stderr
    assert proc.stderr.endswith(b"kseg: cannot write output: No space left on device\n")


def _copy(tree, tmp_path, name: str = "orders-0"):
    root = tmp_path / "logs"
    root.mkdir()
    shutil.copytree(tree / name, root / name)
    return root


def test_a_checkpoint_number_beyond_64_bits_is_a_positioned_error(tree, tmp_path):
    root = _copy(tree, tmp_path)
    ckpt = root / "recovery-point-offset-checkpoint"
    ckpt.write_bytes(b"0\n1\norders 0 99999999999999999999\n")
    proc = run_kseg("dump", root, "-f", "json", "--batches-only")
    assert_clean_failure_modes(proc)
    assert proc.returncode == 4
    (err,) = [e for e in events(proc.stdout.decode()) if e["type"] == "error"]
    assert err["file"] == str(ckpt) and err["position"] == 4
    assert "outside the 64-bit range" in err["message"]
    proc = run_kseg("verify", root, "-f", "json")
    assert_clean_failure_modes(proc)
    found = [e for e in events(proc.stdout.decode()) if e["type"] == "finding"]
    assert any(f["file"] == str(ckpt) and "64-bit" in f["message"] for f in found)


@pytest.mark.parametrize("value", ["99999999999999999999", "-99999999999999999999"])
def test_seek_time_beyond_64_bits_is_a_usage_error(tree, value):
    proc = run_kseg("seek", tree / "orders-0", "--time", value)
    assert proc.returncode == 16 and b"64-bit" in proc.stderr and b"Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("dump", "--limit", "-1"),
        ("dump", "--max-bytes", "-5"),
        ("dump", "--partition", "-1"),
        ("index", "rebuild", "--dry-run", "--segment-index-bytes", "-1"),
    ],
    ids=" ".join,
)
def test_negative_sizes_are_usage_errors(tree, args):
    proc = run_kseg(*args, tree / "orders-0")
    assert proc.returncode == 16, proc.stderr
    assert b"is not in the range x>=0" in proc.stderr


def _point_last_index_entry_at(pdir, position: int):
    index = sorted(pdir.glob("*.index"))[1]  # an inactive segment with several entries
    data = bytearray(index.read_bytes())
    n = len(data.rstrip(b"\x00")) // INDEX_ENTRY.size
    rel, _ = INDEX_ENTRY.unpack_from(data, (n - 1) * INDEX_ENTRY.size)
    struct.pack_into(">i", data, (n - 1) * INDEX_ENTRY.size + 4, position)
    index.write_bytes(bytes(data))
    base = int(index.name[:20])
    return index, base + rel


@pytest.mark.parametrize("where", ["past-the-end", "mid-batch"])
def test_an_index_pointing_nowhere_falls_back_to_a_scan(tree, tmp_path, where):
    root = _copy(tree, tmp_path)
    pdir = root / "orders-0"
    clean = run_kseg("seek", pdir, "--offset", "0", "-f", "json")  # nothing patched yet
    assert clean.returncode == 0
    log_size = sorted(pdir.glob("*.log"))[1].stat().st_size
    # past the end, or 14 bytes before it: inside the last batch
    index, offset = _point_last_index_entry_at(
        pdir, 10**9 if where == "past-the-end" else log_size - 14
    )
    want = run_kseg("dump", pdir, "-f", "json", "--payload", "none")
    records = {e["offset"]: e for e in events(want.stdout.decode()) if e["type"] == "record"}
    assert offset in records

    # the entry is invalid data (exit 4, the index file and the entry's byte named), and the
    # answer is still right: the segment is scanned from its start instead
    proc = run_kseg("seek", pdir, "--offset", offset, "-f", "json")
    assert_clean_failure_modes(proc)
    assert proc.returncode == 4, proc.stderr
    (ev,) = events(proc.stdout.decode())
    assert ev["status"] == "found" and ev["offset"] == offset
    assert f"kseg: {index}: byte ".encode() in proc.stderr
    assert b"the lookup scans the segment from its start instead" in proc.stderr

    ts = records[offset]["timestamp"]
    proc = run_kseg("seek", pdir, "--time", ts, "-f", "json")
    assert_clean_failure_modes(proc)
    assert events(proc.stdout.decode())[0]["offset"] <= offset
    assert proc.returncode in (0, 4)  # 4 exactly when the lookup met the entry, and named it
    assert (proc.returncode == 4) == (str(index).encode() in proc.stderr), proc.stderr

    for sel in (("--from-offset", offset), ("--from-time", ts)):
        proc = run_kseg("dump", pdir, *sel, "--limit", "1", "-f", "json", "--payload", "none")
        assert_clean_failure_modes(proc)
        evs = events(proc.stdout.decode())
        recs = [e for e in evs if e["type"] == "record"]
        assert recs and recs[0]["offset"] <= offset, evs


def test_a_closed_pipe_keeps_the_exit_code_of_what_was_found(corrupt_cases):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    proc = subprocess.Popen(
        [*kseg_command(), "dump", str(case.partition_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    err = proc.stderr.read()
    rc = proc.wait(timeout=60)
    assert first and rc == 4, (rc, err)
    assert b"Traceback" not in err
