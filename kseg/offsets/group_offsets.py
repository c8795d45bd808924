"""What a consumer group had committed, offline: `__consumer_offsets` replayed as Kafka's group
coordinator loads it (group-coordinator's OffsetMetadataManager and GroupMetadataManager
``replay``; the Scala GroupMetadataManager of Kafka < 4 loads the same way).

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
- "as of T": a record counts when its log timestamp is <= T (the coordinator writes its records
  with the time it appends them; magic 0 records have no timestamp: an OffsetCommit's
  commitTimestamp stands in, any other record takes the time of the record before it).
- expiry (``cleanupExpiredOffsets``): an offset whose value carries an expireTimestamp (value
  v1) expires at it; otherwise the group's OffsetExpirationCondition decides with
  ``offsets.retention.ms``: a classic group with a protocol type that is Empty counts from
  when it became Empty (its currentStateTimestamp; the commit timestamp when the record has
  none), a Stable classic "consumer" group, a group without protocol type ("simple"), a
  consumer group and a streams group count from the commit timestamp; only topics the group
  is not subscribed to expire, and never a partition with a pending transactional commit.
  Such offsets are reported with ``expired`` (the coordinator writes their tombstones at its
  next check, every ``offsets.retention.check.interval.ms``), never silently dropped.
- the coordinator partition of a group is ``abs(javaStringHashCode(group)) % partitions``
  (``Utils.abs``: Integer.MIN_VALUE gives 0). The partition count of `__consumer_offsets` is
  known only from KRaft metadata (its PartitionRecords in `__cluster_metadata`); without it
  (ZooKeeper-era data dirs) every `__consumer_offsets` partition present is read: partition
  dirs found are no proof of the count, a broker holds only its replicas.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kseg.format.errors import CorruptionError
from kseg.outcome import Outcome
from kseg.storage import files as F
from kseg.storage.partition import Partition
from kseg.storage.tree import Selection

TOPIC = "__consumer_offsets"
SHARE_STATE_TOPIC = "__share_group_state"
METADATA_TOPIC = "__cluster_metadata"
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes = 10080 since Kafka 2.0
NO_PRODUCER_ID = -1

# record type -> group type (kseg.format.schemas.group)
GROUP_TYPE = {2: "classic", **dict.fromkeys((3, 4, 5, 6, 7, 8, 16), "consumer"),
              **dict.fromkeys(range(9, 16), "share"),
              **dict.fromkeys(range(17, 24), "streams")}  # fmt: skip
METADATA_RECORD = {2: "classic", 3: "consumer", 11: "share", 17: "streams"}
MEMBER_RECORD = {5: "consumer", 10: "share", 19: "streams"}
MEMBER_ASSIGNMENT = {8: "consumer", 14: "share", 22: "streams"}
TARGET_ASSIGNMENT_METADATA = {6: "consumer", 12: "share", 20: "streams"}
STABLE_MEMBER_STATE = 0  # MemberState.STABLE in ConsumerGroupCurrentMemberAssignmentValue


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: 31*h + c over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % groupMetadataTopicPartitionCount``;
    Utils.abs(Integer.MIN_VALUE) is 0, not Math.abs's negative number."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(slots=True)
class Committed:
    """One committed offset of a group, with where it came from."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None  # OffsetCommitValue v1's explicit expiry (None: not given)
    file: str
    batch_base_offset: int
    record_offset: int  # its offset in __consumer_offsets
    transactional: bool = False
    expired: bool = False
    expired_reason: str | None = None

    def event(self, group: str) -> dict:
        return {
            "type": "offset",
            "group": group,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "expire_timestamp": self.expire_timestamp,
            "transactional": self.transactional,
            "expired": self.expired,
            "expired_reason": self.expired_reason,
            "file": self.file,
            "batch_base_offset": self.batch_base_offset,
            "record_offset": self.record_offset,
        }


