"""Where a group's records are: the `__consumer_offsets` partition the group maps to, how many
partitions that topic has, and which replica of a partition to read. The same choices serve
`__transaction_state` (kseg.txn.coordinator): every function takes the topic, `__consumer_offsets`
by default.

The coordinator partition of a group is ``abs(javaStringHashCode(group)) % partitions``
(``Utils.abs``: Integer.MIN_VALUE gives 0). The partition count of `__consumer_offsets` is
known only from KRaft metadata (its PartitionRecords in `__cluster_metadata`); without it
(ZooKeeper-era data dirs) every `__consumer_offsets` partition present is read: partition
dirs found are no proof of the count, a broker holds only its replicas.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.format.errors import CorruptionError
from kseg.storage import files as F
from kseg.storage.partition import Partition
from kseg.storage.side_files import read_side_file
from kseg.storage.tree import Selection

TOPIC = "__consumer_offsets"
METADATA_TOPIC = "__cluster_metadata"


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: 31*h + c over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % groupMetadataTopicOffsetsTopicPartitions``;
    Utils.abs(Integer.MIN_VALUE) is 0, not Math.abs's negative number."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class OffsetsTopicPartitions(NamedTuple):
    count: int | None
    source: str  # how it was found (or why not)


def partition_count(sel: Selection, topic: str = TOPIC) -> OffsetsTopicPartitions:
    """The partition count of ``topic`` (`__consumer_offsets`) from KRaft metadata under the
    roots (the PartitionRecords of its topic id); unknown without it."""
    from kseg.offsets.leaders import topic_partitions

    meta = [t.partition_dir for t in sel.targets() if _topic_of(t.partition_dir) == METADATA_TOPIC]
    for mdir in meta:
        try:
            parts = topic_partitions(mdir, topic)
        except (CorruptionError, OSError) as exc:
            return OffsetsTopicPartitions(None, f"KRaft metadata {mdir} unreadable ({exc})")
        if parts:
            return OffsetsTopicPartitions(len(parts), f"KRaft metadata in {mdir}")
        return OffsetsTopicPartitions(None, f"KRaft metadata in {mdir} has no {topic} topic")
    return OffsetsTopicPartitions(None, "no KRaft metadata (__cluster_metadata-0) under the roots")


def _topic_of(pdir: Path) -> str | None:
    name = F.parse_partition_dir(pdir.name)
    return name.topic if name is not None and name.state is None else None


def offsets_replicas(sel: Selection, topic: str = TOPIC) -> dict[int, list[Path]]:
    """Partition number -> the dirs of its replicas under the roots (live dirs of ``topic``)."""
    out: dict[int, list[Path]] = {}
    for t in sel.targets():
        name = F.parse_partition_dir(t.partition_dir.name)
        if name is not None and name.state is None and name.topic == topic:
            out.setdefault(name.partition, []).append(t.partition_dir)
    return out


def check_one_cluster(replicas: dict[int, list[Path]], roots: str, topic: str = TOPIC) -> None:
    """InputError (usage) when the roots holding ``replicas`` name different cluster ids:
    their partitions of ``topic`` are not replicas of each other."""
    from kseg.storage.tree import InputError

    clusters = cluster_ids({d.parent for ds in replicas.values() for d in ds})
    if len(set(clusters.values())) > 1:
        said = ", ".join(f"{r}: {c}" for r, c in sorted(clusters.items()))
        raise InputError(
            "usage",
            roots,
            f"the roots belong to different clusters ({said}); their {topic} partitions are "
            "not replicas of each other: give the roots of one cluster",
        )


def cluster_ids(roots: set[Path]) -> dict[Path, str]:
    """meta.properties' cluster.id of each root that names one."""
    from kseg.format.checkpoint import read_properties

    out = {}
    for r in roots:
        try:
            data = read_side_file(r / "meta.properties", F.META_PROPERTIES)
            cid = read_properties(data).get("cluster.id")
        except (OSError, CorruptionError, ValueError):
            cid = None
        if cid:
            out[r] = cid
    return out


def best_replica(replicas: list[Path]) -> tuple[Path, str | None]:
    """The replica with the greatest log end offset (the most complete copy)."""
    if len(replicas) == 1:
        return replicas[0], None
    ends = []
    for r in replicas:
        try:
            ends.append((Partition(r).log_end_offset(), r))
        except (CorruptionError, OSError):
            ends.append((-1, r))
    best = max(ends, key=lambda e: e[0])
    if len({e for e, _ in ends}) > 1:
        said = ", ".join(f"{r}: log end {e}" for e, r in ends)
        return best[1], f"replicas of {best[1].name} differ ({said}); reading {best[1]}"
    return best[1], None
