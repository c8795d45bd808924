"""A repair changes only what verify called a problem, and says so truthfully.

Found by an operator probe: a repair of one wrong index also replaced its identical
.timeindex and .txnindex (and would replace an equivalent index with kseg's own bytes), and
`verify --repair -f json` called an untouched active segment with a missing index "repaired".
"""

from __future__ import annotations

import hashlib
import json

import pytest

from kseg.fixtures.tree import build_tree
from kseg.storage import files as F
from tests.helpers import copy_partition, events, run_kseg


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return build_tree(tmp_path_factory.mktemp("tree") / "logs")


def _digests(pdir):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(pdir.iterdir())}


def _flip(path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x7F
    path.write_bytes(bytes(data))


def test_a_wrong_index_is_the_only_file_the_repair_writes(tree, tmp_path):
    pdir = copy_partition(tree / "txn-0", tmp_path / "logs")
    wrong = pdir / F.segment_file_name(47, ".index")
    _flip(wrong, 6)  # the position of its first entry
    before = _digests(pdir)
    proc = run_kseg("verify", pdir, "--repair", "-f", "json")
    assert proc.returncode == 1, proc.stderr
    evs = events(proc.stdout.decode())
    acted = [e["file"] for e in evs if e["type"] == "repair_action"]
    assert acted == [str(wrong.resolve())]
    after = _digests(pdir)
    changed = sorted(n for n in before if before[n] != after.get(n))
    assert changed == [wrong.name]
    assert sorted(after) == sorted(before)
    assert run_kseg("verify", pdir).returncode == 0


def test_an_untouched_active_segment_is_not_called_repaired(tree, tmp_path):
    pdir = copy_partition(tree / "orders-0", tmp_path / "logs")
    logs = sorted(pdir.glob("*.log"))
    active_index = logs[-1].with_suffix(".index")
    active_index.unlink()  # info: Kafka creates it at startup; the repair leaves it alone
    _flip(logs[1].with_suffix(".index"), 6)
    proc = run_kseg("verify", pdir, "--repair", "-f", "json")
    assert proc.returncode == 1, proc.stderr
    status = {
        e["file"].rsplit("/", 1)[-1]: e["status"]
        for e in map(json.loads, proc.stdout.splitlines())
        if e["type"] == "segment"
    }
    assert status[logs[1].name] == "repaired"
    assert status[logs[-1].name] == "ok"
    assert status[logs[0].name] == "ok"
    assert not active_index.exists()
