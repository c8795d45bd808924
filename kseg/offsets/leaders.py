"""Which broker led a partition at a given offset of the KRaft metadata log.

Replays `__cluster_metadata` as a controller rebuilds its image: the newest complete snapshot
(`<end offset>-<epoch>.checkpoint`) whose end offset is at most ``offset + 1`` (it holds the
state of every record before its end offset), then the log's records from the snapshot's end
offset through ``offset``. TopicRecord maps names to ids, RemoveTopicRecord forgets them,
PartitionRecord sets a partition's state and PartitionChangeRecord changes it (its ``leader``
-2 means "no change", -1 "no leader").
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.format.errors import CorruptionError
from kseg.format.metadata import decode_metadata
from kseg.storage import files as F
from kseg.storage.segment import read_batches
from kseg.storage.tree import segment_logs

NO_CHANGE = -2


class LeaderAt(NamedTuple):
    topic: str
    topic_id: str
    partition: int
    leader: int  # -1: no leader
    isr: list[int]
    changed_at: int | None  # metadata offset of the record that set the leader (None: snapshot)
    source: str  # the file that record came from


class _Image:
    def __init__(self) -> None:
        self.topic_ids: dict[str, str] = {}
        self.parts: dict[tuple[str, int], dict] = {}

    def apply(self, rec: dict, offset: int | None, source: str) -> None:
        kind, data = rec["record"], rec["data"]
        if kind == "topic_record":
            self.topic_ids[data["name"]] = data["topic_id"]
        elif kind == "remove_topic_record":
            self.topic_ids = {n: i for n, i in self.topic_ids.items() if i != data["topic_id"]}
        elif kind == "partition_record":
            self.parts[(data["topic_id"], data["partition_id"])] = {
                "leader": data["leader"],
                "isr": data["isr"],
                "changed_at": offset,
                "source": source,
            }
        elif kind == "partition_change_record":
            p = self.parts.get((data["topic_id"], data["partition_id"]))
            if p is None:
                return
            if data["leader"] != NO_CHANGE:
                p.update(leader=data["leader"], changed_at=offset, source=source)
            if data["isr"] is not None:
                p["isr"] = data["isr"]


def _records(path: Path, upto: int | None):
    for batch in read_batches(path):
        if batch.is_control:
            continue
        for rec in batch.records():
            if upto is not None and rec.offset > upto:
                return
            yield rec.offset, rec.value


def partition_leader(
    metadata_dir: str | Path, topic: str, partition: int, offset: int
) -> LeaderAt | None:
    """The leader of ``topic``-``partition`` once the metadata log is applied through ``offset``
    (None if the topic or partition did not exist then). Raises CorruptionError on a record it
    cannot decode: an answer built on a skipped record could be wrong."""
    image = _replay(Path(metadata_dir), offset)
    topic_id = image.topic_ids.get(topic)
    state = image.parts.get((topic_id, partition)) if topic_id else None
    if state is None:
        return None
    return LeaderAt(topic, topic_id, partition, state["leader"], list(state["isr"]),
                    state["changed_at"], state["source"])  # fmt: skip


def final_leaders(metadata_dir: str | Path) -> dict[tuple[str, int], LeaderAt]:
    """Every partition's leader once the whole metadata log is applied, by (topic, partition):
    one replay for all of them. Raises CorruptionError as partition_leader does."""
    image = _replay(Path(metadata_dir), None)
    names = {tid: name for name, tid in image.topic_ids.items()}
    return {
        (names[tid], part): LeaderAt(
            names[tid], tid, part, st["leader"], list(st["isr"]), st["changed_at"], st["source"]
        )  # fmt: skip
        for (tid, part), st in image.parts.items()
        if tid in names
    }


def topic_partitions(metadata_dir: str | Path, topic: str) -> list[int]:
    """The partitions of ``topic`` once the whole metadata log is applied (empty: no such
    topic). Raises CorruptionError on a record it cannot decode."""
    image = _replay(Path(metadata_dir), None)
    topic_id = image.topic_ids.get(topic)
    return sorted(p for tid, p in image.parts if tid == topic_id) if topic_id else []


def _replay(mdir: Path, offset: int | None) -> _Image:
    """The newest snapshot ending at or before ``offset + 1`` (any, for None), then the log's
    records through ``offset``."""
    image = _Image()
    start = 0
    snapshots = []
    for p in mdir.iterdir():
        k = F.file_kind(p)
        if k.kind == F.KRAFT_CHECKPOINT and not k.temp_suffix:
            end, _epoch = F.snapshot_id(p)
            if offset is None or end <= offset + 1:
                snapshots.append((end, p))
    if snapshots:
        start, snap = max(snapshots)
        for _, value in _records(snap, None):
            image.apply(_decode(value, snap), None, str(snap))
    for log in segment_logs(mdir):
        for off, value in _records(log, offset):
            if off >= start:
                image.apply(_decode(value, log), off, str(log))
    return image


def _decode(value: bytes | None, path: Path) -> dict:
    try:
        return decode_metadata(None, value)
    except CorruptionError as exc:
        raise exc.in_file(path) from None
