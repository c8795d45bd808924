"""Issue 13, item 4: a FIFO (or device) named like a segment file is never opened for reading:
every command names it and exits 8 instead of hanging (dump used to skip it silently)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.helpers import run_kseg

from .limits import assert_clean_failure_modes


@pytest.fixture
def fifo_partition(tree, tmp_path):
    pdir = tmp_path / "orders-0"
    shutil.copytree(tree / "orders-0", pdir)
    return pdir


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("00000000000000099999.log", ("dump",)),
        ("00000000000000099999.log", ("dump", "--batches-only", "-f", "json")),
        ("00000000000000099999.log", ("verify",)),
        ("00000000000000099999.log", ("index", "check")),
        ("00000000000000099999.log", ("seek", "--offset", "5")),
        ("00000000000000000000.index", ("verify",)),
        ("00000000000000000000.index", ("index", "check")),
        ("00000000000000000000.index", ("dump",)),
        ("leader-epoch-checkpoint", ("verify",)),
        ("leader-epoch-checkpoint", ("dump",)),
    ],
)
def test_a_fifo_is_named_and_exits_8_without_hanging(fifo_partition, name, args):
    path = fifo_partition / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    proc = run_kseg(*args, fifo_partition, timeout=30)  # a hang fails here
    assert_clean_failure_modes(proc)
    assert proc.returncode == 8, (proc.returncode, proc.stdout[-800:], proc.stderr[-800:])
    said = proc.stdout + proc.stderr
    assert str(path).encode() in said and b"named pipe (FIFO)" in said


def test_a_fifo_given_as_the_path_itself(tmp_path):
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    proc = run_kseg("dump", fifo, timeout=30)
    assert proc.returncode == 8 and b"not a regular file" in proc.stderr


def test_a_device_is_refused(tmp_path):
    pdir = tmp_path / "dev-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.log").symlink_to("/dev/zero")  # would read forever
    proc = run_kseg("verify", pdir, timeout=30)
    assert_clean_failure_modes(proc)
    assert proc.returncode == 8 and b"a device" in proc.stdout + proc.stderr
