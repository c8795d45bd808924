"""The runbooks "a broker crashed", "a segment is damaged" and "reset a consumer group"
(docs/runbooks/), run line by line as written on a (damaged) copy of the demo tree: /var/lib/kafka/data is the copy, the quarantine
run a line names is the newest one there, `systemctl start kafka` is `true`, /mnt/spare a fresh
directory, and orders-3 the damaged partition (the demo's orders-0). Each line exits as its
comment says. (The other two runbooks have tests of their own: tests/txn, tests/replicas.)"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from kseg.fixtures.demo import write_demo
from tests.helpers import doc, kseg_command


@pytest.fixture
def clean_data(tmp_path) -> Path:
    """A copy of the demo as /var/lib/kafka/data."""
    for _ in write_demo(tmp_path / "demo"):
        pass
    root = tmp_path / "lib" / "data"
    root.parent.mkdir()
    subprocess.run(["cp", "-r", str(tmp_path / "demo"), str(root)], check=True)
    return root


@pytest.fixture
def data(clean_data) -> Path:
    """The same with a flipped byte inside a batch of orders-0: a CRC mismatch."""
    with open(clean_data / "orders-0" / "00000000000000000054.log", "r+b") as f:
        f.seek(300)
        f.write(b"\xff")
    return clean_data


def _lines(page: str) -> list[str]:
    block = doc(page).split("```sh\n", 1)[1].split("```", 1)[0]
    return [x for x in block.splitlines() if x.strip() and not x.startswith("#")]


def _run(line: str, data: Path) -> subprocess.CompletedProcess:
    lib = data.parent
    runs = sorted((lib / "kseg-quarantine" / "data").glob("*Z"))
    line = re.sub(
        r"/var/lib/kafka/kseg-quarantine/data/\d{8}T\d{6}Z", str(runs[-1]) if runs else "NONE", line
    )
    line = line.replace("/var/lib/kafka/", f"{lib}/").replace("/mnt/spare/", f"{lib}/spare/")
    line = line.replace("orders-3", "orders-0").replace("systemctl start kafka", "true")
    kseg = " ".join(shlex.quote(p) for p in kseg_command())
    line = re.sub(r"(^|&& )kseg ", rf"\g<1>{kseg} ", line)
    return subprocess.run(["bash", "-c", line], capture_output=True, cwd=lib, timeout=120)


def _walk(page: str, data: Path, codes: list[int]) -> None:
    lines = _lines(page)
    assert len(lines) == len(codes)
    for line, code in zip(lines, codes, strict=True):
        proc = _run(line, data)
        err = proc.stderr.decode()
        assert proc.returncode == code, (line, err)
        assert "Traceback" not in err and "internal error" not in err, line


def test_a_broker_crashed(data):
    # verify (4: damage), dry run (4), repair (1), verify && start (0), restore one
    # partition (0), restore the run (0: that partition is already restored)
    _walk("runbooks/broker-crashed.md", data, [4, 4, 1, 0, 0, 0])
    assert (
        subprocess.run([*kseg_command(), "verify", str(data)], capture_output=True).returncode == 4
    )


def test_a_segment_is_damaged(data):
    # dry run (4: damage), salvage (1), verify && start (0), --to (0: nothing left to salvage),
    # from the quarantine, dry run with a plot (0) and for real (0), restore the salvage (0)
    _walk("runbooks/damaged-segment.md", data, [4, 1, 0, 0, 0, 0, 0])
    assert (data.parent / "cost.png").is_file()
    assert (
        subprocess.run([*kseg_command(), "verify", str(data)], capture_output=True).returncode == 4
    )


def test_reset_a_group(clean_data):
    """Each step exits 0; the reset files are what kafka-consumer-groups --from-file reads
    (topic,partition,offset lines), here replaced by a check of that file."""
    lines = _lines("runbooks/reset-group.md")
    assert len(lines) == 6 and lines[4].startswith("kafka-consumer-groups.sh ")
    lib = clean_data.parent
    answers = {}
    for i, line in enumerate(lines[:4]):
        proc = _run(line, clean_data)
        assert proc.returncode == 0, (line, proc.stderr.decode())
        if "reset.csv" in line:
            answers[i] = (lib / "reset.csv").read_text()
    offsets, seek = answers[2], answers[3]
    assert offsets == "orders,0,110\norders,1,15\ntxn,0,25\n"
    assert seek == "orders,0,99\norders,1,101\n"  # the first records at or after 22:13:40
    for line in lines[4:]:
        tool = line.split(" --from-file ", 1)
        assert tool[1].startswith("reset.csv ") and "--reset-offsets" in tool[0]
