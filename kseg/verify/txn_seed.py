"""Where a transaction replay starts: the open transactions a partition's producer snapshot
knows (one module of its own, so `index check` replays without importing the rebuild's
writers)."""

from __future__ import annotations

from pathlib import Path

from kseg.format.errors import CorruptionError
from kseg.format.producer_snapshot import read_snapshot
from kseg.format.txn_state import TxnTracker
from kseg.storage import files as F
from kseg.storage.side_files import read_side_file


def seed_from_snapshot(txn: TxnTracker, first_log: Path) -> None:
    """A log that starts mid-transaction (earlier segments deleted by retention): Kafka knows
    the open transactions from the producer snapshot taken at that segment's roll."""
    path = first_log.with_suffix(".snapshot")
    try:
        txn.seed(read_snapshot(read_side_file(path, F.SNAPSHOT)).entries)
    except (OSError, CorruptionError):
        pass  # none, or unreadable (verify reports it): replay from the log alone
