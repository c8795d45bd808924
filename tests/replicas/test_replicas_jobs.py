"""kseg replicas --jobs N: the partitions' replicas loaded and compared by N workers
(kseg.storage.jobs), the KRaft metadata replayed once before they start, the exports written by
kseg itself after each verdict; the output and the exit code are those of --jobs 1."""

from __future__ import annotations

import base64
import hashlib
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.fixtures import replicas as R
from kseg.storage.writer import LogWriter
from tests.helpers import run_kseg

PARTITIONS = (0, 1)


def topic_id(topic: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(topic.encode()).digest()[:16]).decode()[:22]


def build(root: Path, metadata: bool) -> Path:
    """Every fixture scenario as its own topic of PARTITIONS partitions, under broker roots side
    by side; one replica unreadable (an index that is a directory); with ``metadata``, broker-1
    holds KRaft metadata naming broker-2 the leader of the ``lag`` topic's partitions."""
    specs: dict[str, dict] = {}
    for name, sc in sorted(R.SCENARIOS.items()):
        for p in PARTITIONS:
            for broker, spec in sc.replicas.items():
                specs.setdefault(broker, {})[(name, p)] = spec
    for broker, by_partition in sorted(specs.items()):
        R.write_root_partitions(root / broker, int(broker.rsplit("-", 1)[1]), by_partition)
    for p in PARTITIONS:
        R.flip_value_byte(root / R.DAMAGED[0] / f"damaged-{p}", R.DAMAGED[1])
    index = sorted((root / "broker-3" / "match-1").glob("*.index"))[0]
    index.unlink()
    index.mkdir()
    if metadata:
        records: list[tuple] = [("topic_record", {"name": "lag", "topic_id": topic_id("lag")})]
        for p in PARTITIONS:
            records.append(("partition_record", {"partition_id": p, "topic_id": topic_id("lag"),
                                                 "leader": 2, "isr": [2]}))  # fmt: skip
        with LogWriter(root / "broker-1" / "__cluster_metadata-0") as w:
            w.append_metadata(records)
    return root


@pytest.fixture(scope="module", params=[False, True], ids=["epochs", "kraft"])
def roots(request, tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("replicas"), request.param)


def same_output(a, b) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_jobs_3_says_what_jobs_1_says(roots, fmt):
    one = run_kseg("replicas", roots, "-f", fmt, "--jobs", "1")
    three = run_kseg("replicas", roots, "-f", fmt, "--jobs", "3")
    assert one.returncode == 4 | 8, one.stderr
    assert b"match-1" in one.stderr
    same_output(one, three)


def test_a_selection_and_the_leader_given_jobs_3_as_jobs_1(roots):
    args = ("replicas", roots, "--topic", "^(lag|twice|unclean)$", "--partition", "1")
    same_output(run_kseg(*args, "-j", "1"), run_kseg(*args, "-j", "3"))
    args = ("replicas", roots, "--leader", roots / "broker-2", "-f", "json")
    same_output(run_kseg(*args, "-j", "1"), run_kseg(*args, "-j", "3"))


def test_the_kraft_leader_is_used_by_the_workers(roots):
    proc = run_kseg("replicas", roots, "--topic", "^lag$", "-j", "3")
    kraft = (roots / "broker-1" / "__cluster_metadata-0").is_dir()
    assert (b"KRaft metadata" in proc.stdout and b"node 2 leads" in proc.stdout) == kraft


def test_export_lost_jobs_3_writes_what_jobs_1_writes(roots, tmp_path):
    out = []
    for jobs in ("1", "3"):
        dest = tmp_path / "lost"
        proc = run_kseg("replicas", roots, "--export-lost", dest, "-f", "json", "-j", jobs)
        files = {str(p.relative_to(dest)): p.read_bytes() for p in sorted(dest.rglob("*"))
                 if p.is_file()}  # fmt: skip
        out.append((proc.returncode, proc.stdout, proc.stderr, files))
        shutil.rmtree(dest)
    assert out[0][0] == 4 | 8 and out[0][3], out[0][2]
    assert out[0] == out[1]


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    topic=st.sampled_from([None, "^lag$", "^(twice|damaged|match)$", "a", "nothing"]),
    partition=st.sampled_from([None, 0, 1]),
    jobs=st.integers(2, 4),
)
def test_a_selection_compared_by_jobs_n_as_by_one(roots, topic, partition, jobs):
    from kseg.outcome import BadOption
    from kseg.replicas.run import ReplicasRun
    from kseg.storage.tree import InputError, resolve

    out = []
    for n in (1, jobs):
        try:
            run = ReplicasRun(resolve([roots], topic, partition), jobs=n)
        except (BadOption, InputError) as exc:  # a selection nothing matches: refused alike
            out.append(f"{type(exc).__name__}: {exc}")
            continue
        out.append((list(run.events()), run.outcome))
    assert out[0] == out[1]
