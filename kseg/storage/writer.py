"""LogWriter: append records to a partition directory exactly as a broker lays them out.

Assigns offsets, rolls segments, writes `.index`/`.timeindex` by Kafka's recovery rule (so a
rebuild reproduces them byte for byte), `.txnindex` for aborted transactions, producer snapshots
and the leader-epoch checkpoint. Used for fixtures and benchmarks; never on a live broker's data.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from kseg.format import batch as v2
from kseg.format import compression, control, legacy
from kseg.format import offset_index as oi
from kseg.format import time_index as ti
from kseg.format.checkpoint import EpochEntry, encode_leader_epoch_checkpoint
from kseg.format.compression import NONE as NO_CODEC
from kseg.format.errors import KsegError
from kseg.format.index_rule import DEFAULT_INDEX_INTERVAL_BYTES, IndexBuilder
from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.format.producer_snapshot import ProducerEntry, encode_snapshot
from kseg.format.record import CREATE_TIME, LOG_APPEND_TIME, Record
from kseg.format.txn_index import AbortedTxn
from kseg.format.txn_index import encode_entries as encode_txn_entries
from kseg.format.txn_state import TxnTracker
from kseg.storage.atomic import atomic_write
from kseg.storage.files import segment_file_name

INT32_MAX = 0x7FFFFFFF


class AppendInfo(NamedTuple):
    base_offset: int
    last_offset: int
    position: int
    size: int
    segment: Path


class _Segment:
    def __init__(self, directory: Path, base_offset: int, interval: int) -> None:
        self.base_offset = base_offset
        self.path = directory / segment_file_name(base_offset, ".log")
        self.file = open(self.path, "xb")  # noqa: SIM115 - open for the segment's lifetime
        self.size = 0
        self.index = IndexBuilder(base_offset, interval)
        self.aborted: list[AbortedTxn] = []


class LogWriter:
    """Append-only writer for one partition directory (created if missing, must hold no log)."""

    def __init__(
        self,
        partition_dir: str | Path,
        *,
        magic: int = 2,
        compression: str | int = "none",
        segment_bytes: int = 1 << 30,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        timestamp_type: str = CREATE_TIME,
        base_offset: int = 0,
        partition_leader_epoch: int = 0,
        clock: Callable[[], int] | None = None,
        preallocate: bool = False,
        xerial_snappy: bool = True,
        write_snapshots: bool = True,
        kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
    ) -> None:
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(f"timestamp_type must be {CREATE_TIME} or {LOG_APPEND_TIME}")
        self.dir = Path(partition_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if any(self.dir.glob("*.log")):
            raise KsegError(f"{self.dir}: already holds segments; LogWriter only starts new logs")
        self.magic = magic
        self.compression = compression
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.timestamp_type = timestamp_type
        self.partition_leader_epoch = partition_leader_epoch
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.preallocate = preallocate
        self.xerial_snappy = xerial_snappy
        self.write_snapshots = write_snapshots
        self.next_offset = base_offset
        self.segments: list[Path] = []
        self._epochs: list[EpochEntry] = []
        self._producers: dict[int, ProducerEntry] = {}
        # `.txnindex` by this release's rule (0.11-2.7 also index an ABORT that closes nothing)
        self._txns = TxnTracker(empty_aborts=kafka_version.txn_index_empty_aborts)
        self._segment: _Segment | None = None
        self._closed = False

    # --- context manager -----------------------------------------------------------------
    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- appending -----------------------------------------------------------------------
    def append(
        self,
        records: Iterable[Record],
        *,
        magic: int | None = None,
        compression: str | int | None = None,
        producer_id: int = v2.NO_PRODUCER_ID,
        producer_epoch: int = v2.NO_PRODUCER_EPOCH,
        base_sequence: int = v2.NO_SEQUENCE,
        transactional: bool = False,
        base_offset: int | None = None,
        last_offset: int | None = None,
        log_append_time: int | None = None,
        partition_leader_epoch: int | None = None,
        control: bool = False,
        inner_magic: int | None = None,
        allow_zstd: bool = False,
    ) -> AppendInfo:
        """Append one batch (magic 2) or one message set (magic 0/1: a wrapper when compressed).

        Records without an offset get the next ones; explicit offsets may leave gaps (as
        compaction does). ``last_offset`` beyond the last record (or with no records, an empty
        batch) keeps a compacted batch's range. ``producer_id=-1`` with ``base_sequence=0``
        writes what Kafka 4.x group and share coordinators write. ``control=True`` makes a
        control batch of the records as given (KRaft's control records, or markers of any shape
        for fixtures); it is not replayed into the producer state (use append_control for a
        marker that is). Legacy shapes for fixtures (see legacy.build_entries): ``inner_magic``
        for a compressed wrapper's messages, no records with a codec and ``last_offset`` for a
        wrapper holding no message, ``allow_zstd`` for a zstd wrapper. Returns where the batch
        went.
        """
        magic = self.magic if magic is None else magic
        cid = _codec(self.compression if compression is None else compression)
        epoch = (
            self.partition_leader_epoch
            if partition_leader_epoch is None
            else partition_leader_epoch
        )
        base = self.next_offset if base_offset is None else base_offset
        if base < self.next_offset:
            raise ValueError(f"base offset {base} is below the log end offset {self.next_offset}")
        now = self.clock()
        assigned: list[Record] = []
        nxt = base
        for rec in records:
            off = nxt if rec.offset is None else rec.offset
            if off < nxt:
                raise ValueError(f"record offset {off} does not increase")
            ts = now if rec.timestamp is None else rec.timestamp
            assigned.append(rec._replace(offset=off, timestamp=ts, headers=list(rec.headers)))
            nxt = off + 1
        if self.timestamp_type == LOG_APPEND_TIME and log_append_time is None:
            log_append_time = now
        if magic == 2:
            data = v2.build_batch(
                assigned,
                base,
                compression_id=cid,
                log_append_time=log_append_time,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
                transactional=transactional,
                partition_leader_epoch=epoch,
                last_offset=last_offset,
                xerial_snappy=self.xerial_snappy,
                control=control,
            )
            batch = v2.RecordBatch(data, 0)
            last = batch.last_offset
        else:
            empty_wrapper = not assigned and cid != NO_CODEC and last_offset is not None
            if (
                producer_id != v2.NO_PRODUCER_ID
                or transactional
                or control
                or (last_offset is not None and not empty_wrapper)
            ):
                raise ValueError("producer ids, transactions and empty batches need magic 2")
            data = legacy.build_entries(
                assigned,
                magic,
                compression_id=cid,
                log_append_time=log_append_time,
                xerial_snappy=self.xerial_snappy,
                inner_magic=inner_magic,
                wrapper_offset=last_offset if empty_wrapper else None,
                allow_zstd=allow_zstd,
            )
            last = last_offset if empty_wrapper else assigned[-1].offset
        info = self._write(data, base, last, magic)
        if magic == 2:
            self._track_epoch(epoch, base)
            if producer_id != v2.NO_PRODUCER_ID and not control:
                self._track_producer(batch)
        return info

    def append_control(
        self,
        *,
        commit: bool,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int = 0,
        timestamp: int | None = None,
        partition_leader_epoch: int | None = None,
        key_version: int = control.CURRENT_KEY_VERSION,
        value_version: int = control.CURRENT_END_TXN_VERSION,
        value_extra: bytes = b"",
    ) -> AppendInfo:
        """Append an end-transaction marker (COMMIT or ABORT) for ``producer_id``'s transaction.

        ``key_version``/``value_version``/``value_extra`` write a marker as a newer Kafka might
        (Kafka reads versions above 0 as version 0 and ignores bytes past the value's first 6).
        An ABORT or COMMIT that closes no open transaction is written but indexes nothing, as in
        Kafka (a second abort after a coordinator timeout).
        """
        ts = self.clock() if timestamp is None else timestamp
        epoch = (
            self.partition_leader_epoch
            if partition_leader_epoch is None
            else partition_leader_epoch
        )
        base = self.next_offset
        rec = Record(
            control.end_txn_key(commit, key_version),
            control.end_txn_value(coordinator_epoch, value_version) + value_extra,
            ts,
            [],
            base,
        )
        data = v2.build_batch(
            [rec],
            base,
            log_append_time=ts if self.timestamp_type == LOG_APPEND_TIME else None,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=True,
            control=True,
            partition_leader_epoch=epoch,
        )
        info = self._write(data, base, base, 2)
        self._track_epoch(epoch, base)
        entry = self._producers.get(producer_id)
        aborted = self._txns.on_marker(producer_id, base, commit)
        if aborted is not None:
            self._segment.aborted.append(aborted)
        # ProducerStateEntry.update: a marker adds no batch; a new epoch clears the batches kept
        same = entry is not None and entry.producer_epoch == producer_epoch
        self._producers[producer_id] = ProducerEntry(
            producer_id,
            producer_epoch,
            entry.last_sequence if same else -1,
            entry.last_offset if same else -1,
            entry.offset_delta if same else 0,
            ts,
            coordinator_epoch,
            -1,
        )
        return info

    def append_metadata(
        self, records: Iterable[tuple], *, timestamp: int | None = None
    ) -> AppendInfo:
        """Append one batch of `__cluster_metadata` records, each ``(record, data)`` or
        ``(record, data, version)``: ``record`` an apiKey or a name (``"topic_record"``),
        ``data`` the fields in snake_case (missing ones take Kafka's defaults), ``version`` the
        newest when left out. Encoded by the schema interpreter, framed as Kafka frames them."""
        from kseg.format.metadata import encode_metadata

        recs = [
            Record(None, encode_metadata(r[0], r[1], r[2] if len(r) > 2 else None), timestamp)
            for r in records
        ]
        return self.append(recs)

    def append_coordinator(
        self, topic: str, records: Iterable[tuple], *, timestamp: int | None = None
    ) -> AppendInfo:
        """Append one batch of coordinator records for ``topic`` ("__consumer_offsets",
        "__transaction_state" or "__share_group_state"), each ``(record type, fields)``,
        ``(record type, fields, version)`` or ``(record type, fields, version, True)`` for a
        tombstone (null value). ``fields`` are flat, as the decoder gives them; ``version`` None
        is the newest (for share state: a layout name, "4.1" or "4.0")."""
        from kseg.format import coordinator as co

        out = []
        for r in records:
            rtype, fields = r[0], r[1]
            version = r[2] if len(r) > 2 else None
            tombstone = len(r) > 3 and r[3]
            if topic == "__consumer_offsets":
                key, value = co.consumer_offsets_record(rtype, fields, version, tombstone)
            elif topic == "__transaction_state":
                key, value = co.transaction_record(fields, version, tombstone)
            elif topic == "__share_group_state":
                layout = version if isinstance(version, str) else "4.1"
                key, value = co.share_state_record(rtype, fields, layout, tombstone)
            else:
                raise ValueError(f"no coordinator records for topic {topic!r}")
            out.append(Record(key, value, timestamp))
        return self.append(out)

    def append_kraft_control(
        self, records: Iterable[tuple[int, dict]], *, timestamp: int | None = None
    ) -> AppendInfo:
        """Append one control batch of KRaft control records, each ``(control type, data)``:
        2 LeaderChange, 3 SnapshotHeader, 4 SnapshotFooter, 5 KRaftVersion, 6 KRaftVoters."""
        from kseg.format.metadata import encode_kraft_control

        ts = self.clock() if timestamp is None else timestamp
        base = self.next_offset
        recs = [
            Record(control.KEY.pack(0, ctype), encode_kraft_control(ctype, data), ts, [], base + i)
            for i, (ctype, data) in enumerate(records)
        ]
        data = v2.build_batch(
            recs,
            base,
            log_append_time=ts if self.timestamp_type == LOG_APPEND_TIME else None,
            control=True,
            partition_leader_epoch=self.partition_leader_epoch,
        )
        info = self._write(data, base, base + len(recs) - 1, 2)
        self._track_epoch(self.partition_leader_epoch, base)
        return info

    def _track_producer(self, batch: v2.RecordBatch) -> None:
        prev = self._producers.get(batch.producer_id)
        self._txns.on_data_batch(batch.producer_id, batch.base_offset, batch.is_transactional)
        txn_first = self._txns.ongoing.get(batch.producer_id, -1)
        self._producers[batch.producer_id] = ProducerEntry(
            batch.producer_id,
            batch.producer_epoch,
            batch.last_sequence,
            batch.last_offset,
            batch.last_offset_delta,
            batch.max_timestamp,
            prev.coordinator_epoch if prev else -1,
            txn_first,
        )

    def _track_epoch(self, epoch: int, start_offset: int) -> None:
        if epoch >= 0 and (not self._epochs or epoch > self._epochs[-1].epoch):
            self._epochs.append(EpochEntry(epoch, start_offset))

    def _write(self, data: bytes, base: int, last: int, magic: int) -> AppendInfo:
        if self._closed:
            raise KsegError("LogWriter is closed")
        seg = self._segment
        if (
            seg is None
            or (seg.size and seg.size + len(data) > self.segment_bytes)
            or last - seg.base_offset > INT32_MAX
        ):
            seg = self.roll(base)
        position = seg.size
        seg.file.write(data)
        seg.size += len(data)
        # legacy entries in one message set are indexed one by one, like recovery walks them
        if magic == 2:
            b = v2.RecordBatch(data, 0)
            seg.index.add(b.last_offset, b.max_timestamp, len(data))
        else:
            pos = 0
            while pos < len(data):
                e = legacy.LegacyEntry(data, pos)
                seg.index.add(e.offset, e.timestamp, e.size)
                pos += e.size
        self.next_offset = last + 1
        return AppendInfo(base, last, position, len(data), seg.path)

    # --- segments ------------------------------------------------------------------------
    def roll(self, base_offset: int | None = None) -> _Segment:
        """Close the active segment (trimmed indexes) and start one at ``base_offset``."""
        base = self.next_offset if base_offset is None else base_offset
        if self._segment is not None:
            self._finish_segment(self._segment, active=False)
            if self.write_snapshots:
                self._write_snapshot(base)
        self._segment = _Segment(self.dir, base, self.index_interval_bytes)
        self.segments.append(self._segment.path)
        return self._segment

    def _finish_segment(self, seg: _Segment, *, active: bool) -> None:
        seg.index.finish()
        seg.file.flush()
        os.fsync(seg.file.fileno())
        seg.file.close()
        pad = active and self.preallocate
        base = seg.base_offset
        atomic_write(
            self.dir / segment_file_name(base, ".index"),
            bytes(seg.index.offset_index),
            padded_to=oi.DEFAULT_MAX_INDEX_SIZE if pad else None,
        )
        atomic_write(
            self.dir / segment_file_name(base, ".timeindex"),
            bytes(seg.index.time_index),
            padded_to=ti.DEFAULT_MAX_INDEX_SIZE if pad else None,
        )
        if seg.aborted:
            atomic_write(
                self.dir / segment_file_name(base, ".txnindex"), encode_txn_entries(seg.aborted)
            )

    def _write_snapshot(self, offset: int) -> None:
        if self._producers:
            entries = sorted(self._producers.values(), key=lambda e: e.producer_id)
            atomic_write(
                self.dir / segment_file_name(offset, ".snapshot"), encode_snapshot(entries)
            )

    def close(self) -> None:
        if self._closed:
            return
        if self._segment is None:
            self.roll()
        self._finish_segment(self._segment, active=True)
        if self.write_snapshots:
            self._write_snapshot(self.next_offset)
        if self._epochs:
            atomic_write(
                self.dir / "leader-epoch-checkpoint", encode_leader_epoch_checkpoint(self._epochs)
            )
        self._closed = True


def _codec(value: str | int) -> int:
    return compression.codec_id(value)
