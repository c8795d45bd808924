"""One replay of a partition's transactions, by Kafka's rules: what `kseg txn` reports and what
`--isolation read_committed` leaves out.

The replay walks batch headers only (a control batch's first record is read, to tell COMMIT from
ABORT) through kseg.format.txn_state.TxnTracker, the one copy of Kafka's transaction rules, and
keeps what Kafka's ProducerStateManager keeps per producer (epoch, last sequence, last timestamp,
coordinator epoch, the open transaction's first offset): what `kafka-transactions.sh
describe-producers` shows of a live partition.

The last stable offset is Kafka's (UnifiedLog.lastStableOffset): the first offset of the
earliest open transaction, never below the log start offset, else the high watermark. Offline
the high watermark is unknown: the log end offset stands in (as if every replica had caught up).

The replay stops at the first entry Kafka's recovery would stop at (a torn or garbage tail, a
batch failing its CRC): what follows is what Kafka truncates, and `error` says where.

Memory: per producer seen (Kafka keeps as much) and 32 bytes per aborted transaction (three
arrays, not an object each); nothing per batch or record.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kseg.format import batch as v2
from kseg.format.errors import CRC_MISMATCH, CorruptionError
from kseg.format.producer_snapshot import read_snapshot
from kseg.format.txn_index import AbortedTxn
from kseg.format.txn_state import TxnTracker
from kseg.storage import files as F
from kseg.storage.partition import Partition
from kseg.storage.side_files import read_side_file

# what a header row (kseg.format.log.walk_headers) does not carry, read from the batch itself
_BASE_TS = struct.Struct(">q")
_EPOCH_SEQ = struct.Struct(">hi")
_BASE_TS_POS = v2.FIELD_POS["base_timestamp"]
_EPOCH_POS = v2.FIELD_POS["producer_epoch"]


class OpenTxn(NamedTuple):
    """A transaction open at the end of the data replayed."""

    producer_id: int
    producer_epoch: int
    first_offset: int  # its first data batch's base offset (seeded: may be below the log start)
    first_timestamp: int  # that batch's first (base) timestamp; -1 unknown (seeded from a snapshot)
    last_offset: int  # its last data batch so far
    last_timestamp: int  # that batch's max timestamp
    records: int  # so far, of what the log holds
    bytes: int
    file: str  # the `.log` holding its first batch ("" when seeded from a snapshot)


class ProducerState(NamedTuple):
    """A producer as Kafka's ProducerStateManager holds it (describe-producers' columns)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction


class AbortedRanges:
    """Every aborted transaction (producer id, first offset, last offset = its ABORT marker) and
    the last stable offset when it was aborted, by first offset, as `.txnindex` entries."""

    __slots__ = ("pid", "first", "last", "lso")

    def __init__(self) -> None:
        self.pid, self.first, self.last, self.lso = array("q"), array("q"), array("q"), array("q")

    def add(self, a: AbortedTxn) -> None:
        self.pid.append(a.producer_id)
        self.first.append(a.first_offset)
        self.last.append(a.last_offset)
        self.lso.append(a.last_stable_offset)

    def sort(self) -> None:
        """By first offset (markers come in last-offset order): the consumer's order."""
        if all(self.first[i] <= self.first[i + 1] for i in range(len(self.first) - 1)):
            return
        order = sorted(range(len(self.first)), key=self.first.__getitem__)
        for name in self.__slots__:
            col = getattr(self, name)
            setattr(self, name, array("q", (col[i] for i in order)))

    def __len__(self) -> int:
        return len(self.first)

    def __iter__(self) -> Iterator[AbortedTxn]:
        for i in range(len(self.first)):
            yield AbortedTxn(self.pid[i], self.first[i], self.last[i], self.lso[i])


class TxnReplay(NamedTuple):
    log_start_offset: int
    log_end_offset: int  # next offset after the last batch replayed
    last_stable_offset: int
    open: tuple[OpenTxn, ...]  # by first offset
    committed: int  # transactions closed by a COMMIT marker
    aborted: int  # ... by an ABORT marker
    empty: int  # markers that closed no open transaction
    producers: tuple[ProducerState, ...]  # by producer id
    data_end_time: int  # the greatest batch max timestamp replayed (-1: none)
    error: CorruptionError | None  # the replay stopped here; what follows is unread
    aborted_ranges: AbortedRanges
    # the producer snapshot at the log start could not be read: the replay starts from the log
    # alone (as Kafka's recovery does)
    seed_error: CorruptionError | None = None

    def holding(self) -> OpenTxn | None:
        """The open transaction the last stable offset waits on (None: nothing held)."""
        if self.last_stable_offset >= self.log_end_offset or not self.open:
            return None
        return self.open[0]


class _Open:
    """An open transaction as the replay grows it (a slotted accumulator, one per open one)."""

    __slots__ = ("epoch", "first", "first_ts", "last", "last_ts", "records", "bytes", "file")

    def __init__(self, epoch, first, first_ts, file) -> None:
        self.epoch, self.first, self.first_ts, self.file = epoch, first, first_ts, file
        self.last, self.last_ts, self.records, self.bytes = first, -1, 0, 0


def replay_transactions(pdir: str | Path | Partition, *, upto: int | None = None) -> TxnReplay:
    """Replay ``pdir``'s transactions (only offsets below ``upto`` when given: the partition as
    it stood then), from the producer snapshot at its first segment when there is one (a log
    whose earlier segments retention deleted may start mid-transaction), then every batch."""
    part = pdir if isinstance(pdir, Partition) else Partition(pdir)
    first_log = part.segments[0].log if part.segments else None
    return _replay(part.segments, part.log_start_offset(), first_log, upto)


