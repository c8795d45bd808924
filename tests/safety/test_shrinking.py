"""Issue 13, item 3: a segment truncated while it is read gives a positioned "file shrank while
reading" error (exit 8), never a SIGBUS death."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kseg import LogWriter, Record
from kseg.fixtures.tree import FixedClock
from tests.helpers import kseg_command

from .limits import assert_clean_failure_modes

# The child walks the file again and again, through kseg's own readers, while the parent cuts it
# shorter step by step: pages of a file map past the new end would fault (SIGBUS).
_WALKER = r"""
import sys
from kseg.format.errors import CorruptionError
from kseg.format.log import iter_entries, walk_headers
from kseg.storage.mapped import FileShrankError, mapped
path = sys.argv[1]
shrank = 0
for i in range(400):
    try:
        with mapped(path, sequential=True) as buf:
            if i % 2:
                for _ in walk_headers(buf):
                    pass
            else:
                for e in iter_entries(buf, validate=True):
                    for _ in e.record_tuples():
                        pass
    except FileShrankError as exc:
        assert exc.position is not None and "shrank" in exc.strerror
        shrank += 1
    except CorruptionError:
        pass  # a cut that lands between two reads looks like a torn tail: also fine
    except FileNotFoundError:
        break
print(shrank)
"""


def _segment(pdir: Path, mib: int = 24) -> Path:
    value = os.urandom(256 << 10)
    with LogWriter(pdir, clock=FixedClock()) as w:
        for i in range(mib * 4):
            info = w.append([Record(key=b"k%d" % i, value=value)])
    return info.segment


def test_library_walks_survive_a_file_shrinking_under_them(tmp_path):
    log = _segment(tmp_path / "t-0")
    size = log.stat().st_size
    child = subprocess.Popen(
        [sys.executable, "-c", _WALKER, str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        time.sleep(0.5)
        step = 1 << 20
        while size > 0 and child.poll() is None:
            size = max(0, size - step)
            os.truncate(log, size)
            time.sleep(0.01)
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert child.returncode == 0, f"walker died (rc {child.returncode}): {err.decode()[-1500:]}"
    assert int(out) > 0, "the walk never saw the file shrink: the test did not exercise anything"


@pytest.mark.parametrize(
    "args",
    [
        ("dump", "-f", "json", "--payload", "none"),
        ("dump", "--batches-only"),
        ("verify", "--deep"),
        ("index", "check"),
    ],
    ids=lambda a: " ".join(a),
)
def test_commands_survive_a_concurrent_truncate(tmp_path, args):
    src = _segment(tmp_path / "src-0", mib=16)
    rng = random.Random(13)
    for i in range(8):
        pdir = tmp_path / f"run{i}-0"
        pdir.mkdir()
        log = pdir / src.name
        log.write_bytes(src.read_bytes())
        proc = subprocess.Popen(
            [*kseg_command(), *args, str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        time.sleep(rng.uniform(0.15, 0.6))
        os.truncate(log, rng.randrange(0, log.stat().st_size))
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        done = subprocess.CompletedProcess(proc.args, proc.returncode, b"", err)
        assert_clean_failure_modes(done)
        assert proc.returncode in (0, 4, 8), err.decode()[-1500:]
        if b"shrank while reading" in err:  # when the cut lands mid-read (timing decides)
            assert proc.returncode & 8


def _truncating_reads(monkeypatch, log: Path, to: int) -> None:
    """The next pread copies the bytes and then the file is cut to ``to``: what a truncate
    racing the read leaves (the copy may hold bytes the file no longer has)."""
    import kseg.storage.mapped as m

    real_preadv, real_pread = os.preadv, os.pread

    def preadv(fd, buffers, offset):
        n = real_preadv(fd, buffers, offset)
        os.truncate(log, to)
        return n

    def pread(fd, n, offset):
        data = real_pread(fd, n, offset)
        os.truncate(log, to)
        return data

    monkeypatch.setattr(m.os, "preadv", preadv)
    monkeypatch.setattr(m.os, "pread", pread)


def test_bytes_read_while_the_file_is_cut_are_not_trusted(tmp_path, monkeypatch):
    from kseg.storage.mapped import FileShrankError, mapped

    log = _segment(tmp_path / "t-0", mib=2)
    with mapped(log) as buf:
        _truncating_reads(monkeypatch, log, 1000)
        with pytest.raises(FileShrankError) as exc:
            buf.ensure(0, 4096)
        assert exc.value.position == 1000 and exc.value.filename == str(log)
        with pytest.raises(FileShrankError) as exc:
            buf.read_range(0, 4096)
        assert exc.value.position == 1000


def test_a_map_forgets_its_fd_before_closing_it(tmp_path, monkeypatch):
    """An interrupt landing in close() right after the fd was closed must not leave it to be
    closed again: by then the number may belong to another file (a manifest being written)."""
    import kseg.storage.mapped as m

    class Interrupt(BaseException):
        pass

    log = _segment(tmp_path / "t-0", mib=1)
    buf = m.open_mapped(log)
    real_close = os.close

    def close(n):
        real_close(n)
        raise Interrupt  # the signal arrives right after the close

    monkeypatch.setattr(m.os, "close", close)
    with pytest.raises(Interrupt):
        buf.close()
    monkeypatch.setattr(m.os, "close", real_close)
    other = os.open(log, os.O_RDONLY)  # the lowest free number: the one just closed
    try:
        buf.__del__()  # what the map's collection runs
        os.fstat(other)  # still open: the map did not close it as its own
    finally:
        os.close(other)
