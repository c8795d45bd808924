"""`__remote_log_metadata` records (tiered storage; Kafka's storage/src/main/resources/message/):
framed like metadata records (uvarint frame version 1, apiKey, version), flexible from 0.
Version 1 (the broker's leader epoch, the update's end offset) is from Kafka's trunk."""

from __future__ import annotations

from kseg.format.schema import f, schema


def _topic_id_partition(name: str = "TopicIdPartition"):
    return f(f"{name} TopicIdPartitionEntry 0+",
             f("Name string 0+"), f("Id uuid 0+"), f("Partition int32 0+"))  # fmt: skip


def _segment_id():
    return f(
        "RemoteLogSegmentId RemoteLogSegmentIdEntry 0+", _topic_id_partition(), f("Id uuid 0+")
    )


def _leader_epochs():
    return f("SegmentLeaderEpochs []SegmentLeaderEpochEntry 0+",
             f("LeaderEpoch int32 0+"), f("Offset int64 0+"))  # fmt: skip


RECORDS = [
    schema("RemoteLogSegmentMetadataRecord", "0-1", "0+",
           _segment_id(),
           f("StartOffset int64 0+"),
           f("EndOffset int64 0+"),
           f("BrokerId int32 0+"),
           f("MaxTimestampMs int64 0+"),
           f("EventTimestampMs int64 0+"),
           _leader_epochs(),
           f("SegmentSizeInBytes int32 0+"),
           f("CustomMetadata bytes 0+", nullable="0+", default=None),
           f("RemoteLogSegmentState int8 0+"),
           f("TxnIndexEmpty bool 0+", tag=0),
           f("BrokerLeaderEpoch int32 1+", tag=1),
           api_key=0),
    schema("RemoteLogSegmentMetadataUpdateRecord", "0-1", "0+",
           _segment_id(),
           f("BrokerId int32 0+"),
           f("EventTimestampMs int64 0+"),
           f("CustomMetadata bytes 0+", nullable="0+", default=None),
           f("RemoteLogSegmentState int8 0+"),
           f("BrokerLeaderEpoch int32 1+", tag=0, default=-1),
           f("EndOffset int64 1+", tag=1, default=-1),
           api_key=1),
    schema("RemotePartitionDeleteMetadataRecord", "0-1", "0+",
           _topic_id_partition(),
           f("BrokerId int32 0+"),
           f("EventTimestampMs int64 0+"),
           f("RemotePartitionDeleteState int8 0+"),
           f("BrokerLeaderEpoch int32 1+", tag=0),
           f("EndOffset int64 1+", tag=1),
           api_key=2),
    schema("RemoteLogSegmentMetadataSnapshotRecord", "0-1", "0+",
           f("SegmentId uuid 0+"),
           f("StartOffset int64 0+"),
           f("EndOffset int64 0+"),
           f("BrokerId int32 0+"),
           f("MaxTimestampMs int64 0+"),
           f("EventTimestampMs int64 0+"),
           _leader_epochs(),
           f("SegmentSizeInBytes int32 0+"),
           f("CustomMetadata bytes 0+", nullable="0+", default=None),
           f("RemoteLogSegmentState int8 0+"),
           f("TxnIndexEmpty bool 0+", tag=0),
           f("BrokerLeaderEpoch int32 1+", tag=1),
           api_key=3),
]  # fmt: skip

BY_API_KEY = {s.api_key: s for s in RECORDS}