@dataclass(slots=True)
class Group:
    """A group's state as far as its records tell."""

    group: str
    group_type: str = "classic"  # "classic" also for a "simple" group (offsets only)
    protocol_type: str | None = None  # classic: None when empty (a simple group)
    protocol: str | None = None
    generation: int | None = None  # classic generation, or the group epoch of other types
    current_state_timestamp: int | None = None  # classic: when it entered its state
    classic_members: list = field(default_factory=list)
    members: dict[str, dict] = field(default_factory=dict)  # KIP-848/932/1071 members
    member_epochs: dict[str, tuple[int, int]] = field(default_factory=dict)  # epoch, state
    assignment_epoch: int | None = None
    regex_topics: dict[str, list[str]] = field(default_factory=dict)  # regex -> resolved topics
    topology_topics: set[str] = field(default_factory=set)
    share_topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name
    has_metadata: bool = False  # a group record (not only offsets) was seen
    deleted_at: int | None = None  # the record offset of its metadata tombstone
    last_record_timestamp: int | None = None
    last_commit_timestamp: int | None = None
    offsets: dict[tuple[str, int], Committed] = field(default_factory=dict)
    coordinator: str | None = None  # the __consumer_offsets partition dir it was read from

    @property
    def member_count(self) -> int:
        return len(self.classic_members) if self.group_type == "classic" else len(self.members)

    @property
    def state(self) -> str | None:
        """The state the coordinator loads the group in (None: not derivable offline)."""
        if self.deleted_at is not None and not self.offsets:
            return "Dead"
        if self.group_type == "classic":
            # ClassicGroup / GroupMetadata.loadGroup: Empty without members, else Stable
            return "Stable" if self.classic_members else "Empty"
        if not self.members:
            return "Empty"
        if self.group_type == "share":
            return "Stable"  # ShareGroup: Empty or Stable
        if self.group_type == "streams":
            return None  # NotReady/Assigning/Reconciling/Stable need the topology validation
        # ConsumerGroup.maybeUpdateGroupState
        gen, assigned = self.generation, self.assignment_epoch
        if gen is not None and assigned is not None and gen > assigned:
            return "Assigning"
        for epoch, state in (self.member_epochs.get(m, (None, None)) for m in self.members):
            if epoch != self.assignment_epoch or state != STABLE_MEMBER_STATE:
                return "Reconciling"
        return "Stable"

    def subscribed_topics(self) -> set[str] | None:
        """Topics the group is subscribed to (None: not known, as Kafka's Optional.empty)."""
        if self.group_type == "classic":
            if self.protocol_type != "consumer":
                return None
            topics: set[str] = set()
            for m in self.classic_members:
                sub = m.get("subscription")
                if not isinstance(sub, dict):
                    return None  # not decodable: the coordinator would not know either
                topics.update(sub.get("topics") or [])
            return topics
        if self.group_type == "consumer":
            topics = {t for resolved in self.regex_topics.values() for t in resolved}
            for m in self.members.values():
                topics.update(m.get("subscribed_topic_names") or [])
            return topics
        if self.group_type == "streams":
            return set(self.topology_topics)
        return set()

    def event(self) -> dict:
        return {
            "type": "group",
            "group": self.group,
            "group_type": self.group_type,
            "state": self.state,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "generation": self.generation,
            "members": self.member_count,
            "offsets": len(self.offsets),
            "last_commit_timestamp": self.last_commit_timestamp,
            "deleted": self.deleted_at is not None,
            "coordinator_partition": self.coordinator,
        }


class _Replay:
    """One `__consumer_offsets` partition replayed into groups (only ``only`` when given)."""

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


