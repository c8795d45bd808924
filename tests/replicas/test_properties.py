"""Property tests of `kseg replicas`' core: random histories of one partition's replicas
(tests/replicas/sim.py, independent of kseg.replicas.rejoin) against what a follower keeps and
loses when it rejoins; kseg.replicas.rejoin's pure functions against LeaderEpochFileCache; and
the options that select partitions against the plain answer filtered by hand."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kseg.fixtures import replicas as R
from kseg.outcome import Outcome
from kseg.replicas.run import ReplicasRun
from kseg.storage.tree import resolve
from tests.replicas.sim import Cluster, Node, expect

FAST = settings(
    max_examples=int(os.environ.get("KSEG_PROP_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# a round: a leader elected (which live replica, cleanly or not, how far the epoch jumps), its
# appends (batch sizes), how many batches each replica then fetches, and what happens to each
# replica after (0: nothing, 1: stops cleanly, 2: crashes, 3: starts again)
rounds = st.tuples(
    st.integers(0, 2),
    st.booleans(),
    st.integers(1, 2),
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.lists(st.integers(0, 4), min_size=3, max_size=3),
    st.lists(st.sampled_from([0, 0, 0, 1, 2, 3]), min_size=3, max_size=3),
)
histories = st.tuples(
    st.integers(2, 3), st.lists(rounds, min_size=2, max_size=5), st.integers(0, 2), st.booleans()
)
# --leader the replica the simulation made leader last, or kseg's own choice


def simulate(history) -> Cluster:
    n, rounds_, pick, clean = history
    c = Cluster([Node() for _ in range(n)])
    for who, clean_, skip, sizes, fetches, fates in rounds_:
        c.elect(who, clean_, skip)
        c.append(sizes)
        for i in range(n):
            c.replicate_to(i, fetches[i])
        for i in range(n):
            if fates[i] in (1, 2):
                c.crash(i, fates[i] == 1)
            elif fates[i] == 3:
                c.restart(i)
    if not c.live():
        c.restart(pick % n)
    c.elect(pick, clean)  # the leader the others rejoin
    return c


def explain(c: Cluster) -> str:
    lines = list(c.history)
    for i, node in enumerate(c.nodes):
        lines.append(f"broker-{i}: {[tuple(b) for b in node.log]} cache {node.cache}")
    return "\n".join(lines)


def loaded_epoch(node: Node) -> int:
    """The latest epoch of a replica's cache once Kafka loads it (truncateFromEnd(log end)
    drops an entry made at the log end by a leader that wrote nothing since)."""
    return max((e for e, start in node.cache if start < node.end), default=-1)


def rows_of(events):
    return {Path(e["log_dir"]).name: e for e in events if e["type"] == "replica"}


@FAST
@given(histories, st.booleans())
def test_rejoin_keeps_exactly_the_common_prefix(history, given_leader):
    """Whichever replica leads (made leader with a new epoch), every other one truncates to
    the end of the batches it shares with the leader, loses exactly its batches after them,
    and is in_sync, behind or diverged as its log is the leader's, a prefix of it, or neither."""
    c = simulate(history)
    with tempfile.TemporaryDirectory() as tmp:
        roots = c.write(Path(tmp))
        run = ReplicasRun(resolve([Path(tmp)]), leader=roots[c.leader] if given_leader else None)
        evs = list(run.events())
    rows = rows_of(evs)
    head = next(e for e in evs if e["type"] == "partition")
    why = explain(c)
    if not given_leader:  # kseg's choice: the greatest latest epoch once loaded, then log end
        c.leader = int(Path(head["leader"]).name.split("-")[1])
        latest = [(loaded_epoch(n), n.end, -i) for i, n in enumerate(c.nodes)]
        assert latest[c.leader] == max(latest), why
    lead = c.nodes[c.leader]
    assert rows[f"broker-{c.leader}"]["role"] == "leader"
    diverged = False
    total = 0
    firsts = []
    for i, node in enumerate(c.nodes):
        if i == c.leader:
            continue
        row, want = rows[f"broker-{i}"], expect(lead, node)
        got = (row["truncate_to"], row["lost_records"], row["status"])
        assert got == want[:3], f"broker-{i}: {got} != {want}\n{why}"
        assert row["truncate_fully"] is False
        div = row["divergence"]
        assert (div and div["offset"]) == want.divergence, f"broker-{i}: {div}\n{why}"
        event(want.status)
        event(f"epochs in its log: {len({b.epoch for b in node.log})}")
        diverged |= want.status == "diverged"
        total += want.lost_records
        if want.divergence is not None:
            firsts.append(want.divergence)
    assert head["status"] == ("diverged" if diverged else "consistent"), why
    assert head["lost_records"] == total
    assert head["first_divergence"] == (min(firsts) if firsts else None)
    assert run.outcome == (Outcome.INVALID_DATA if diverged else Outcome.OK)


def test_leader_that_wrote_nothing_in_its_epoch(tmp_path):
    """Found by the simulation: broker-1 was made leader of epoch 3 at 5 and wrote nothing
    (its checkpoint: 0@0 3@5); broker-0 had led epoch 2 alone over 5..9. Loading broker-1's log
    drops the entry at its log end, but as leader it holds it (Partition.makeLeader): asked for
    epoch 2 it answers (0, 5), and broker-0 truncates to 5, losing 5 records. Without the entry
    the leader would answer UNDEFINED and broker-0 keep its log."""
    R.write_root(tmp_path / "broker-0", 0, R.ReplicaSpec((R.Run(0, 5), R.Run(2, 5, "x"))))
    R.write_root(tmp_path / "broker-1", 1, R.ReplicaSpec((R.Run(0, 5),), epochs=((0, 0), (3, 5))))
    run = ReplicasRun(resolve([tmp_path]), leader=tmp_path / "broker-1")
    row = rows_of(list(run.events()))["broker-0"]
    assert (row["truncate_to"], row["lost_records"], row["status"]) == (5, 5, "diverged")
    assert run.outcome == Outcome.INVALID_DATA
