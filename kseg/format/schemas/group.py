"""`__consumer_offsets` records (Kafka's group-coordinator/src/main/resources/common/message/).

A record's key is ``int16 type`` + the key schema at version 0 (never flexible); its value is
``int16 version`` + the value schema (flexible from the version given). ``KEYS[type]`` and
``VALUES[type]`` give the pair; types 0 and 1 are both OffsetCommit (key versions 0 and 1).
Streams groups (types 17-23, KIP-1071, early access in Kafka 4.1) are transcribed from the newest
definitions found in Kafka's history; no real 4.1 broker record has checked them yet.
"""

from __future__ import annotations

from kseg.format.schema import f, schema


def _key(name: str, *fields):
    return schema(name, "0", None, *fields)


_GROUP = f("GroupId string 0+")
_MEMBER = f("MemberId string 0+")
_TOPIC_PARTITIONS = (f("TopicId uuid 0+"), f("Partitions []int32 0+"))

_OFFSET_COMMIT_KEY = _key("OffsetCommitKey", f("group string 0+"), f("topic string 0+"),
                          f("partition int32 0+"))  # fmt: skip
_OFFSET_COMMIT_VALUE = schema("OffsetCommitValue", "0-4", "4+",
    f("offset int64 0+"),
    f("leaderEpoch int32 3+", default=-1),
    f("metadata string 0+"),
    f("commitTimestamp int64 0+"),
    f("expireTimestamp int64 1", default=-1),
    # Tagged fields of later Kafkas (e.g. a topic id) are not declared: no definition of them
    # could be checked, so they are shown raw under unknown_tagged_fields, never guessed.
)  # fmt: skip

KEYS = {
    0: _OFFSET_COMMIT_KEY,
    1: _OFFSET_COMMIT_KEY,
    2: _key("GroupMetadataKey", f("group string 0+")),
    3: _key("ConsumerGroupMetadataKey", _GROUP),
    4: _key("ConsumerGroupPartitionMetadataKey", _GROUP),
    5: _key("ConsumerGroupMemberMetadataKey", _GROUP, _MEMBER),
    6: _key("ConsumerGroupTargetAssignmentMetadataKey", _GROUP),
    7: _key("ConsumerGroupTargetAssignmentMemberKey", _GROUP, _MEMBER),
    8: _key("ConsumerGroupCurrentMemberAssignmentKey", _GROUP, _MEMBER),
    9: _key("ShareGroupPartitionMetadataKey", _GROUP),
    10: _key("ShareGroupMemberMetadataKey", _GROUP, _MEMBER),
    11: _key("ShareGroupMetadataKey", _GROUP),
    12: _key("ShareGroupTargetAssignmentMetadataKey", _GROUP),
    13: _key("ShareGroupTargetAssignmentMemberKey", _GROUP, _MEMBER),
    14: _key("ShareGroupCurrentMemberAssignmentKey", _GROUP, _MEMBER),
    15: _key("ShareGroupStatePartitionMetadataKey", _GROUP),
    16: _key("ConsumerGroupRegularExpressionKey", _GROUP, f("RegularExpression string 0+")),
    17: _key("StreamsGroupMetadataKey", _GROUP),
    18: _key("StreamsGroupPartitionMetadataKey", _GROUP),
    19: _key("StreamsGroupMemberMetadataKey", _GROUP, _MEMBER),
    20: _key("StreamsGroupTargetAssignmentMetadataKey", _GROUP),
    21: _key("StreamsGroupTargetAssignmentMemberKey", _GROUP, _MEMBER),
    22: _key("StreamsGroupCurrentMemberAssignmentKey", _GROUP, _MEMBER),
    23: _key("StreamsGroupTopologyKey", _GROUP),
}


def _tasks(name: str):
    return f(f"{name} []TaskIds 0+", f("SubtopologyId string 0+"), f("Partitions []int32 0+"))


