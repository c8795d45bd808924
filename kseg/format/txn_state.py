"""Replaying transactions to find aborted ones, as Kafka's ProducerStateManager does.

Used by the LogWriter (to write `.txnindex` as it appends) and by the `.txnindex` rebuild (which
replays a partition's logs): the rule lives here once. Feed every batch in log order.

Kafka's rules (storage/internals/log/ProducerAppendInfo.java, ProducerStateManager.java):
- appendDataBatch: a transactional data batch opens a transaction for its producer when none is
  open (first offset = that batch's base offset); later batches of the same transaction do not
  move it.
- appendEndTxnMarker: a CompletedTxn is emitted only when the producer has an open transaction
  ("Only emit the CompletedTxn for non-empty transactions"); a marker that closes nothing (a
  second ABORT after a coordinator timeout, an ABORT of a transaction already closed) changes no
  index. LogSegment.updateTxnIndex then appends an AbortedTxn for an aborted one only.
- ProducerStateManager.lastStableOffset(completedTxn): the first offset of the earliest OTHER
  producer's open transaction (ongoingTxns is ordered by first offset), else marker offset + 1.
"""

from __future__ import annotations

from .txn_index import AbortedTxn


class TxnTracker:
    def __init__(self) -> None:
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction

    def seed(self, entries) -> None:
        """Start from a producer snapshot (ProducerStateManager loads the latest one before it
        replays): its open transactions (currentTxnFirstOffset >= 0) are ongoing."""
        for e in entries:
            if e.current_txn_first_offset >= 0:
                self.ongoing[e.producer_id] = e.current_txn_first_offset

    def on_data_batch(self, producer_id: int, first_offset: int, transactional: bool) -> None:
        if transactional and producer_id >= 0 and producer_id not in self.ongoing:
            self.ongoing[producer_id] = first_offset

    def on_marker(self, producer_id: int, offset: int, commit: bool) -> AbortedTxn | None:
        """Close ``producer_id``'s transaction at marker ``offset``; the `.txnindex` entry when
        it closed an open transaction and aborted it, else None."""
        first = self.ongoing.pop(producer_id, None)
        if first is None or commit:
            return None
        lso = min(self.ongoing.values(), default=offset + 1)
        return AbortedTxn(producer_id, first, offset, lso)
