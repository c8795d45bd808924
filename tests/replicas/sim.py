"""A small simulation of one partition's replicas, independent of kseg.replicas.rejoin: leaders
elected (cleanly or not) with ever greater epochs, appends on the leader, followers copying a
prefix of the leader's batches byte for byte, crashes and restarts. Each replica keeps its
leader-epoch cache the way LeaderEpochFileCache does (assign, truncateFromEnd), so the roots
written from it (kseg.fixtures.replicas) are logs Kafka could have built.

The truth checked against kseg is stated without Kafka's rule: a follower that rejoins the
leader keeps exactly the longest common prefix of the two logs, batch by batch (KIP-101/279's
guarantee for logs built this way). A follower that fetches here is first cut to that prefix
(the guarantee assumed while building the history; the final check tests it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kseg.fixtures import replicas as R


class Batch(NamedTuple):
    base: int
    count: int
    epoch: int  # also its content: the one leader of an epoch wrote it (tag ``e<epoch>``)

    @property
    def end(self) -> int:
        return self.base + self.count


def assign(cache: list[tuple[int, int]], epoch: int, start: int) -> None:
    """LeaderEpochFileCache.assign: no change when ``epoch`` is the latest and ``start`` not
    below its start; else the entries not below it (epoch or start) go, then it is added."""
    if cache and cache[-1][0] == epoch and start >= cache[-1][1]:
        return
    while cache and (cache[-1][0] >= epoch or cache[-1][1] >= start):
        cache.pop()
    cache.append((epoch, start))


def truncate_from_end(cache: list[tuple[int, int]], end: int) -> None:
    while cache and cache[-1][1] >= end:
        cache.pop()


@dataclass
class Node:
    log: list[Batch] = field(default_factory=list)
    cache: list[tuple[int, int]] = field(default_factory=list)
    live: bool = True
    clean: bool = True  # how it last stopped
    torn: int = 0  # it crashed while writing its last batch: the bytes of it missing on disk

    @property
    def end(self) -> int:
        return self.log[-1].end if self.log else 0


def common_batches(a: list[Batch], b: list[Batch]) -> int:
    """How many leading batches ``a`` and ``b`` share (offsets, epoch and content)."""
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def common_end(a: list[Batch], b: list[Batch]) -> int:
    n = common_batches(a, b)
    return a[n - 1].end if n else 0


@dataclass
class Cluster:
    nodes: list[Node]
    leader: int | None = None
    epoch: int = -1  # the controller's latest leader epoch
    history: list[str] = field(default_factory=list)

    def live(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.live]

    def elect(self, pick: int, clean: bool, skip: int = 1) -> bool:
        """Make a live replica leader with a new, greater epoch: ``clean``, one that holds the
        most of the last leader's log (no acknowledged write lost); else any live one."""
        cands = self.live()
        if not cands:
            return False
        if clean and self.leader is not None:
            old = self.nodes[self.leader].log
            best = max(common_end(self.nodes[i].log, old) for i in cands)
            cands = [i for i in cands if common_end(self.nodes[i].log, old) == best]
        who = cands[pick % len(cands)]
        self.epoch += skip
        self.leader = who
        node = self.nodes[who]
        assign(node.cache, self.epoch, node.end)  # Partition.makeLeader
        self.history.append(f"elect {who} epoch {self.epoch} at {node.end}" + (
            " (clean)" if clean else ""))  # fmt: skip
        return True

    def append(self, sizes: list[int]) -> None:
        if self.leader is None or not self.nodes[self.leader].live:
            return
        node = self.nodes[self.leader]
        for n in sizes:
            b = Batch(node.end, n, self.epoch)
            node.log.append(b)
            assign(node.cache, b.epoch, b.base)
        self.history.append(f"append {sizes} on {self.leader}")

    def replicate(self, pick: int, batches: int) -> None:
        """A live follower fetches from the leader: cut to the common prefix, then copies up
        to ``batches`` of the leader's batches after it."""
        followers = [i for i in self.live() if i != self.leader]
        if self.leader is None or not followers:
            return
        self.replicate_to(followers[pick % len(followers)], batches)

    def replicate_to(self, who: int, batches: int) -> None:
        if self.leader is None or who == self.leader:
            return
        lead, node = self.nodes[self.leader], self.nodes[who]
        if not (lead.live and node.live):
            return
        keep = common_batches(node.log, lead.log)
        del node.log[keep:]
        truncate_from_end(node.cache, node.end)
        for b in lead.log[keep : keep + batches]:
            node.log.append(b)
            if not node.cache or b.epoch > node.cache[-1][0]:
                assign(node.cache, b.epoch, b.base)
        self.history.append(f"replicate {who} +{batches} -> {node.end}")

    def crash(self, who: int, clean: bool, torn: int = 0) -> None:
        """``who`` stops; crashing (not ``clean``) with ``torn``, while its last batch was
        written: that many bytes of it (at least 1, less than all) never reached the disk."""
        node = self.nodes[who]
        if not node.live:
            return
        node.live, node.clean = False, clean
        node.torn = torn if torn and not clean and node.log else 0
        if self.leader == who:
            self.leader = None
        self.history.append(f"stop {who}" + ("" if clean else " (crash)") + (
            f" torn {node.torn}" if node.torn else ""))  # fmt: skip

    def restart(self, who: int) -> None:
        node = self.nodes[who]
        if node.live:
            return
        node.live, node.clean = True, True
        if node.torn:  # recovery drops the torn batch
            node.log.pop()
            node.torn = 0
        truncate_from_end(node.cache, node.end)  # LogLoader
        self.history.append(f"start {who}")

    def write(self, directory: Path, tag: str = "e", **kw) -> list[Path]:
        """Each replica as a broker root ``broker-<i>`` under ``directory``; the roots."""
        roots = []
        for i, node in enumerate(self.nodes):
            root = directory / f"broker-{i}"
            pdir = R.write_root(root, i, spec(node, tag), **kw)
            if node.torn:
                tear(pdir, node.torn)
            roots.append(root)
        return roots


