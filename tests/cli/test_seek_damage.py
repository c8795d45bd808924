"""seek never answers from a damaged tail as if it were the log end (a false "clean").

The walks seek makes past an index's last entry (the log end offset for `latest`, a segment's
max timestamp for `--time`) used to stop quietly at a torn, garbage or zero-filled tail, or at a
batch failing its CRC, and answer from what came before: exit 0 for a partition that `verify`
calls corrupt (exit 4). Now the damage is the answer: exit 4, the file and byte named.
"""

from __future__ import annotations

import json

import pytest

from kseg.fixtures.corrupt import build_corrupt_tree
from kseg.fixtures.tree import BASE_TS
from tests.helpers import run_kseg

TAIL_CASES = ("torn-tail", "garbage-tail", "zero-tail")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    return {c.name: c for c in build_corrupt_tree(root)}


def _garbage_from_byte_0(tmp_path, case):
    """The torn-tail partition with its log overwritten from byte 0 (nothing valid at all)."""
    pdir = tmp_path / "garbage-0"
    pdir.mkdir()
    for f in case.partition_dir.iterdir():
        data = f.read_bytes()
        if f.suffix == ".log":
            data = bytes((0x5A + i * 7) % 256 for i in range(len(data)))
        (pdir / f.name).write_bytes(data)
    return pdir


@pytest.mark.parametrize("name", TAIL_CASES)
@pytest.mark.parametrize("target", ["latest", str(BASE_TS + 10**9), "max-timestamp"])
def test_seek_reports_a_damaged_tail_instead_of_answering(cases, name, target):
    case = cases[name]
    proc = run_kseg("seek", case.partition_dir, "--time", target, "-f", "json")
    err = proc.stderr.decode()
    assert proc.returncode == 4, (proc.stdout, err)
    answer = json.loads(proc.stdout)
    assert answer["offset"] is None
    assert str(case.file) in answer["error"] and f"byte {case.position}" in answer["error"]
    assert f"byte {case.position}" in err
    # verify agrees that this partition is damaged
    assert run_kseg("verify", case.partition_dir).returncode == 4


def test_seek_on_a_log_that_is_garbage_from_byte_0_is_no_answer(cases, tmp_path):
    """The probe's case: `seek --time latest` answered `offset 0`, exit 0."""
    pdir = _garbage_from_byte_0(tmp_path, cases["torn-tail"])
    for target in ("latest", "2023-01-01T00:00:00Z"):
        proc = run_kseg("seek", pdir, "--time", target)
        out, err = proc.stdout.decode(), proc.stderr.decode()
        assert proc.returncode == 4, (out, err)
        assert "could not answer" in out and "byte 0" in out
        assert ".log: byte 0" in err
    assert run_kseg("verify", pdir).returncode == 4


def test_seek_on_a_clean_partition_still_answers(cases):
    """The control: the same partition before damage answers latest, exit 0."""
    clean = cases["torn-tail"].partition_dir.parent / "control-0"
    from kseg.fixtures.corrupt import _clean

    infos = _clean(clean)
    proc = run_kseg("seek", clean, "--time", "latest", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["offset"] == infos[-1].last_offset + 1
