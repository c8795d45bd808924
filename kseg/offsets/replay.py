"""`__consumer_offsets` replayed as Kafka's group coordinator loads it (group-coordinator's
OffsetMetadataManager and GroupMetadataManager ``replay``; the Scala GroupMetadataManager of
Kafka < 4 loads the same way), one record at a time, into groups (kseg.offsets.groups).

Rules, each Kafka's:

- records apply in log order. An OffsetCommit value (record types 0/1) sets the group's offset
  for (topic, partition); a tombstone (null value) deletes it, and with it any pending
  transactional commit of that partition. Deleting a group (DeleteGroups, or expiry of every
  offset) writes a tombstone per offset, then the group's tombstone: a group tombstone itself
  removes the group, not its offsets (offsets left without a group load as a "simple" group).
- a commit in a batch with a producer id (a transactional offset commit, TxnOffsetCommit)
  is pending until that producer's end-transaction marker: COMMIT makes it the committed offset
  unless a commit with a greater record offset is already there (OffsetMetadataManager keeps the
  most recent by record offset); ABORT drops it. A pending commit is never answered.
- groups: classic (GroupMetadata, type 2), consumer (KIP-848, types 3-8 and 16), share
  (KIP-932, types 9-15: their share-partition offsets are in `__share_group_state`, not here)
  and streams (KIP-1071, types 17-23). A group exists from its first record until its
  metadata tombstone.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path

from kseg.offsets.as_of import counts_at, record_time
from kseg.offsets.groups import Committed, Group

NO_PRODUCER_ID = -1

# record type -> group type (kseg.format.schemas.group)
GROUP_TYPE = {2: "classic", **dict.fromkeys((3, 4, 5, 6, 7, 8, 16), "consumer"),
              **dict.fromkeys(range(9, 16), "share"),
              **dict.fromkeys(range(17, 24), "streams")}  # fmt: skip
METADATA_RECORD = {2: "classic", 3: "consumer", 11: "share", 17: "streams"}
MEMBER_RECORD = {5: "consumer", 10: "share", 19: "streams"}
MEMBER_ASSIGNMENT = {8: "consumer", 14: "share", 22: "streams"}
TARGET_ASSIGNMENT_METADATA = {6: "consumer", 12: "share", 20: "streams"}


class Replay:
    """One `__consumer_offsets` partition replayed into groups (only ``only`` when given), as of
    ``at``: an accumulator, changed batch by batch (replay_batch)."""

    __slots__ = ("at", "only", "groups", "pending", "last_time")

    def __init__(self, at: int | None, only: str | None) -> None:
        self.at = at
        self.only = only
        self.groups: dict[str, Group] = {}
        # producer id -> {(group, topic, partition): Committed}
        self.pending: dict[int, dict[tuple[str, str, int], Committed]] = {}
        self.last_time = -1

    def group(self, gid: str, rtype: int) -> Group:
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = Group(gid, GROUP_TYPE.get(rtype, "classic"))
        return g

    def end_txn(self, producer_id: int, commit: bool) -> None:
        pending = self.pending.pop(producer_id, None)
        if not pending or not commit:
            return
        for (gid, topic, part), c in pending.items():
            g = self.group(gid, 1)
            old = g.offsets.get((topic, part))
            if old is None or c.record_offset > old.record_offset:
                g.offsets[(topic, part)] = c
                g.last_commit_timestamp = max(g.last_commit_timestamp or -1, c.commit_timestamp)

    def apply(self, rec: dict, producer_id: int, where: tuple[str, int, int], ts: int) -> None:
        rtype = rec["key_version"]
        gid = rec.get("group") if rtype <= 2 else rec.get("group_id")
        if self.only is not None and gid != self.only:
            return
        file, batch_base, offset = where
        tomb = rec.get("tombstone", False)
        if rtype in (0, 1):
            key = (rec["topic"], rec["partition"])
            if tomb:
                g = self.groups.get(gid)
                if g is not None:
                    g.offsets.pop(key, None)
                    g.last_record_timestamp = ts
                for pend in self.pending.values():
                    pend.pop((gid, *key), None)
                return
            g = self.group(gid, rtype)
            g.last_record_timestamp = ts
            expire = rec.get("expire_timestamp", -1)
            c = Committed(
                rec["topic"], rec["partition"], rec["offset"], rec.get("leader_epoch", -1),
                rec.get("metadata") or "", rec["commit_timestamp"],
                None if expire == -1 else expire, file, batch_base, offset,
                transactional=producer_id != NO_PRODUCER_ID,
            )  # fmt: skip
            if producer_id == NO_PRODUCER_ID:
                g.offsets[key] = c
                g.last_commit_timestamp = max(g.last_commit_timestamp or -1, c.commit_timestamp)
            else:
                self.pending.setdefault(producer_id, {})[(gid, *key)] = c
            return
        kind = GROUP_TYPE.get(rtype)
        if kind is None:
            return
        if tomb and rtype in METADATA_RECORD:
            g = self.groups.get(gid)
            if g is not None:
                # removeGroup: the group goes; offsets left (if any) load as a simple group
                offsets, last = g.offsets, g.last_commit_timestamp
                g = self.groups[gid] = Group(gid, "classic", coordinator=g.coordinator)
                g.offsets, g.last_commit_timestamp = offsets, last
                g.deleted_at, g.last_record_timestamp = offset, ts
            return
        g = self.group(gid, rtype)
        if not g.has_metadata:  # a simple (offsets-only) or deleted group becomes a typed one
            g.group_type = kind
        g.has_metadata = True
        g.deleted_at = None
        g.last_record_timestamp = ts
        self._group_record(g, rtype, rec, tomb)

    def _group_record(self, g: Group, rtype: int, rec: dict, tomb: bool) -> None:
        if rtype == 2:
            pt = rec.get("protocol_type") or None
            g.protocol_type, g.protocol = pt, rec.get("protocol")
            g.generation = rec.get("generation")
            cst = rec.get("current_state_timestamp", -1)
            g.current_state_timestamp = None if cst == -1 else cst
            g.classic_members = list(rec.get("members") or [])
        elif rtype in METADATA_RECORD:
            g.generation = rec.get("epoch")
            g.protocol_type = g.group_type
        elif rtype in MEMBER_RECORD:
            if tomb:
                g.members.pop(rec["member_id"], None)
            else:
                g.members[rec["member_id"]] = rec
        elif rtype in MEMBER_ASSIGNMENT:
            if tomb:
                g.member_epochs.pop(rec["member_id"], None)
            else:
                g.member_epochs[rec["member_id"]] = (rec["member_epoch"], rec["state"])
        elif rtype in TARGET_ASSIGNMENT_METADATA:
            g.assignment_epoch = None if tomb else rec["assignment_epoch"]
        elif rtype == 16:  # ConsumerGroupRegularExpression: a regex and the topics it resolved
            if tomb:
                g.regex_topics.pop(rec["regular_expression"], None)
            else:
                g.regex_topics[rec["regular_expression"]] = list(rec.get("topics") or [])
        elif rtype == 15 and not tomb:  # ShareGroupStatePartitionMetadata: topic names
            for key in ("initializing_topics", "initialized_topics", "deleting_topics"):
                for t in rec.get(key) or []:
                    g.share_topic_names[t["topic_id"]] = t["topic_name"]
        elif rtype == 23 and not tomb:
            topics: set[str] = set()
            for sub in rec.get("subtopologies") or []:
                topics.update(sub.get("source_topics") or [])
                topics.update(t["name"] for t in sub.get("repartition_source_topics") or [])
            g.topology_topics = topics


def replay_batch(
    replay: Replay,
    batch,
    log: Path,
    decode,
    decoded: Callable[..., Generator[dict, None, dict | None]],
) -> Iterator[dict]:
    """Apply one batch of a `__consumer_offsets` segment to ``replay``: its records as of
    ``replay.at`` (kseg.offsets.as_of), or its end-transaction marker; another group's records
    are not decoded when ``replay.only`` names one. ``decoded(decode, record, batch, log)``
    decodes one record (None, after yielding a failure, for one that does not)."""
    from kseg.format.coordinator import consumer_offsets_group as group_of

    at = replay.at
    pid = getattr(batch, "producer_id", NO_PRODUCER_ID)  # legacy messages: none
    if getattr(batch, "is_control", False):
        ctl = batch.control_record()
        ts = batch.max_timestamp
        replay.last_time = max(replay.last_time, ts)
        if ctl is None or not counts_at(ts, at):
            return
        if ctl.is_end_txn:
            replay.end_txn(pid, ctl.type_name == "COMMIT")
        return
    base = batch.base_offset
    only = replay.only
    for rec in batch.records():
        if only is not None:
            gid = group_of(rec.key)
            if gid is not None and gid != only:
                if rec.timestamp is not None and rec.timestamp >= 0:
                    replay.last_time = max(replay.last_time, rec.timestamp)
                continue  # another group's record: not decoded
        d = yield from decoded(decode, rec, batch, log)
        if d is None:
            continue
        ts = record_time(rec.timestamp, d, replay.last_time)
        replay.last_time = max(replay.last_time, ts)
        if not counts_at(ts, at):
            continue
        replay.apply(d, pid, (str(log), base, rec.offset), ts)