def mark_expired(g: Group, at: int, retention_ms: int, pending: set[tuple[str, int]]) -> None:
    """Flag the offsets the coordinator's cleanupExpiredOffsets would remove at ``at``."""
    base = None  # what the retention counts from: "commit" or a fixed timestamp
    if g.group_type == "classic":
        if g.protocol_type is None:
            base = "commit"  # a simple group
        elif g.state == "Empty":
            base = g.current_state_timestamp if g.current_state_timestamp is not None else "commit"
        elif g.protocol_type == "consumer" and g.state == "Stable":
            base = "commit" if g.subscribed_topics() is not None else None
    elif g.group_type in ("consumer", "streams"):
        base = "commit"
    subscribed = g.subscribed_topics() or set()
    for (topic, part), c in g.offsets.items():
        c.expired, c.expired_reason = False, None
        if topic in subscribed or (topic, part) in pending:
            continue
        if c.expire_timestamp is not None:
            if at >= c.expire_timestamp:
                c.expired = True
                c.expired_reason = "expire_timestamp (OffsetCommit value v1) passed"
            continue
        if base is None:
            continue
        since = c.commit_timestamp if base == "commit" else base
        if at - since >= retention_ms:
            c.expired = True
            c.expired_reason = (
                "retention passed since the commit"
                if base == "commit"
                else "retention passed since the group became Empty"
            )


# --- where the records are ----------------------------------------------------------------


@dataclass(slots=True)
class PartitionCount:
    count: int | None
    source: str  # how it was found (or why not)


def partition_count(sel: Selection) -> PartitionCount:
    """The partition count of `__consumer_offsets` from KRaft metadata under the roots (the
    PartitionRecords of its topic id); unknown without it."""
    from kseg.offsets.leaders import topic_partitions

    meta = [t.partition_dir for t in sel.targets() if _topic_of(t.partition_dir) == METADATA_TOPIC]
    for mdir in meta:
        try:
            parts = topic_partitions(mdir, TOPIC)
        except (CorruptionError, OSError) as exc:
            return PartitionCount(None, f"KRaft metadata {mdir} unreadable ({exc})")
        if parts:
            return PartitionCount(len(parts), f"KRaft metadata in {mdir}")
        return PartitionCount(None, f"KRaft metadata in {mdir} has no {TOPIC} topic")
    return PartitionCount(None, "no KRaft metadata (__cluster_metadata-0) under the roots")


def _topic_of(pdir: Path) -> str | None:
    name = F.parse_partition_dir(pdir.name)
    return name.topic if name is not None and name.state is None else None


def _offsets_replicas(sel: Selection) -> dict[int, list[Path]]:
    out: dict[int, list[Path]] = {}
    for t in sel.targets():
        name = F.parse_partition_dir(t.partition_dir.name)
        if name is not None and name.state is None and name.topic == TOPIC:
            out.setdefault(name.partition, []).append(t.partition_dir)
    return out


def _cluster_ids(roots: set[Path]) -> dict[Path, str]:
    """meta.properties' cluster.id of each root that names one."""
    from kseg.format.checkpoint import read_properties

    out = {}
    for r in roots:
        try:
            cid = read_properties((r / "meta.properties").read_bytes()).get("cluster.id")
        except (OSError, CorruptionError, ValueError):
            cid = None
        if cid:
            out[r] = cid
    return out


def _best_replica(replicas: list[Path]) -> tuple[Path, str | None]:
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


# --- the run ------------------------------------------------------------------------------