def tear(pdir: Path, torn: int) -> None:
    """Cut the last batch of ``pdir`` short (at least one byte kept, at least one gone)."""
    from kseg.storage.segment import read_batches

    log = sorted(pdir.glob("*.log"))[-1]
    last = None
    for b in read_batches(log, validate=False):
        last = (b.position, b.size)
    assert last is not None, f"{log}: no batch to tear"
    pos, size = last
    with open(log, "r+b") as f:
        f.truncate(pos + 1 + (torn - 1) % (size - 1))


def loaded(node: Node) -> Node:
    """``node`` as Kafka loads it: recovery drops a torn batch, the cache is cut at the end."""
    log = node.log[:-1] if node.torn else list(node.log)
    view = Node(log, list(node.cache), node.live, node.clean)
    truncate_from_end(view.cache, view.end)
    return view


def spec(node: Node, tag: str = "e") -> R.ReplicaSpec:
    runs = tuple(R.Run(b.epoch, b.count, f"{tag}{b.epoch}", batch=b.count) for b in node.log)
    return R.ReplicaSpec(runs, epochs=tuple(node.cache), clean=node.clean)


class Expect(NamedTuple):
    truncate_to: int
    lost_records: int
    status: str  # in_sync | behind | diverged
    divergence: int | None
    lost: tuple[Batch, ...]  # the follower's batches the leader does not hold, that it loses


def expect(leader: Node, follower: Node) -> Expect:
    """What a follower keeps and loses when it rejoins ``leader``, from the logs alone."""
    keep = common_batches(follower.log, leader.log)
    upto = follower.log[keep - 1].end if keep else 0
    held = set(leader.log)
    gone = tuple(b for b in follower.log[keep:] if b not in held)
    lost = sum(b.count for b in gone)
    if keep == len(follower.log):
        status = "in_sync" if keep == len(leader.log) else "behind"
        return Expect(upto, lost, status, None, gone)
    return Expect(upto, lost, "diverged", upto, gone)
