"""The rows `kseg offsets` answers with: a group as far as its records tell (its state, what it
is subscribed to) and each offset it committed, with where it came from; each turned into its
event (``group``, ``offset``)."""

from __future__ import annotations

from typing import NamedTuple

from kseg.format.accumulator import Accumulator

STABLE_MEMBER_STATE = 0  # MemberState.STABLE in ConsumerGroupCurrentMemberAssignmentValue


class Committed(NamedTuple):
    """One committed offset of a group, with where it came from (a value: expiry flags a copy,
    kseg.offsets.expiry)."""

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


class GroupMeta(Accumulator):
    """What a group's own records (not its offset commits) say: created with the first one, so a
    group that only commits offsets (a "simple" group, the many) carries none of it. Containers
    start as None and are made when a record fills them."""

    __slots__ = (
        "protocol_type",
        "protocol",
        "generation",
        "current_state_timestamp",
        "classic_members",
        "members",
        "member_epochs",
        "assignment_epoch",
        "regex_topics",
        "topology_topics",
        "share_topic_names",
    )

    def __init__(self) -> None:
        self.protocol_type: str | None = None  # classic: None when empty (a simple group)
        self.protocol: str | None = None
        self.generation: int | None = None  # classic generation, or other types' group epoch
        self.current_state_timestamp: int | None = None  # classic: when it entered its state
        self.classic_members: list | tuple = ()  # in a summary: one None per member
        self.members: dict[str, dict | None] | None = None  # KIP-848/932/1071 members (a
        # summary keeps their ids only: the values are None)
        self.member_epochs: dict[str, tuple[int, int]] | None = None  # epoch, state
        self.assignment_epoch: int | None = None
        self.regex_topics: dict[str, list[str]] | None = None  # regex -> resolved topics
        self.topology_topics: set[str] | None = None
        self.share_topic_names: dict[str, str] | None = None  # topic id -> name


NO_META = GroupMeta()  # what a group without group records reads (never changed)


class Group(Accumulator):
    """A group's state as far as its records tell: an accumulator the replay changes record by
    record (kseg.offsets.replay), so a plain class, not a value. Kept compact (a listing holds
    one per distinct group): its group records' state in ``meta`` (None for a simple group);
    ``offsets`` maps (topic, partition) to a Committed, or is, in a summary (kseg.offsets.replay's
    ``summary``: a listing, which shows counts), their count."""

    __slots__ = (
        "group",
        "group_type",
        "meta",
        "deleted_at",
        "last_commit_timestamp",
        "offsets",
        "coordinator",
    )

    def __init__(
        self, group: str, group_type: str = "classic", *, coordinator: str | None = None
    ) -> None:
        self.group = group
        self.group_type = group_type  # "classic" also for a "simple" group (offsets only)
        self.meta: GroupMeta | None = None  # None: no group record (only offsets) was seen
        self.deleted_at: int | None = None  # the record offset of its metadata tombstone
        self.last_commit_timestamp: int | None = None
        self.offsets: dict[tuple[str, int], Committed] | int = {}
        self.coordinator = coordinator  # the __consumer_offsets partition dir it was read from

    @property
    def has_metadata(self) -> bool:
        """A group record (not only offsets) was seen."""
        return self.meta is not None

    # the group records' state, as read (None or empty for a simple group)
    @property
    def protocol_type(self) -> str | None:
        return (self.meta or NO_META).protocol_type

    @property
    def protocol(self) -> str | None:
        return (self.meta or NO_META).protocol

    @property
    def generation(self) -> int | None:
        return (self.meta or NO_META).generation

    @property
    def current_state_timestamp(self) -> int | None:
        return (self.meta or NO_META).current_state_timestamp

    @property
    def classic_members(self) -> list | tuple:
        return (self.meta or NO_META).classic_members

    @property
    def members(self) -> dict:
        return (self.meta or NO_META).members or {}

    @property
    def member_epochs(self) -> dict:
        return (self.meta or NO_META).member_epochs or {}

    @property
    def assignment_epoch(self) -> int | None:
        return (self.meta or NO_META).assignment_epoch

    @property
    def regex_topics(self) -> dict:
        return (self.meta or NO_META).regex_topics or {}

    @property
    def topology_topics(self) -> set:
        return (self.meta or NO_META).topology_topics or set()

    @property
    def share_topic_names(self) -> dict:
        return (self.meta or NO_META).share_topic_names or {}

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
            "offsets": self.offsets if type(self.offsets) is int else len(self.offsets),
            "last_commit_timestamp": self.last_commit_timestamp,
            "deleted": self.deleted_at is not None,
            "coordinator_partition": self.coordinator,
        }