def _topic_info(name: str):
    return f(f"{name} []TopicInfo 0+",
             f("Name string 0+"),
             f("Partitions int32 0+"),
             f("ReplicationFactor int16 0+"),
             f("TopicConfigs []TopicConfig 0+", f("key string 0+"), f("value string 0+")))  # fmt: skip


_PARTITION_METADATA = f("Topics []TopicMetadata 0+",
    f("TopicId uuid 0+"),
    f("TopicName string 0+"),
    f("NumPartitions int32 0+"),
    f("PartitionMetadata []PartitionMetadata 0+",
      f("Partition int32 0+"),
      f("Racks []string 0+")))  # fmt: skip

VALUES = {
    0: _OFFSET_COMMIT_VALUE,
    1: _OFFSET_COMMIT_VALUE,
    2: schema("GroupMetadataValue", "0-4", "4+",
        f("protocolType string 0+"),
        f("generation int32 0+"),
        f("protocol string 0+", nullable="0+"),
        f("leader string 0+", nullable="0+"),
        f("currentStateTimestamp int64 2+", default=-1),
        f("members []MemberMetadata 0+",
          f("memberId string 0+"),
          f("groupInstanceId string 3+", nullable="3+", default=None),
          f("clientId string 0+"),
          f("clientHost string 0+"),
          f("rebalanceTimeout int32 1+", default=-1),
          f("sessionTimeout int32 0+"),
          f("subscription bytes 0+"),
          f("assignment bytes 0+"))),
    3: schema("ConsumerGroupMetadataValue", "0", "0+",
        f("Epoch int32 0+"),
        f("MetadataHash int64 0+", tag=0, default=0)),  # 4.1+ (KIP-1101)
    4: schema("ConsumerGroupPartitionMetadataValue", "0", "0+", _PARTITION_METADATA),
    5: schema("ConsumerGroupMemberMetadataValue", "0", "0+",
        f("InstanceId string 0+", nullable="0+"),
        f("RackId string 0+", nullable="0+"),
        f("ClientId string 0+"),
        f("ClientHost string 0+"),
        f("SubscribedTopicNames []string 0+"),
        f("SubscribedTopicRegex string 0+", nullable="0+"),
        f("RebalanceTimeoutMs int32 0+", default=-1),
        f("ServerAssignor string 0+", nullable="0+"),
        f("ClassicMemberMetadata ClassicMemberMetadata 0+",
          f("SessionTimeoutMs int32 0+"),
          f("SupportedProtocols []ClassicProtocol 0+",
            f("Name string 0+"),
            f("Metadata bytes 0+")),
          nullable="0+", tag=0, default=None)),
    6: schema("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
        f("AssignmentEpoch int32 0+")),
    7: schema("ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
        f("TopicPartitions []TopicPartition 0+", *_TOPIC_PARTITIONS)),
    8: schema("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
        f("MemberEpoch int32 0+"),
        f("PreviousMemberEpoch int32 0+"),
        f("State int8 0+"),
        f("AssignedPartitions []TopicPartitions 0+", *_TOPIC_PARTITIONS),
        f("PartitionsPendingRevocation []TopicPartitions 0+", *_TOPIC_PARTITIONS)),
    9: schema("ShareGroupPartitionMetadataValue", "0", "0+", _PARTITION_METADATA),
    10: schema("ShareGroupMemberMetadataValue", "0", "0+",
        f("RackId string 0+", nullable="0+"),
        f("ClientId string 0+"),
        f("ClientHost string 0+"),
        f("SubscribedTopicNames []string 0+")),
    11: schema("ShareGroupMetadataValue", "0", "0+",
        f("Epoch int32 0+"),
        f("MetadataHash int64 0+")),  # not tagged here (share groups are new in 4.1)
    12: schema("ShareGroupTargetAssignmentMetadataValue", "0", "0+",
        f("AssignmentEpoch int32 0+")),
    13: schema("ShareGroupTargetAssignmentMemberValue", "0", "0+",
        f("TopicPartitions []TopicPartition 0+", *_TOPIC_PARTITIONS)),
    14: schema("ShareGroupCurrentMemberAssignmentValue", "0", "0+",
        f("MemberEpoch int32 0+"),
        f("PreviousMemberEpoch int32 0+"),
        f("State int8 0+"),
        f("AssignedPartitions []TopicPartitions 0+", *_TOPIC_PARTITIONS)),
    15: schema("ShareGroupStatePartitionMetadataValue", "0", "0+",
        f("InitializingTopics []TopicPartitionsInfo 0+",
          f("TopicId uuid 0+"), f("TopicName string 0+"), f("Partitions []int32 0+")),
        f("InitializedTopics []TopicPartitionsInfo 0+",
          f("TopicId uuid 0+"), f("TopicName string 0+"), f("Partitions []int32 0+")),
        f("DeletingTopics []TopicInfo 0+",
          f("TopicId uuid 0+"), f("TopicName string 0+"))),
    16: schema("ConsumerGroupRegularExpressionValue", "0", "0+",
        f("Topics []string 0+"),
        f("Version int64 0+"),
        f("Timestamp int64 0+")),
    17: schema("StreamsGroupMetadataValue", "0", "0+",
        f("Epoch int32 0+"),
        f("MetadataHash int64 0+"),
        f("ValidatedTopologyEpoch int32 0+", tag=0, default=-1),
        f("AssignmentConfigs []AssignmentConfig 0+", f("Key string 0+"), f("Value string 0+"))),
    18: schema("StreamsGroupPartitionMetadataValue", "0", "0+", _PARTITION_METADATA),
    19: schema("StreamsGroupMemberMetadataValue", "0", "0+",
        f("InstanceId string 0+", nullable="0+"),
        f("RackId string 0+", nullable="0+"),
        f("ClientId string 0+"),
        f("ClientHost string 0+"),
        f("RebalanceTimeoutMs int32 0+", default=-1),
        f("TopologyEpoch int32 0+"),
        f("ProcessId string 0+"),
        f("UserEndpoint Endpoint 0+", f("Host string 0+"), f("Port uint16 0+"),
          nullable="0+", default=None),
        f("ClientTags []KeyValue 0+", f("Key string 0+"), f("Value string 0+"))),
    20: schema("StreamsGroupTargetAssignmentMetadataValue", "0", "0+",
        f("AssignmentEpoch int32 0+")),
    21: schema("StreamsGroupTargetAssignmentMemberValue", "0", "0+",
        *(_tasks(n) for n in ("ActiveTasks", "StandbyTasks", "WarmupTasks"))),
    22: schema("StreamsGroupCurrentMemberAssignmentValue", "0", "0+",
        f("MemberEpoch int32 0+"),
        f("PreviousMemberEpoch int32 0+"),
        f("State int8 0+"),
        *(_tasks(n) for n in ("ActiveTasks", "StandbyTasks", "WarmupTasks",
                              "ActiveTasksPendingRevocation", "StandbyTasksPendingRevocation",
                              "WarmupTasksPendingRevocation"))),
    23: schema("StreamsGroupTopologyValue", "0", "0+",
        f("Epoch int32 0+"),
        f("Subtopologies []Subtopology 0+",
          f("SubtopologyId string 0+"),
          f("SourceTopics []string 0+"),
          f("SourceTopicRegex []string 0+"),
          _topic_info("StateChangelogTopics"),
          f("RepartitionSinkTopics []string 0+"),
          _topic_info("RepartitionSourceTopics"),
          f("CopartitionGroups []CopartitionGroup 0+",
            f("SourceTopics []int16 0+"),
            f("SourceTopicRegex []int16 0+"),
            f("RepartitionSourceTopics []int16 0+")))),
}  # fmt: skip
