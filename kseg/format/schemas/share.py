"""`__share_group_state` records (Kafka's share-coordinator ShareSnapshot/ShareUpdate Key/Value).

Kafka 4.1 changed both values without bumping their version 0: SnapshotEpoch went from uint16 to
int32 and ShareSnapshotValue gained CreateTimestamp and WriteTimestamp. Both layouts are declared;
the decoder uses the one that parses the value completely and says which (``layout``).
"""

from __future__ import annotations

from kseg.format.schema import f, schema

_KEY_FIELDS = (f("GroupId string 0+"), f("TopicId uuid 0+"), f("Partition int32 0+"))
KEYS = {
    0: schema("ShareSnapshotKey", "0", None, *_KEY_FIELDS),
    1: schema("ShareUpdateKey", "0", None, *_KEY_FIELDS),
}


def _batches():
    return f("StateBatches []StateBatch 0+",
             f("FirstOffset int64 0+"),
             f("LastOffset int64 0+"),
             f("DeliveryState int8 0+"),  # 0 Available, 2 Acked, 4 Archived
             f("DeliveryCount int16 0+"))  # fmt: skip


# layout name -> record type -> value schema; the first that parses completely wins
LAYOUTS = {
    "4.1": {
        0: schema("ShareSnapshotValue", "0", "0+",
                  f("SnapshotEpoch int32 0+"),
                  f("StateEpoch int32 0+"),
                  f("LeaderEpoch int32 0+"),
                  f("StartOffset int64 0+"),
                  f("CreateTimestamp int64 0+"),
                  f("WriteTimestamp int64 0+"),
                  _batches()),
        1: schema("ShareUpdateValue", "0", "0+",
                  f("SnapshotEpoch int32 0+"),
                  f("LeaderEpoch int32 0+"),
                  f("StartOffset int64 0+"),
                  _batches()),
    },
    "4.0": {
        0: schema("ShareSnapshotValue", "0", "0+",
                  f("SnapshotEpoch uint16 0+"),
                  f("StateEpoch int32 0+"),
                  f("LeaderEpoch int32 0+"),
                  f("StartOffset int64 0+"),
                  _batches()),
        1: schema("ShareUpdateValue", "0", "0+",
                  f("SnapshotEpoch uint16 0+"),
                  f("LeaderEpoch int32 0+"),
                  f("StartOffset int64 0+"),
                  _batches()),
    },
}  # fmt: skip
