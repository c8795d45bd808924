"""Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment (clients' message JSON):
the bytes a classic `consumer` group member stores in GroupMetadataValue. ``int16 version``
then the body; never flexible. A newer version than known is read with the newest layout, as
Kafka's ConsumerProtocol does (new fields are appended and ignorable)."""

from __future__ import annotations

from kseg.format.schema import f, schema

SUBSCRIPTION = schema("ConsumerProtocolSubscription", "0-3", None,
    f("Topics []string 0+"),
    f("UserData bytes 0+", nullable="0+", default=None),
    f("OwnedPartitions []TopicPartition 1+",
      f("Topic string 1+"),
      f("Partitions []int32 1+")),
    f("GenerationId int32 2+", default=-1),
    f("RackId string 3+", nullable="3+", default=None),
)  # fmt: skip

ASSIGNMENT = schema("ConsumerProtocolAssignment", "0-3", None,
    f("AssignedPartitions []TopicPartition 0+",
      f("Topic string 0+"),
      f("Partitions []int32 0+")),
    f("UserData bytes 0+", nullable="0+", default=None),
)  # fmt: skip
