"""Property tests of `kseg replicas`' core: random histories of one partition's replicas
(tests/replicas/sim.py, independent of kseg.replicas.rejoin) against what a follower keeps and
loses when it rejoins; kseg.replicas.rejoin's pure functions against LeaderEpochFileCache; and
the options that select partitions against the plain answer filtered by hand."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kseg.fixtures import replicas as R
from kseg.format.checkpoint import EpochEntry
from kseg.format.errors import CorruptionError
from kseg.outcome import BadOption, Outcome
from kseg.replicas.rejoin import (
    assigned,
    end_offset_for,
    rejoin,
    truncate_from_end,
    truncate_from_start,
)
from kseg.replicas.run import ReplicasRun
from kseg.storage.segment import read_batches
from kseg.storage.tree import InputError, resolve
from tests.replicas.sim import Cluster, Node, expect, loaded
from tests.replicas.sim import assign as sim_assign


def fast(examples: int) -> settings:
    """Each test well under 10 s; KSEG_PROP_EXAMPLES=N runs N examples (a longer hunt)."""
    n = int(os.environ.get("KSEG_PROP_EXAMPLES", examples))
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# a round: a leader elected (which live replica, cleanly or not, how far the epoch jumps), its
# appends (batch sizes), how many batches each replica then fetches, and what happens to each
# replica after (0: nothing, 1: stops cleanly, 2: crashes, 3: starts again, 4: crashes while
# writing: its last batch torn)
rounds = st.tuples(
    st.integers(0, 2),
    st.booleans(),
    st.integers(1, 2),
    st.lists(st.integers(1, 4), min_size=1, max_size=4),
    st.lists(st.integers(0, 4), min_size=3, max_size=3),
    st.lists(st.sampled_from([0, 0, 0, 0, 1, 2, 3, 3, 4]), min_size=3, max_size=3),
    st.integers(1, 200),  # how many bytes of a torn batch reach the disk
)
histories = st.tuples(
    st.integers(2, 3), st.lists(rounds, min_size=2, max_size=5), st.integers(0, 2), st.booleans()
)
segment_bytes = st.sampled_from([1 << 30, 400])  # one segment, or a few batches each
# --leader the replica the simulation made leader last, or kseg's own choice


def simulate(history) -> Cluster:
    n, rounds_, pick, clean = history
    c = Cluster([Node() for _ in range(n)])
    for who, clean_, skip, sizes, fetches, fates, torn in rounds_:
        c.elect(who, clean_, skip)
        c.append(sizes)
        for i in range(n):
            c.replicate_to(i, fetches[i])
        for i in range(n):
            if fates[i] in (1, 2, 4):
                c.crash(i, fates[i] == 1, torn if fates[i] == 4 else 0)
            elif fates[i] == 3:
                c.restart(i)
    if not c.live():
        c.restart(pick % n)
    c.elect(pick, clean)  # the leader the others rejoin
    return c


def explain(c: Cluster) -> str:
    lines = list(c.history)
    for i, node in enumerate(c.nodes):
        torn = f" (last batch torn: {node.torn} bytes)" if node.torn else ""
        lines.append(f"broker-{i}: {[tuple(b) for b in node.log]} cache {node.cache}{torn}")
    return "\n".join(lines)


def batch_sizes(pdir: Path) -> dict[int, int]:
    """Base offset -> bytes of each whole batch on disk (not a torn one)."""
    out = {}
    for log in sorted(pdir.glob("*.log")):
        try:
            for b in read_batches(log, validate=False):
                out[b.base_offset] = b.size
        except CorruptionError:
            pass  # the torn last batch
    return out


def rows_of(events):
    return {Path(e["log_dir"]).name: e for e in events if e["type"] == "replica"}


@fast(40)
@given(histories, st.booleans(), segment_bytes)
def test_rejoin_keeps_exactly_the_common_prefix(history, given_leader, seg):
    """Whichever replica leads (made leader with a new epoch), every other one truncates to
    the end of the batches it shares with the leader, loses exactly its batches after them,
    and is in_sync, behind or diverged as its log is the leader's, a prefix of it, or neither;
    a replica with a torn last batch (a crash) is damaged, and compared as Kafka recovers it."""
    c = simulate(history)
    with tempfile.TemporaryDirectory() as tmp:
        roots = c.write(Path(tmp), segment_bytes=seg)
        run = ReplicasRun(resolve([Path(tmp)]), leader=roots[c.leader] if given_leader else None)
        evs = list(run.events())
        sizes = [batch_sizes(root / "orders-0") for root in roots]
    rows = rows_of(evs)
    head = next(e for e in evs if e["type"] == "partition")
    why = explain(c)
    nodes = [loaded(n) for n in c.nodes]
    torn = [n.torn > 0 for n in c.nodes]
    if not given_leader:  # kseg's choice: the greatest epoch (loaded or written), then log end
        c.leader = int(Path(head["leader"]).name.split("-")[1])
        latest = [
            (max((e for e, _ in (*n.cache, *raw.cache)), default=-1), n.end, -i)
            for i, (n, raw) in enumerate(zip(nodes, c.nodes, strict=True))
        ]
        assert latest[c.leader] == max(latest), why
    lead = nodes[c.leader]
    assert rows[f"broker-{c.leader}"]["role"] == "leader"
    assert rows[f"broker-{c.leader}"]["status"] == ("damaged" if torn[c.leader] else "leader")
    statuses = {"damaged"} if torn[c.leader] else set()
    total = 0
    firsts = []
    for i, node in enumerate(nodes):
        row = rows[f"broker-{i}"]
        assert (row["log_end_offset"], row["epochs"]) == (node.end, [list(e) for e in node.cache])
        assert (row["damage"] is not None) == torn[i], f"broker-{i}: {row['damage']}\n{why}"
        if i == c.leader:
            continue
        want = expect(lead, node)
        status = "damaged" if torn[i] else want.status
        got = (row["truncate_to"], row["lost_records"], row["status"])
        assert got == (*want[:2], status), f"broker-{i}: {got} != {want}\n{why}"
        assert row["truncate_fully"] is False
        lost = want.lost
        assert (row["lost_batches"], row["lost_bytes"]) == (
            len(lost), sum(sizes[i][b.base] for b in lost)), f"broker-{i}: {row}\n{why}"  # fmt: skip
        first, last = (lost[0].base, lost[-1].end - 1) if lost else (None, None)
        assert (row["lost_first_offset"], row["lost_last_offset"]) == (first, last)
        ts = (R.T0 + (lost[0].end - 1) * 1000, R.T0 + last * 1000) if lost else (None, None)
        assert (row["lost_first_timestamp"], row["lost_last_timestamp"]) == ts
        div = row["divergence"]
        assert (div and div["offset"]) == want.divergence, f"broker-{i}: {div}\n{why}"
        event(status)
        event(f"epochs in its log: {len({b.epoch for b in node.log})}")
        statuses.add(status)
        total += want.lost_records
        if want.divergence is not None:
            firsts.append(want.divergence)
    worst = next((s for s in ("damaged", "diverged") if s in statuses), "consistent")
    assert head["status"] == worst, why
    assert head["lost_records"] == total
    assert head["lost_bytes"] == sum(r["lost_bytes"] for r in rows.values())
    assert head["first_divergence"] == (min(firsts) if firsts else None)
    bad = worst != "consistent"
    assert run.outcome == (Outcome.INVALID_DATA if bad else Outcome.OK)


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


# --- kseg.replicas.rejoin's pure functions against LeaderEpochFileCache ---------------------

entries = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 20)), max_size=8)


def java_assign(cache: dict[int, int], epoch: int, start: int) -> None:
    """LeaderEpochFileCache.assign on its TreeMap (epoch -> start): isUpdateNeeded against the
    latest entry (the greatest epoch), then maybeTruncateNonMonotonicEntries walks the map from
    the greatest epoch down removing while epoch >= new or start >= new, then put."""
    if cache:
        top = max(cache)
        if not (epoch != top or start < cache[top]):
            return
    for e in sorted(cache, reverse=True):
        if e >= epoch or cache[e] >= start:
            del cache[e]
        else:
            break
    cache[epoch] = start


def java_cache(pairs) -> dict[int, int]:
    cache: dict[int, int] = {}
    for e, s in pairs:
        java_assign(cache, e, s)
    return cache


def as_entries(cache: dict[int, int]) -> tuple[EpochEntry, ...]:
    return tuple(EpochEntry(e, cache[e]) for e in sorted(cache))


@fast(150)
@given(entries)
def test_assigned_is_the_checkpoint_read_through_assign(pairs):
    got = assigned([EpochEntry(e, s) for e, s in pairs])
    assert got == as_entries(java_cache(pairs))
    assert got == as_entries(sim_cache(pairs))  # the simulation's cache agrees
    starts = [e.start_offset for e in got]
    assert starts == sorted(set(starts))  # strictly increasing, as epochs are


def sim_cache(pairs) -> dict[int, int]:
    cache: list[tuple[int, int]] = []
    for e, s in pairs:
        sim_assign(cache, e, s)
    return dict(cache)


@fast(150)
@given(entries, st.integers(0, 22))
def test_truncate_from_end_and_start_as_the_tree_map(pairs, offset):
    """truncateFromEnd(end): when the latest entry starts at or after ``end``, the entries from
    the greatest epoch down while they start at or after it go. truncateFromStart(start): from
    the least epoch up, the entries starting at or before it go, and the last of them comes
    back starting at ``start``. (Kafka ignores truncateFromEnd(-1); kseg calls it with a log
    end, never negative: not compared.)"""
    cache = java_cache(pairs)
    epochs = as_entries(cache)
    end = dict(cache)
    if end and end[max(end)] >= offset:
        for e in sorted(end, reverse=True):
            if end[e] >= offset:
                del end[e]
            else:
                break
    assert truncate_from_end(epochs, offset) == as_entries(end)
    start = dict(cache)
    removed = []
    for e in sorted(start):
        if start[e] <= offset:
            removed.append(e)
            del start[e]
        else:
            break
    if removed:
        start[removed[-1]] = offset
    assert truncate_from_start(epochs, offset) == as_entries(start)


def brute_end_offset_for(cache: dict[int, int], requested: int, log_end: int) -> tuple[int, int]:
    """endOffsetFor as its Javadoc and comments read: the largest epoch <= requested, ending at
    the start of the first epoch larger than the requested one, or the log end if the latest
    epoch is asked; UNDEFINED for the undefined epoch or when no epoch is larger; an epoch
    below every known one gets (requested, the start of the first one). (The Javadoc's last
    paragraph, UNDEFINED_EPOCH_OFFSET below the first epoch, is older than the code.)"""
    if requested == -1:
        return -1, -1
    if cache and max(cache) == requested:
        return requested, log_end
    higher = [e for e in cache if e > requested]
    if not higher:
        return -1, -1
    lower = [e for e in cache if e <= requested]
    return (max(lower) if lower else requested), cache[min(higher)]


@fast(150)
@given(entries, st.integers(-1, 8), st.integers(0, 10))
def test_end_offset_for_as_the_javadoc(pairs, requested, beyond):
    cache = java_cache(pairs)
    log_end = max(cache.values(), default=0) + beyond
    got = end_offset_for(as_entries(cache), requested, log_end)
    assert got == brute_end_offset_for(cache, requested, log_end)


def loaded_cache(pairs, start: int, end: int) -> tuple[EpochEntry, ...]:
    """A cache as loading a log over [start, end) leaves it."""
    return truncate_from_start(truncate_from_end(as_entries(java_cache(pairs)), end), start)


logs = st.tuples(entries, st.integers(0, 6), st.integers(0, 24)).map(
    lambda t: (t[0], min(t[1], t[2]), t[2])
)


@fast(150)
@given(logs, logs)
def test_rejoin_stays_within_the_follower_log(leader, follower):
    """It ends (each round drops an epoch or stops), never truncates below 0 nor past the
    follower's log end; truncating fully, it starts at the leader's log start, above all the
    follower kept."""
    lp, ls, le = leader
    fp, fs, fe = follower
    lead = loaded_cache(lp, ls, le)
    epochs = loaded_cache(fp, fs, fe)
    rj = rejoin(lead, ls, le, epochs, fe)
    assert len(rj.steps) <= len(epochs) + 1
    if rj.fully:
        assert rj.truncate_to == ls and ls > 0
    else:
        assert 0 <= rj.truncate_to <= fe
    assert rj.rule in ("epoch", "leader_end", "undefined")


@fast(150)
@given(logs)
def test_rejoin_against_itself_truncates_nothing(log):
    pairs, start, end = log
    epochs = loaded_cache(pairs, start, end)
    for lead in (epochs, (*epochs, EpochEntry(99, end))):  # loaded, or leading (makeLeader)
        rj = rejoin(lead, start, end, epochs, end)
        assert (rj.truncate_to, rj.fully) == (end, False)
        assert rj.rule == "epoch" and len(rj.steps) == (1 if epochs else 0)


# --- options that select: --topic, --partition, --leader against the plain run ---------------

TOPICS = ("orders", "payments", "audit")
VARIANTS = (  # one partition's replica: the same history, behind, diverged, a later epoch
    (R.Run(0, 10), R.Run(1, 10, "b")),
    (R.Run(0, 10),),
    (R.Run(0, 10), R.Run(0, 5, "c")),
    (R.Run(0, 10), R.Run(2, 5, "d")),
)
# per root, per (topic, partition): None (no replica there) or a variant
layouts = st.lists(
    st.lists(st.one_of(st.none(), st.sampled_from(range(len(VARIANTS)))), min_size=6, max_size=6),
    min_size=2,
    max_size=3,
)
selections = st.tuples(
    st.sampled_from([None, "orders", "^p", "s$", "o", "zzz"]),
    st.sampled_from([None, 0, 1, 2]),
    st.sampled_from([None, 0, 1, 2]),  # --leader: the root of that index
)


def write_layout(directory: Path, layout) -> list[Path]:
    roots = []
    for i, row in enumerate(layout):
        specs = {
            (TOPICS[k // 2], k % 2): R.ReplicaSpec(VARIANTS[v])
            for k, v in enumerate(row)
            if v is not None
        }
        root = directory / f"broker-{i}"
        if specs:
            R.write_root_partitions(root, i, specs)
        else:  # a root holding no partition
            R.write_root_partitions(root, i, {("spare", 9): R.ReplicaSpec(())})
        roots.append(root)
    return roots


def outcome_of(directory: Path, topic=None, partition=None, leader=None):
    """(the events, the outcome), or the error's class name."""
    try:
        run = ReplicasRun(resolve([directory], topic, partition), leader=leader)
        return list(run.events()), run.outcome
    except (BadOption, InputError) as exc:
        return type(exc).__name__


