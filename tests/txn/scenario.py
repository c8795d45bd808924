"""A root for `kseg txn`'s tests, written with kseg's writer: the partitions and the
`__transaction_state` records below, and the answers computed by hand (``EXPECTED``).

orders-0 (offsets):
  0-2   plain records                              T0
  3-4   producer 4001 epoch 3, never closed        T0+1m   (its id app-x tombstoned: hanging)
  5-6   producer 4002 epoch 0                      T0+1m
  7     COMMIT 4002 (coordinator epoch 2)          T0+2m
  8-11  producer 4003 epoch 1, open                T0+3m   (app-3 Ongoing with orders-0: open)
  12-13 producer 4004 epoch 0, open                T0+4m   (app-4 CompleteAbort: hanging)
  14    producer 4005 epoch 0                      T0+5m
  15    ABORT 4005 (coordinator epoch 1)           T0+5m
  16    ABORT 4005 again: closes nothing (empty)   T0+6m
  17    a plain record                             T0+60m  (the end of the data)
orders-1:
  0     producer 4006 epoch 0, open                T0+55m  (idle 5m: open, whatever the coordinator)
"""

from __future__ import annotations

from pathlib import Path

from kseg.format.record import Record
from kseg.storage.writer import LogWriter

T0 = 1_700_000_000_000
M = 60_000
ONGOING, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD = 1, 4, 5, 6


def data(w: LogWriter, pid: int, epoch: int, n: int, ts: int, seq: int = 0):
    return w.append(
        [Record(b"k%d" % i, b"value-%d" % i, ts) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=True,
    )


def plain(w: LogWriter, n: int, ts: int):
    return w.append([Record(b"p", b"plain-%d" % i, ts) for i in range(n)])


def state(tid, pid, epoch, status, parts: dict, ts, start=-1, timeout=60_000):
    fields = {
        "transactional_id": tid,
        "producer_id": pid,
        "producer_epoch": epoch,
        "transaction_timeout_ms": timeout,
        "transaction_status": status,
        "transaction_partitions": [{"topic": t, "partition_ids": p} for t, p in parts.items()],
        "transaction_last_update_timestamp_ms": ts,
        "transaction_start_timestamp_ms": start,
    }
    return (0, fields, 0)


def tombstone(tid):
    return (0, {"transactional_id": tid}, None, True)


def write_coordinator(pdir: Path, records: list[tuple[int, tuple]]) -> None:
    """``records``: (timestamp, coordinator record) in log order, one batch each."""
    with LogWriter(pdir, clock=lambda: T0) as w:
        for ts, rec in records:
            w.append_coordinator("__transaction_state", [rec], timestamp=ts)


def build(root: Path) -> Path:
    with LogWriter(root / "orders-0", clock=lambda: T0) as w:
        plain(w, 3, T0)
        data(w, 4001, 3, 2, T0 + M)
        data(w, 4002, 0, 2, T0 + M)
        w.append_control(commit=True, producer_id=4002, producer_epoch=0, coordinator_epoch=2,
                         timestamp=T0 + 2 * M)  # fmt: skip
        data(w, 4003, 1, 4, T0 + 3 * M)
        data(w, 4004, 0, 2, T0 + 4 * M)
        data(w, 4005, 0, 1, T0 + 5 * M)
        w.append_control(commit=False, producer_id=4005, producer_epoch=0, coordinator_epoch=1,
                         timestamp=T0 + 5 * M)  # fmt: skip
        w.append_control(commit=False, producer_id=4005, producer_epoch=0, coordinator_epoch=1,
                         timestamp=T0 + 6 * M)  # fmt: skip
        plain(w, 1, T0 + 60 * M)
    with LogWriter(root / "orders-1", clock=lambda: T0) as w:
        data(w, 4006, 0, 1, T0 + 55 * M)
    o0 = {"orders": [0]}
    write_coordinator(
        root / "__transaction_state-0",
        [
            (T0 + 30_000, state("app-x", 4001, 3, ONGOING, o0, T0 + 30_000, T0 + 30_000)),
            (T0 + M, state("app-2", 4002, 0, ONGOING, o0, T0 + M, T0 + M)),
            (T0 + 2 * M, state("app-2", 4002, 0, COMPLETE_COMMIT, {}, T0 + 2 * M, T0 + M)),
            (T0 + 3 * M, state("app-3", 4003, 1, ONGOING, o0, T0 + 3 * M, T0 + 3 * M)),
            (T0 + 4 * M, state("app-4", 4004, 0, ONGOING, o0, T0 + 4 * M, T0 + 4 * M)),
            (T0 + 5 * M, tombstone("app-x")),
            (T0 + 6 * M, state("app-4", 4004, 0, COMPLETE_ABORT, {}, T0 + 6 * M, T0 + 4 * M)),
            (T0 + 7 * M, state("app-d", 4006, 0, DEAD, {}, T0 + 7 * M)),
        ],
    )
    return root


ABORT = (
    "kafka-transactions.sh --bootstrap-server <BOOTSTRAP> abort --topic orders --partition 0 "
    "--producer-id {pid} --producer-epoch {epoch} --coordinator-epoch 0"
)
END = T0 + 60 * M  # the end of the data: time answers are judged there without --at/--now

EXPECTED_PARTITIONS = {
    ("orders", 0): {
        "log_start_offset": 0,
        "log_end_offset": 18,
        "last_stable_offset": 3,
        "held_since": T0 + M,
        "held_by": 4001,
        "open": 3,
        "hanging": 2,
        "unjudged": 0,
        "committed": 1,
        "aborted": 1,
        "empty": 1,
    },
    ("orders", 1): {
        "log_start_offset": 0,
        "log_end_offset": 1,
        "last_stable_offset": 0,
        "held_since": T0 + 55 * M,
        "held_by": 4006,
        "open": 1,
        "hanging": 0,
        "unjudged": 0,
        "committed": 0,
        "aborted": 0,
        "empty": 0,
    },
}
