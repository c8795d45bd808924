"""Replaying transactions to find aborted ones, as ProducerStateManager does.

Used by the LogWriter (to write `.txnindex` as it appends) and by the `.txnindex` rebuild (which
replays a partition's logs). Feed every batch in log order.
"""

from __future__ import annotations

from .txn_index import AbortedTxn


class TxnTracker:
    def __init__(self) -> None:
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction

    def on_data_batch(self, producer_id: int, first_offset: int, transactional: bool) -> None:
        if transactional and producer_id >= 0 and producer_id not in self.ongoing:
            self.ongoing[producer_id] = first_offset

    def on_marker(self, producer_id: int, offset: int, commit: bool) -> AbortedTxn | None:
        """Close ``producer_id``'s transaction at marker ``offset``; the entry if it aborted.

        An unknown start (the log begins mid-transaction) counts from the marker itself, as
        Kafka's appendEndTxnMarker does without a first offset.
        """
        first = self.ongoing.pop(producer_id, offset)
        if commit:
            return None
        # lastStableOffset: first offset of the earliest other open transaction, else marker + 1
        lso = min(self.ongoing.values(), default=offset + 1)
        return AbortedTxn(producer_id, first, offset, lso)