@fast(20)
@given(layouts, selections)
def test_selection_is_the_plain_run_filtered(layout, selection):
    """--topic/--partition keep the plain run's events for the partitions they select (with the
    same --leader); --leader names the leader wherever it holds a replica. Selecting nothing
    is an input error, nothing with replicas in two roots or a leader holding none of them a
    usage error."""
    topic, partition, lead = selection
    with tempfile.TemporaryDirectory() as tmp:
        roots = write_layout(Path(tmp), layout)
        leader = None if lead is None or lead >= len(roots) else roots[lead]
        plain = outcome_of(Path(tmp), leader=leader)
        picked = outcome_of(Path(tmp), topic, partition, leader)
    rx = re.compile(topic) if topic else None
    named = [(TOPICS[k // 2], k % 2) for k in range(6)] + [("spare", 9)]
    held = {
        (t, p): [i for i, row in enumerate(layout) if (row + [None])[named.index((t, p))] is not None
                 or (t == "spare" and not any(v is not None for v in row))]
        for t, p in named
    }  # fmt: skip
    chosen = {
        tp: rs
        for tp, rs in held.items()
        if rs and (rx is None or rx.search(tp[0])) and (partition is None or tp[1] == partition)
    }
    compared = {tp: rs for tp, rs in chosen.items() if len(rs) >= 2}
    if not chosen:
        assert picked == "InputError"
        return
    if not compared or (leader is not None and not any(lead in rs for rs in compared.values())):
        assert picked == "BadOption"
        return
    evs, outcome = picked
    by_tp: dict[tuple[str, int], list[dict]] = {}
    for e in evs:
        if e["type"] in ("partition", "replica"):
            by_tp.setdefault((e["topic"], e["partition"]), []).append(e)
    assert sorted(by_tp) == sorted(compared)
    plain_by_tp: dict[tuple[str, int], list[dict]] = {}
    for e in plain[0]:
        if e["type"] in ("partition", "replica"):
            plain_by_tp.setdefault((e["topic"], e["partition"]), []).append(e)
    assert by_tp == {tp: plain_by_tp[tp] for tp in compared}
    for tp, rs in compared.items():
        head = by_tp[tp][0]
        if leader is not None and lead in rs:
            assert (Path(head["leader"]), head["leader_rule"]) == (leader, "given")
        assert head["replicas"] == len(rs)
    single = sum(1 for rs in chosen.values() if len(rs) == 1)
    notices = [
        e["message"] for e in evs if e["type"] == "notice" and "one root only" in e["message"]
    ]
    assert notices == ([f"{single} partition{' has' if single == 1 else 's have'} a replica in "
                        "one root only: nothing to compare"] if single else [])  # fmt: skip
    summary = evs[-1]
    heads = [v[0] for v in by_tp.values()]
    assert summary["partitions"] == len(compared)
    assert summary["lost_records"] == sum(h["lost_records"] for h in heads)
    bad = any(h["status"] != "consistent" for h in heads)
    assert outcome == (Outcome.INVALID_DATA if bad else Outcome.OK)