class OffsetsRun:
    """``kseg offsets``: one group's committed offsets at ``at`` (``group``), or every group
    (``list_groups``). Events: ``group``, ``offset``, messages; what was found in ``outcome``."""

    def __init__(
        self,
        sel: Selection,
        *,
        group: str | None = None,
        at: int | None = None,
        now: int | None = None,
        retention_ms: int = DEFAULT_RETENTION_MS,
        lag: bool = False,
    ) -> None:
        self.sel = sel
        self.group_id = group
        self.at = at
        self.now = now  # None: expiry is judged at the end of the data (see expiry_time)
        self.retention_ms = retention_ms
        self.lag = lag
        self.outcome = Outcome.OK
        self.groups: dict[str, Group] = {}
        self.data_end = -1  # the latest record time in the partitions read
        # when expiry was judged, and why then (set by events())
        self.expiry_at: int | None = None
        self.expiry_basis = ""

    def expiry_time(self) -> tuple[int, str]:
        """When the coordinator's retention check is judged, and why then: at ``--at``; else at
        ``--now`` when given; else, offline, at the end of the data (the time of the last record
        in the `__consumer_offsets` partitions read: a copy is judged as of when it was taken,
        not against today's clock, so an old copy does not come out all expired); the clock only
        when no record carries a time."""
        import time

        if self.at is not None:
            return self.at, "--at"
        if self.now is not None:
            return self.now, "--now"
        if self.data_end >= 0:
            return self.data_end, f"the end of the data (the last record in {TOPIC})"
        return int(time.time() * 1000), f"the clock (no record in {TOPIC} carries a time)"

    # the __consumer_offsets partitions to read, and what to say about the choice
    def plan(self) -> tuple[list[Path], list[str]]:
        from kseg.storage.tree import NOTHING_FOUND, InputError

        replicas = _offsets_replicas(self.sel)
        roots = ", ".join(str(r) for r in self.sel.log_dirs) or "the input"
        if not replicas:
            raise InputError(
                NOTHING_FOUND, roots, f"no {TOPIC} partition directory found: nothing to replay"
            )
        clusters = _cluster_ids({d.parent for ds in replicas.values() for d in ds})
        if len(set(clusters.values())) > 1:
            said = ", ".join(f"{r}: {c}" for r, c in sorted(clusters.items()))
            raise InputError(
                "usage",
                roots,
                f"the roots belong to different clusters ({said}); their {TOPIC} partitions are "
                "not replicas of each other: give the roots of one cluster",
            )
        notes = []
        wanted = sorted(replicas)
        if self.group_id is not None:
            pc = partition_count(self.sel)
            if pc.count is not None:
                p = coordinator_partition(self.group_id, pc.count)
                notes.append(
                    f"group {self.group_id!r} maps to {TOPIC}-{p} "
                    f"({pc.count} partitions, from {pc.source})"
                )
                if p not in replicas:
                    raise InputError(
                        NOTHING_FOUND,
                        roots,
                        f"group {self.group_id!r} maps to {TOPIC}-{p} ({pc.count} partitions, "
                        f"from {pc.source}), which is not under the given roots; give the root "
                        "of a broker holding it",
                    )
                wanted = [p]
            else:
                notes.append(
                    f"partition count of {TOPIC} unknown ({pc.source}): reading every "
                    f"{TOPIC} partition present ({len(replicas)})"
                )
        dirs = []
        for p in wanted:
            best, note = _best_replica(replicas[p])
            dirs.append(best)
            if note:
                notes.append(note)
        return dirs, notes

    def events(self) -> Iterator[dict]:
        dirs, notes = self.plan()
        for n in notes:
            yield {"type": "notice", "message": n}
        pending_parts: dict[str, set[tuple[str, int]]] = {}
        for pdir in dirs:
            replay = _Replay(self.at, self.group_id)
            yield from self._replay(pdir, replay)
            for gid, g in replay.groups.items():
                g.coordinator = pdir.name
                if gid in self.groups and self.groups[gid].offsets:
                    # the same group in two partitions: only after a partition count change
                    yield {
                        "type": "notice",
                        "message": f"group {gid!r} has records in {self.groups[gid].coordinator} "
                        f"and {pdir.name} (was the partition count of {TOPIC} changed?); "
                        f"showing {pdir.name}'s",
                    }
                self.groups[gid] = g
            for pend in replay.pending.values():
                for gid, topic, part in pend:
                    pending_parts.setdefault(gid, set()).add((topic, part))
            self.data_end = max(self.data_end, replay.last_time)
        at, self.expiry_basis = self.expiry_time()
        self.expiry_at = at
        for gid, g in self.groups.items():
            mark_expired(g, at, self.retention_ms, pending_parts.get(gid, set()))
        if self.group_id is None:
            if not self.groups:
                read = ", ".join(d.name for d in dirs)
                yield {"type": "notice", "message": f"no group has a record in {read}"}
            for g in sorted(self.groups.values(), key=lambda g: g.group):
                yield g.event()
            return
        g = self.groups.get(self.group_id)
        if g is None:
            from kseg.storage.tree import NO_MATCH, InputError

            what = ", ".join(str(d) for d in dirs)
            from kseg.format.timestamps import with_iso

            when = f" at or before {with_iso(self.at)}" if self.at is not None else ""
            raise InputError(NO_MATCH, what, f"no record of group {self.group_id!r}{when}")
        shares: list[dict] = []
        if g.group_type == "share":
            shares = yield from self._share_state(g)
        if (pend := pending_parts.get(self.group_id)) is not None:
            yield {
                "type": "notice",
                "message": f"group {self.group_id!r}: transactional offset commits still "
                f"pending (no COMMIT/ABORT marker yet) for {len(pend)} partitions, not shown",
            }
        yield g.event()
        ends: dict[tuple[str, int], int] = {}
        if self.lag:
            ends = yield from self._log_ends(g)
        for key in sorted(g.offsets):
            ev = g.offsets[key].event(g.group)
            if self.lag:
                end = ends.get(key)
                ev["log_end_offset"] = end
                ev["lag"] = None if end is None else end - ev["offset"]
            yield ev
        yield from shares

    def reset_events(self) -> Iterator[dict]:
        """``reset`` rows (topic, partition, offset) for kafka-consumer-groups --reset-offsets
        --from-file: the group's committed offsets, without those the coordinator would have
        expired and those of internal topics (lookup.reset_csv: offsets has no --topic to select
        them), each said on stderr. A reset file never comes out empty with exit 0: when no row
        is left (every offset expired, or the group holds none, or only internal topics') one
        line says why and the status gets 16 (the question as asked, its time and retention,
        selects nothing to reset to)."""
        from kseg.format.timestamps import with_iso
        from kseg.offsets.reset_csv import for_reset_file

        seen: dict = {"offsets": 0, "left_out": [], "group": None}
        rows = 0
        for ev in for_reset_file(self._reset_rows(seen), None, takes_topic=False):
            rows += ev["type"] == "reset"
            yield ev
        left_out, offsets, group = seen["left_out"], seen["offsets"], seen["group"]
        if rows:
            for ev in left_out:
                yield {
                    "type": "notice",
                    "message": f"{ev['topic']}-{ev['partition']}: offset {ev['offset']} left out "
                    f"of the reset file: expired ({ev['expired_reason']})",
                }
            return
        self.outcome |= Outcome.USAGE
        gid = self.group_id
        if left_out and len(left_out) == offsets:
            why = sorted({ev["expired_reason"] for ev in left_out})
            message = (
                f"group {gid!r}: no reset file: every committed offset ({offsets}) had expired "
                f"({'; '.join(why)}) as of {self.expiry_basis} {with_iso(self.expiry_at)}; give "
                "--at before they expired, or the cluster's --retention"
            )
        else:
            what = "none is left"
            if offsets:
                what = "only internal topics' offsets are left, and no reset file names those"
            elif group is not None and group["group_type"] == "share":
                what = "a share group commits none"
            elif group is not None and group["deleted"]:
                what = "the group was deleted"
            message = f"group {gid!r}: no reset file: no committed offset ({what})"
        yield {"type": "failure", "message": message}

    def _reset_rows(self, seen: dict) -> Iterator[dict]:
        """The group's unexpired offsets as ``reset`` rows; counts what it saw into ``seen``."""
        for ev in self.events():
            if ev["type"] == "share_offset":
                yield {"type": "notice", "message": f"{ev['topic']}-{ev['partition']}: a share "
                       "group's share-partition start offset is no consumer offset: not in the "
                       "reset file"}  # fmt: skip
                continue
            if ev["type"] == "group":
                seen["group"] = ev
            if ev["type"] != "offset":
                if ev["type"] in ("failure", "notice"):
                    yield ev
                continue
            seen["offsets"] += 1
            if ev["expired"]:
                seen["left_out"].append(ev)
                continue
            yield {"type": "reset", "topic": ev["topic"], "partition": ev["partition"],
                   "offset": ev["offset"]}  # fmt: skip

    def _replay(self, pdir: Path, replay: _Replay) -> Iterator[dict]:
        from kseg.format.coordinator import consumer_offsets

        yield from self._walk(
            pdir, lambda batch, log: self._batch(batch, log, replay, consumer_offsets)
        )

    def _batch(self, batch, log: Path, replay: _Replay, decode) -> Iterator[dict]:
        from kseg.format.coordinator import consumer_offsets_group as group_of

        at = self.at
        pid = getattr(batch, "producer_id", NO_PRODUCER_ID)  # legacy messages: none
        if getattr(batch, "is_control", False):
            ctl = batch.control_record()
            ts = batch.max_timestamp
            replay.last_time = max(replay.last_time, ts)
            if ctl is None or (at is not None and ts > at):
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
            d = yield from self._decoded(decode, rec, batch, log)
            if d is None:
                continue
            ts = rec.timestamp
            if ts is None or ts < 0:  # magic 0: no timestamp
                ts = d.get("commit_timestamp", replay.last_time) if not d.get("tombstone") else (
                    replay.last_time)  # fmt: skip
            replay.last_time = max(replay.last_time, ts)
            if at is not None and ts > at:
                continue
            replay.apply(d, pid, (str(log), base, rec.offset), ts)

    def _share_state(self, g: Group) -> Iterator[dict]:
        """A share group's share-partition state from `__share_group_state` (every partition of
        it under the roots; only this group's records are kept): ShareSnapshot replaces a
        share-partition's state, ShareUpdate changes its start offset and leader epoch when it
        carries one (-1: unchanged) and adds state batches, a tombstone deletes it. Returns
        ``share_offset`` events: the share-partition start offset (SPSO), not a committed offset
        (share groups commit none); the in-flight state batches are not merged or shown."""
        from kseg.format.coordinator import share_group_state

        state: dict[tuple[str, int], dict] = {}
        names = dict(g.share_topic_names)
        replicas = {}
        for t in self.sel.targets():
            name = F.parse_partition_dir(t.partition_dir.name)
            if name is not None and name.state is None and name.topic == SHARE_STATE_TOPIC:
                replicas.setdefault(name.partition, []).append(t.partition_dir)
        if not replicas:
            yield {
                "type": "notice",
                "message": f"{g.group!r} is a share group: its share-partition state is in "
                f"{SHARE_STATE_TOPIC}, and no partition of it is under the roots",
            }
            return []
        for p in sorted(replicas):
            pdir, note = _best_replica(replicas[p])
            if note:
                yield {"type": "notice", "message": note}
            for rec, _pid, where, ts in (yield from self._records(pdir, share_group_state)):
                if rec.get("group_id") != g.group:
                    continue
                key = (rec["topic_id"], rec["partition"])
                if rec.get("tombstone"):
                    state.pop(key, None)
                elif rec["key_version"] == 0:  # ShareSnapshot
                    state[key] = {**rec, "where": where, "ts": ts}
                elif key in state:  # ShareUpdate: only on top of a snapshot
                    cur = state[key]
                    if rec["start_offset"] != -1:
                        cur["start_offset"] = rec["start_offset"]
                    if rec["leader_epoch"] != -1:
                        cur["leader_epoch"] = rec["leader_epoch"]
                    cur["where"], cur["ts"] = where, ts
        out = []
        for (tid, part), cur in sorted(state.items()):
            file, batch_base, offset = cur["where"]
            out.append({
                "type": "share_offset", "group": g.group, "topic": names.get(tid),
                "topic_id": tid, "partition": part, "start_offset": cur["start_offset"],
                "state_epoch": cur["state_epoch"], "leader_epoch": cur["leader_epoch"],
                "write_timestamp": cur["ts"], "file": file,
                "batch_base_offset": batch_base, "record_offset": offset,
            })  # fmt: skip
        return out

    def _records(self, pdir: Path, decode) -> Iterator[dict]:
        """Every decoded record of ``pdir`` at or before ``at``, as (record, producer id,
        (file, batch base offset, offset), timestamp); problems are yielded as failures and
        the list is the generator's return value."""
        got: list[tuple] = []

        def each(batch, log: Path) -> Iterator[dict]:
            if getattr(batch, "is_control", False):
                return
            for rec in batch.records():
                if self.at is not None and rec.timestamp > self.at:
                    continue
                d = yield from self._decoded(decode, rec, batch, log)
                if d is not None:
                    where = (str(log), batch.base_offset, rec.offset)
                    got.append((d, batch.producer_id, where, rec.timestamp))

        yield from self._walk(pdir, each)
        return got

    def _walk(self, pdir: Path, each: Callable[[Any, Path], Iterator[dict]]) -> Iterator[dict]:
        """``each(batch, log)`` over every batch of ``pdir``'s segments, in order. A partition or
        segment that cannot be read ends the walk with a failure (8); so does corruption (4):
        Kafka's recovery truncates there, so what follows is not loaded (the answer comes from the
        records before it, and says where)."""
        try:
            segments = Partition(pdir).segments
        except OSError as exc:
            self.outcome |= Outcome.UNREADABLE
            yield {"type": "failure", "message": f"{exc.filename or pdir}: {exc.strerror or exc}"}
            return
        for seg in segments:
            try:
                for batch in seg.batches(validate=True):
                    yield from each(batch, seg.log)
            except CorruptionError as exc:
                self.outcome |= Outcome.INVALID_DATA
                yield {"type": "failure", "message": f"{exc.in_file(seg.log)}; records after it "
                       "are not replayed (Kafka's recovery would truncate there)"}  # fmt: skip
                return
            except OSError as exc:
                self.outcome |= Outcome.UNREADABLE
                yield {"type": "failure", "message": f"{exc.filename or seg.log}: {exc.strerror}"}
                return

    def _decoded(self, decode, rec, batch, log: Path) -> Generator[dict, None, dict | None]:
        """``decode(key, value)`` of one record; a record that does not decode is a failure (4)
        and None: it is skipped, the replay goes on."""
        try:
            return decode(rec.key, rec.value)
        except CorruptionError as exc:
            self.outcome |= Outcome.INVALID_DATA
            exc.position, exc.offset = batch.position, rec.offset
            yield {"type": "failure", "message": f"{exc.in_file(log)} (record at offset "
                   f"{rec.offset} skipped)"}  # fmt: skip
            return None

    def _log_ends(self, g: Group) -> Iterator[dict]:
        """Log end offset at ``at`` of each topic-partition the group committed, from the data
        dir's replicas (greatest answer across replicas)."""
        from kseg.seek.seek import LATEST, seek_time

        found: dict[tuple[str, int], list[Path]] = {}
        for t in self.sel.targets():
            name = F.parse_partition_dir(t.partition_dir.name)
            if name is not None and name.state is None:
                found.setdefault((name.topic, name.partition), []).append(t.partition_dir)
        out: dict[tuple[str, int], int] = {}
        for key in g.offsets:
            best = None
            for pdir in found.get(key, []):
                res = seek_time(pdir, LATEST) if self.at is None else seek_time(pdir, self.at + 1)
                if res.error is None and res.offset is None:
                    res = seek_time(pdir, LATEST)  # nothing after T: the log end
                if res.error is not None:
                    self.outcome |= Outcome.INVALID_DATA
                    yield {"type": "failure", "message": f"{pdir}: log end: {res.error}"}
                    continue
                best = res.offset if best is None else max(best, res.offset)
            if best is not None:
                out[key] = best
        return out
