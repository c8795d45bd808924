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

from kseg.format.headroom import check
from kseg.offsets.as_of import counts_at, record_time
from kseg.offsets.groups import Committed, Group, GroupMeta

NO_PRODUCER_ID = -1
HEADROOM_EVERY = (1 << 13) - 1  # a mask: kseg.format.headroom is asked every 8192 records

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
    ``at``: an accumulator, changed batch by batch (replay_batch).

    Its state grows with the groups kept, so it is kept small: another group's records are not
    kept when ``only`` names one; topic-partition keys and file names are shared, not one copy
    per record; and a ``summary`` (a listing: one row per group, counts) keeps of each committed
    offset its record offset only (what a later transaction marker compares), and of each member
    its id only."""

    __slots__ = (
        "at", "only", "summary", "groups", "committed", "pending", "last_time", "seen", "_keys",
        "_files",
    )  # fmt: skip

    def __init__(self, at: int | None, only: str | None, *, summary: bool = False) -> None:
        self.at = at
        self.only = only
        self.summary = summary
        self.groups: dict[str, Group] = {}
        # a summary's committed offsets: (group, (topic, partition)) -> record offset (a
        # group's ``offsets`` is then their count: one dict for all, not one per group)
        self.committed: dict[tuple[str, tuple[str, int]], int] = {}
        # producer id -> {(group, topic, partition): Committed, or (record offset, commit time)}
        self.pending: dict[int, dict[tuple[str, str, int], Committed | tuple[int, int]]] = {}
        self.last_time = -1
        self.seen = 0  # records read: every HEADROOM_EVERY + 1, the address space is checked
        self._keys: dict[tuple[str, int], tuple[str, int]] = {}  # one (topic, partition) each
        self._files: dict[str, str] = {}

    def group(self, gid: str, rtype: int) -> Group:
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = Group(gid, GROUP_TYPE.get(rtype, "classic"))
            if self.summary:
                g.offsets = 0
        return g

    def file_name(self, log: Path) -> str:
        """``str(log)``, one string per file (every Committed of it shares it)."""
        name = str(log)
        return self._files.setdefault(name, name)

    def end_txn(self, producer_id: int, commit: bool) -> None:
        pending = self.pending.pop(producer_id, None)
        if not pending or not commit:
            return
        for (gid, topic, part), c in pending.items():
            g = self.group(gid, 1)
            if self.summary:  # (record offset, commit timestamp)
                record_offset, commit_ts = c
                key = (g.group, self._keys.setdefault((topic, part), (topic, part)))
                old = self.committed.get(key)
                if old is None or record_offset > old:
                    g.offsets += old is None
                    self.committed[key] = record_offset
                    g.last_commit_timestamp = max(g.last_commit_timestamp or -1, commit_ts)
                continue
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
            key = self._keys.setdefault(key, key)
            if tomb:
                g = self.groups.get(gid)
                if g is not None and not self.summary:
                    g.offsets.pop(key, None)
                elif g is not None and self.committed.pop((g.group, key), None) is not None:
                    g.offsets -= 1
                for pend in self.pending.values():
                    pend.pop((gid, *key), None)
                return
            g = self.group(gid, rtype)
            commit_ts = rec["commit_timestamp"]
            if self.summary:
                c = offset if producer_id == NO_PRODUCER_ID else (offset, commit_ts)
            else:
                expire = rec.get("expire_timestamp", -1)
                c = Committed(
                    key[0], key[1], rec["offset"], rec.get("leader_epoch", -1),
                    rec.get("metadata") or "", commit_ts,
                    None if expire == -1 else expire, file, batch_base, offset,
                    transactional=producer_id != NO_PRODUCER_ID,
                )  # fmt: skip
            if producer_id == NO_PRODUCER_ID:
                if self.summary:
                    n = len(self.committed)
                    self.committed[(g.group, key)] = c
                    g.offsets += len(self.committed) - n  # 1: a partition it had not committed
                else:
                    g.offsets[key] = c
                g.last_commit_timestamp = max(g.last_commit_timestamp or -1, commit_ts)
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
                g = self.groups[gid] = Group(g.group, "classic", coordinator=g.coordinator)
                g.offsets, g.last_commit_timestamp = offsets, last
                g.deleted_at = offset
            return
        g = self.group(gid, rtype)
        if g.meta is None:  # a simple (offsets-only) or deleted group becomes a typed one
            g.group_type = kind
            g.meta = GroupMeta()
        g.deleted_at = None
        self._group_record(g.meta, g.group_type, rtype, rec, tomb)

    def _group_record(self, m: GroupMeta, kind: str, rtype: int, rec: dict, tomb: bool) -> None:
        if rtype == 2:
            pt = rec.get("protocol_type") or None
            m.protocol_type, m.protocol = pt, rec.get("protocol")
            m.generation = rec.get("generation")
            cst = rec.get("current_state_timestamp", -1)
            m.current_state_timestamp = None if cst == -1 else cst
            members = rec.get("members") or ()
            m.classic_members = (None,) * len(members) if self.summary else list(members)
        elif rtype in METADATA_RECORD:
            m.generation = rec.get("epoch")
            m.protocol_type = kind
        elif rtype in MEMBER_RECORD:
            if tomb:
                if m.members:
                    m.members.pop(rec["member_id"], None)
            else:
                m.members = m.members or {}
                m.members[rec["member_id"]] = None if self.summary else rec
        elif rtype in MEMBER_ASSIGNMENT:
            if tomb:
                if m.member_epochs:
                    m.member_epochs.pop(rec["member_id"], None)
            else:
                m.member_epochs = m.member_epochs or {}
                m.member_epochs[rec["member_id"]] = (rec["member_epoch"], rec["state"])
        elif rtype in TARGET_ASSIGNMENT_METADATA:
            m.assignment_epoch = None if tomb else rec["assignment_epoch"]
        elif self.summary:
            return  # below: what only expiry and share offsets read (a listing shows neither)
        elif rtype == 16:  # ConsumerGroupRegularExpression: a regex and the topics it resolved
            if tomb:
                if m.regex_topics:
                    m.regex_topics.pop(rec["regular_expression"], None)
            else:
                m.regex_topics = m.regex_topics or {}
                m.regex_topics[rec["regular_expression"]] = list(rec.get("topics") or [])
        elif rtype == 15 and not tomb:  # ShareGroupStatePartitionMetadata: topic names
            for key in ("initializing_topics", "initialized_topics", "deleting_topics"):
                for t in rec.get(key) or []:
                    m.share_topic_names = m.share_topic_names or {}
                    m.share_topic_names[t["topic_id"]] = t["topic_name"]
        elif rtype == 23 and not tomb:
            topics: set[str] = set()
            for sub in rec.get("subtopologies") or []:
                topics.update(sub.get("source_topics") or [])
                topics.update(t["name"] for t in sub.get("repartition_source_topics") or [])
            m.topology_topics = topics


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
    file = replay.file_name(log)
    for rec in batch.records():
        replay.seen += 1
        if not replay.seen & HEADROOM_EVERY:
            check("the replay of __consumer_offsets")
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
        replay.apply(d, pid, (file, base, rec.offset), ts)
