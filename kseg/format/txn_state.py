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

Kafka 0.11 to 2.7 (``empty_aborts``; kseg.format.kafka_version) emitted a CompletedTxn for every
marker: one that closed nothing opened its transaction at the marker (first offset = last offset
= the marker's offset), so every ABORT added an entry. ``on_end_marker`` gives both answers from
one replay (the entry and whether it closed an open transaction).
"""

from __future__ import annotations

from kseg.format.txn_index import AbortedTxn


class TxnTracker:
    def __init__(self, *, empty_aborts: bool = False) -> None:
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.empty_aborts = empty_aborts  # Kafka 0.11-2.7's rule (on_marker)

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
        aborted, closed = self.on_end_marker(producer_id, offset, commit)
        return aborted if closed or self.empty_aborts else None

    def on_end_marker(
        self, producer_id: int, offset: int, commit: bool
    ) -> tuple[AbortedTxn | None, bool]:
        """The marker's `.txnindex` entry under Kafka 0.11-2.7's rule (None for a COMMIT), and
        whether it closed an open transaction (Kafka 2.8+ writes the entry only then). The
        last stable offset is the same under both rules: 2.7's transaction opened at the marker
        belongs to the marker's own producer, which lastStableOffset skips."""
        first = self.ongoing.pop(producer_id, None)
        closed = first is not None
        if commit:
            return None, closed
        lso = min(self.ongoing.values(), default=offset + 1)
        return AbortedTxn(producer_id, offset if first is None else first, offset, lso), closed