def replay_file(path: str | Path) -> TxnReplay:
    """One segment file outside any partition dir, replayed alone: no producer snapshot, no log
    start checkpoint (its first batch starts the log)."""
    return _replay([_Loose(Path(path))], 0, None, None)


class _Loose:
    """A `.log` of any name as the replay walks a Segment (kseg.storage.segment)."""

    base_offset = 0

    def __init__(self, log: Path) -> None:
        self.log = log

    def mapped(self, *, sequential: bool = False):
        from kseg.storage.mapped import mapped

        return mapped(self.log, sequential=sequential)

    def walk_headers(self, buf):
        from kseg.storage.kernel_walk import walk_headers

        return walk_headers(buf)


def _replay(segments, log_start: int, first_log: Path | None, upto: int | None) -> TxnReplay:
    """The replay of ``segments`` in order, seeded from ``first_log``'s producer snapshot."""
    tracker = TxnTracker()
    states: dict[int, list] = {}  # pid -> [epoch, last seq, last ts, coordinator epoch]
    opened: dict[int, _Open] = {}
    aborted = AbortedRanges()
    committed = n_aborted = empty = 0
    data_end = -1
    end = log_start if not segments else segments[0].base_offset
    error = seed_error = None
    if first_log is not None:
        seed, seed_error = _seed(first_log)
        for e in seed:
            states[e.producer_id] = [
                e.producer_epoch, e.last_sequence, e.timestamp, e.coordinator_epoch
            ]  # fmt: skip
            if e.current_txn_first_offset >= 0 and (
                upto is None or e.current_txn_first_offset < upto
            ):
                tracker.ongoing[e.producer_id] = e.current_txn_first_offset
                opened[e.producer_id] = _Open(e.producer_epoch, e.current_txn_first_offset, -1, "")
    for seg in segments:
        if upto is not None and seg.base_offset >= upto:
            break
        try:
            with seg.mapped(sequential=True) as buf:
                for h in seg.walk_headers(buf):
                    pos, size, magic, first, last, max_ts, count, attrs, pid, ok, _ple = h
                    if upto is not None and first >= upto:
                        break
                    if not ok:
                        raise CorruptionError(
                            f"batch at byte {pos} fails its CRC check",
                            kind=CRC_MISMATCH,
                            position=pos,
                        )
                    end = last + 1
                    data_end = max(data_end, max_ts)
                    if magic < v2.MAGIC or pid < 0:
                        continue
                    epoch, base_seq = _EPOCH_SEQ.unpack_from(buf, pos + _EPOCH_POS)
                    st = states.get(pid)
                    if st is None:  # ProducerStateEntry.empty
                        st = states[pid] = [v2.NO_PRODUCER_EPOCH, -1, -1, -1]
                    ctl = None
                    if attrs & v2.ATTR_CONTROL:
                        ctl = v2.RecordBatch(buf, pos).control_record(end_txn=True)
                        if ctl is None:
                            continue  # an empty control batch: Kafka's append changes nothing
                    if st[0] != epoch:  # maybeUpdateProducerEpoch: the batch metadata cleared
                        st[0], st[1] = epoch, -1
                    st[2] = max_ts
                    if ctl is not None:
                        commit = ctl.type == 1
                        mark, closed = tracker.on_end_marker(pid, first, commit)
                        st[3] = ctl.coordinator_epoch
                        opened.pop(pid, None)
                        if not closed:
                            empty += 1
                        elif commit:
                            committed += 1
                        else:
                            n_aborted += 1
                            aborted.add(mark)
                        continue
                    st[1] = (
                        -1 if base_seq == v2.NO_SEQUENCE else _last_sequence(base_seq, last - first)
                    )
                    if attrs & v2.ATTR_TRANSACTIONAL:
                        tracker.on_data_batch(pid, first, True)
                        o = opened.get(pid)
                        if o is None:
                            ts = _BASE_TS.unpack_from(buf, pos + _BASE_TS_POS)[0]
                            o = opened[pid] = _Open(epoch, first, ts, seg.log.name)
                        o.epoch, o.last, o.last_ts = epoch, last, max_ts
                        o.records += count
                        o.bytes += size
        except CorruptionError as exc:
            error = exc.in_file(seg.log)
            break
        except OSError as exc:
            error = CorruptionError(f"unreadable: {exc.strerror or exc}", position=0).in_file(
                seg.log
            )
            break
    aborted.sort()
    opens = tuple(
        sorted(
            (
                OpenTxn(pid, o.epoch, o.first, o.first_ts, o.last, o.last_ts, o.records, o.bytes,
                        o.file)
                for pid, o in opened.items()
            ),
            key=lambda t: (t.first_offset, t.producer_id),
        )
    )  # fmt: skip
    lso = end if not opens else max(min(opens[0].first_offset, end), log_start)
    producers = tuple(
        ProducerState(pid, st[0], st[1], st[2], st[3], opened[pid].first if pid in opened else -1)
        for pid, st in sorted(states.items())
    )
    return TxnReplay(
        log_start, end, lso, opens, committed, n_aborted, empty, producers, data_end, error,
        aborted, seed_error,
    )  # fmt: skip


def _seed(first_log: Path):
    """The producer snapshot taken at the first segment's roll and what kept it from being read
    (none: no problem; unreadable: the replay then starts from the log alone)."""
    path = first_log.with_suffix(".snapshot")
    try:
        return read_snapshot(read_side_file(path, F.SNAPSHOT)).entries, None
    except FileNotFoundError:
        return (), None
    except CorruptionError as exc:
        return (), exc.in_file(path)
    except OSError as exc:
        return (), CorruptionError(f"{exc.strerror or exc}", kind="unreadable", file=str(path))


def _last_sequence(base: int, delta: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap at 2^31 - 1."""
    s = base + delta
    return s - (1 << 31) if s > 0x7FFFFFFF else s
