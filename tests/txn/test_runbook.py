"""The runbook "consumers are stuck: is a transaction hanging?" (docs/runbooks/) and its example output, run
as written (the data dir path replaced by a copy of the fixture root)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from kseg.fixtures.transactions import build_root
from kseg.storage.writer import LogWriter
from tests.helpers import doc, kseg_command

PAGE = "runbooks/stuck-transaction.md"
DATA = "/var/lib/kafka/data"


def _block(after: str, page: str = PAGE) -> str:
    """The first ``sh`` block after ``after`` on the documentation page ``page``."""
    text = doc(page).split(after, 1)[1]
    return text.split("```sh\n", 1)[1].split("```", 1)[0]


def _run(line: str, cwd: Path) -> subprocess.CompletedProcess:
    kseg = " ".join(shlex.quote(p) for p in kseg_command())
    return subprocess.run(
        ["bash", "-c", re.sub(r"^kseg ", kseg + " ", line)],
        capture_output=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, "PYTHONPATH": _absolute(os.environ.get("PYTHONPATH", ""))},
    )


def _absolute(path: str) -> str:
    """PYTHONPATH with its entries absolute (the commands run in another directory)."""
    return os.pathsep.join(os.path.abspath(p) for p in path.split(os.pathsep) if p)


def test_runbook_commands_run_as_written(tmp_path):
    root = tmp_path / "data"
    build_root(root)
    calm = tmp_path / "calm"  # after the abort: every transaction closed
    with LogWriter(calm / "payments-0") as w:
        from kseg.format.record import Record

        w.append([Record(b"k", b"v")], producer_id=1, producer_epoch=0, base_sequence=0,
                 transactional=True)  # fmt: skip
        w.append_control(commit=False, producer_id=1, producer_epoch=0)
    lines = [x for x in _block("# Runbook: consumers are stuck").splitlines() if x.strip()]
    steps = [x for x in lines if not x.startswith("#")]
    assert len(steps) == 6
    one, two, three, four, abort, five = steps
    proc = _run(one.replace(DATA, str(root)), tmp_path)
    assert proc.returncode == 4 and b"HANGING" in proc.stdout
    proc = _run(two.replace(DATA, str(root)), tmp_path)
    assert proc.returncode == 4 and b"producer\n" in proc.stdout
    proc = _run(three.replace(DATA, str(root)), tmp_path)
    assert proc.returncode == 4 and b"--at;" in proc.stdout
    proc = _run(four.replace(DATA, str(root)), tmp_path)
    assert proc.returncode == 0
    assert abort in proc.stdout.decode().splitlines()  # the printed line is the one to run
    proc = _run(five.replace(DATA, str(calm)), tmp_path)
    assert proc.returncode == 0 and b"0 hanging" in proc.stdout


def test_the_readme_example_output_is_what_kseg_prints(tmp_path):
    build_root(tmp_path / "data")
    block = _block("On the fixture root (`kseg.fixtures.transactions`")
    command, *want = block.strip().splitlines()
    proc = _run(command.removeprefix("$ "), tmp_path)
    got = proc.stdout.decode().splitlines() + [
        "kseg: " + x.removeprefix("kseg: ") for x in proc.stderr.decode().splitlines()
    ]
    assert got == want
