"""The small files beside the segments (checkpoints, partition.metadata, meta.properties, producer
snapshots, quorum-state, the clean-shutdown marker): each read whole, but only up to the largest
such file Kafka writes, so a hostile or damaged one (a sparse 3 GiB `leader-epoch-checkpoint`)
costs nothing: its size is stat'ed first and a larger one is refused unread, with a positioned
error naming the file, its size and the bound (``invalid_file`` at byte ``bound``).

The bounds (Kafka's writers; each leaves room far above what a broker writes):

- ``partition.metadata``: ``PartitionMetadataFile`` writes two lines, ``version: 0`` and
  ``topic_id: <22 base64 characters>`` (44 bytes): 4 KiB.
- ``meta.properties``: ``MetaProperties`` writes at most five short keys (version,
  broker.id/node.id, cluster.id, directory.id) and a date comment, a few hundred bytes: 64 KiB.
- ``.kafka_cleanshutdown`` (``{"version":0,"brokerEpoch":N}``) and ``quorum-state`` (a JSON
  object: leader, epoch, voters): 1 MiB.
- the four root offset checkpoints: ``OffsetCheckpointFile`` writes a version line, a count
  line and one ``topic partition offset`` line per partition of the log dir, at most 282 bytes
  (a 249-character topic name, an int32, an int64): 64 MiB holds 238,000 partitions, more than
  any broker carries.
- ``leader-epoch-checkpoint``: one ``epoch startOffset`` line per leader epoch still starting
  in the log, at most 33 bytes (an int32 and an int64): 64 MiB holds two million epochs, each
  a leader election of this one partition.
- producer ``.snapshot``: ``ProducerStateManager.writeSnapshot`` writes a 10-byte header and one
  46-byte entry per producer with state in the partition (read back whole with
  ``Files.readAllBytes``): 64 MiB holds 1.4 million producers.

Indexes are not read whole at all (kseg.storage.mapped.FileSlices; Kafka's own bound for them
is kseg.format.index.MAX_INDEX_BYTES).
"""

from __future__ import annotations

import os

from kseg.format.errors import INVALID_FILE, CorruptionError
from kseg.storage import files as F
from kseg.storage.mapped import _remote, open_regular

KIB, MIB = 1 << 10, 1 << 20

# kind -> (bound in bytes, what the file is called in the message)
BOUNDS: dict[str, tuple[int, str]] = {
    F.PARTITION_METADATA: (4 * KIB, "partition.metadata"),
    F.META_PROPERTIES: (64 * KIB, "meta.properties"),
    F.CLEAN_SHUTDOWN: (1 * MIB, "clean-shutdown marker"),
    F.QUORUM_STATE: (1 * MIB, "quorum-state"),
    F.OFFSET_CHECKPOINT: (64 * MIB, "offset checkpoint"),
    F.LEADER_EPOCH_CHECKPOINT: (64 * MIB, "leader-epoch-checkpoint"),
    F.SNAPSHOT: (64 * MIB, "producer snapshot"),
}


def too_large(path, size: int, kind: str) -> CorruptionError:
    """The one text for a side file larger than Kafka writes one (see the module docstring)."""
    bound, what = BOUNDS[kind]
    return CorruptionError(
        f"{size} bytes: larger than any {what} Kafka writes (at most {bound} bytes here); not read",
        kind=INVALID_FILE,
        position=bound,
        file=str(path),
    )


def read_side_file(path, kind: str | None = None) -> bytes:
    """The whole content of the side file ``path`` of ``kind`` (by its name when not given),
    refused unread above its bound: a CorruptionError (invalid_file, naming the file and its
    size). Raises OSError as reading does (missing, unreadable, not a regular file)."""
    kind = kind or F.file_kind(path).kind
    bound = BOUNDS[kind][0]
    remote = _remote(path)
    if remote is not None:
        size = remote.stat().st_size
        if size > bound:
            raise too_large(path, size, kind)
        return remote.read_bytes()
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > bound:
            raise too_large(path, size, kind)
        out = bytearray()
        while len(out) <= bound:  # a file that grew meanwhile is still read only so far
            piece = os.read(fd, bound + 1 - len(out))
            if not piece:
                break
            out += piece
        if len(out) > bound:
            raise too_large(path, len(out), kind)
        return bytes(out)
    finally:
        os.close(fd)
