"""`__transaction_state` records (Kafka's transaction-coordinator TransactionLogKey/Value)."""

from __future__ import annotations

from kseg.format.schema import f, schema

KEY = schema("TransactionLogKey", "0", None, f("TransactionalId string 0+"))

VALUE = schema("TransactionLogValue", "0-1", "1+",
    f("ProducerId int64 0+"),
    f("PreviousProducerId int64 1+", tag=0, default=-1),
    f("NextProducerId int64 1+", tag=1, default=-1),
    f("ProducerEpoch int16 0+"),
    # Tags past 2 (e.g. a later Kafka's next-producer epoch) are not declared: no definition of
    # them could be checked, so they are shown raw under unknown_tagged_fields, never guessed.
    f("TransactionTimeoutMs int32 0+"),
    f("TransactionStatus int8 0+"),
    f("TransactionPartitions []PartitionsSchema 0+",
      f("Topic string 0+"),
      f("PartitionIds []int32 0+"),
      nullable="0+"),
    f("TransactionLastUpdateTimestampMs int64 0+"),
    f("TransactionStartTimestampMs int64 0+"),
    f("ClientTransactionVersion int16 1+", tag=2, default=0),
)  # fmt: skip

STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
