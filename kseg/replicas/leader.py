"""Which replica leads: the one Kafka keeps, whose log the others truncate against.

In order: ``--leader ROOT``; the KRaft metadata under the roots (the `__cluster_metadata`
replica with the greatest log end: the partition's leader once every record is applied, mapped
to a root by meta.properties' node.id); else the replica with the greatest leader epoch in its
cache or checkpoint (the last one made leader: the controller gives each new leader a greater epoch), then the
greatest log end, then the first given.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from kseg.format.errors import CorruptionError
from kseg.replicas.model import Replica

METADATA_DIR = "__cluster_metadata-0"
GIVEN, METADATA, LATEST_EPOCH = "given", "metadata", "latest_epoch"


class Choice(NamedTuple):
    index: int  # into the replicas
    rule: str
    reason: str


def _metadata_leader(
    replicas: Sequence[Replica], topic: str, partition: int, memo: dict | None = None
):
    """(node id, why) from the most complete KRaft metadata log under the replicas' roots, or
    (None, why not). ``memo``: a run's store of replays (one replay per set of metadata logs,
    not one per partition)."""
    memo = {} if memo is None else memo
    key = replay_metadata([r.log_dir for r in replicas], memo)
    if key is None:
        return None, "no KRaft metadata under the roots"
    mdir, found = memo[key]
    if isinstance(found, Exception):
        return None, f"KRaft metadata {mdir} unreadable ({found})"
    at = found.get((topic, partition))
    if at is None:
        return None, f"KRaft metadata {mdir} does not know {topic}-{partition}"
    if at.leader < 0:
        return None, f"KRaft metadata {mdir}: {topic}-{partition} has no leader"
    return at.leader, f"KRaft metadata {mdir}: node {at.leader} leads"


def replay_metadata(roots: Sequence[Path], memo: dict) -> tuple[Path, ...] | None:
    """The KRaft metadata under ``roots`` replayed into ``memo`` (once per set of metadata
    logs: the most complete one's final leaders, or the error reading it); its key in ``memo``,
    None when no root holds metadata."""
    from kseg.offsets.leaders import final_leaders
    from kseg.offsets.placement import best_replica

    mdirs = [root / METADATA_DIR for root in roots if (root / METADATA_DIR).is_dir()]
    if not mdirs:
        return None
    key = tuple(mdirs)
    if key not in memo:
        mdir, _ = best_replica(mdirs)
        try:
            memo[key] = mdir, final_leaders(mdir)
        except (CorruptionError, OSError) as exc:
            memo[key] = mdir, exc
    return key


def greatest_epoch(r: Replica) -> int:
    """The greatest leader epoch a replica knows: its cache as loaded, or its checkpoint as
    written, which holds the entry makeLeader wrote for a leader that has written nothing in
    its epoch yet (loading drops it: it starts at the log end); -1 for none."""
    return max((e.epoch for e in (*r.epochs, *r.checkpoint)), default=-1)


def choose(
    replicas: Sequence[Replica],
    topic: str,
    partition: int,
    given: Path | None = None,
    memo: dict | None = None,
) -> Choice:
    """The leader of ``replicas`` (see the module); ``memo``: a run's metadata replays."""
    if given is not None:
        want = given.resolve()
        for i, r in enumerate(replicas):
            if r.log_dir.resolve() == want:
                return Choice(i, GIVEN, f"--leader {given}")
    node, why = _metadata_leader(replicas, topic, partition, memo)
    if node is not None:
        for i, r in enumerate(replicas):
            if r.node_id == node:
                return Choice(i, METADATA, why)
        why = f"{why}, whose root is not among those given"
    cands = [r for r in replicas if r.starts] or list(replicas)
    best = max(
        range(len(replicas)),
        key=lambda i: (
            replicas[i] in cands,
            greatest_epoch(replicas[i]),
            replicas[i].log_end_offset,
            -i,
        ),
    )
    r = replicas[best]
    top = greatest_epoch(r)
    epoch = "no epoch" if top < 0 else f"epoch {top}"
    return Choice(best, LATEST_EPOCH, f"{why}: the greatest leader epoch ({epoch}), "
                  f"then the greatest log end ({r.log_end_offset})")  # fmt: skip
