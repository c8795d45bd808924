"""The events of the small files: txn index (read in pieces), producer snapshot, leader-epoch
and offset checkpoints, partition.metadata, meta.properties, quorum-state, the clean-shutdown
marker (each read whole, up to the largest Kafka writes: kseg.storage.side_files). With selectors, only the entries that concern the selected offsets and times."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.dump.error_events import error_event
from kseg.dump.options import DumpOptions
from kseg.dump.selection import in_times
from kseg.format import checkpoint as cp
from kseg.format import txn_index as tx
from kseg.format.errors import CorruptionError
from kseg.storage import files as F


def dump_small_file(
    kind: str,
    data: bytes,
    name: str,
    path: Path,
    opts: DumpOptions | None = None,
    offsets: tuple[int, int] | None = None,
) -> Iterator[dict]:
    """Small files whole; with selectors, only the entries that concern the selected offsets
    (txn index: aborted transactions overlapping them; producer state: last written within the
    offsets and the time window; leader epochs: those whose range overlaps the offsets)."""
    opts = opts or DumpOptions()
    lo, hi = offsets or (-(1 << 63), (1 << 63) - 1)
    try:
        if kind == F.TXN_INDEX:
            for e in tx.read_entries(data):
                if e.last_offset < lo or e.first_offset > hi:
                    continue
                yield {
                    "type": "txn_index_entry",
                    "file": name,
                    "version": e.version,
                    "producer_id": e.producer_id,
                    "first_offset": e.first_offset,
                    "last_offset": e.last_offset,
                    "last_stable_offset": e.last_stable_offset,
                }
        elif kind == F.SNAPSHOT:
            from kseg.format import producer_snapshot as ps  # only for a .snapshot (start-up)

            snap = ps.read_snapshot(data)
            for e in snap.entries:
                if lo <= e.last_offset <= hi and in_times(e.timestamp, opts):
                    yield {"type": "producer_state", "file": name, **e._asdict()}
        elif kind == F.LEADER_EPOCH_CHECKPOINT:
            epochs = cp.read_leader_epoch_checkpoint(data)
            for i, e in enumerate(epochs):
                end = epochs[i + 1].start_offset - 1 if i + 1 < len(epochs) else (1 << 63) - 1
                if e.start_offset > hi or end < lo:
                    continue
                yield {
                    "type": "leader_epoch",
                    "file": name,
                    "epoch": e.epoch,
                    "start_offset": e.start_offset,
                }
        elif kind == F.OFFSET_CHECKPOINT:
            for e in cp.read_offset_checkpoint(data) if data.strip() else []:
                yield {
                    "type": "checkpoint_entry",
                    "file": name,
                    "checkpoint": path.name,
                    "topic": e.topic,
                    "partition": e.partition,
                    "offset": e.offset,
                }
        elif kind == F.PARTITION_METADATA:
            yield {"type": "partition_metadata", "file": name, **cp.read_partition_metadata(data)}
        elif kind == F.META_PROPERTIES:
            yield {"type": "meta_properties", "file": name, "properties": cp.read_properties(data)}
        elif kind == F.QUORUM_STATE:
            from kseg.format.metadata import read_quorum_state

            yield {"type": "quorum_state", "file": name, **read_quorum_state(data)}
        elif kind == F.CLEAN_SHUTDOWN:
            yield {"type": "clean_shutdown", "file": name, **cp.read_clean_shutdown(data)}
    except CorruptionError as exc:
        yield error_event(exc.in_file(name), name)
