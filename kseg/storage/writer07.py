"""Log07Writer: append to a Kafka 0.7 partition directory as a 0.7 broker lays it out.

Segments are `<20 digits>.kafka`, named by the byte offset of their first entry in the partition's
stream; a new segment starts once the last one has grown past ``segment_bytes`` (0.7's
``log.file.size``: ``Log.maybeRoll`` after an append), so ``name + size == next name`` always
holds. No index files exist in 0.7. Used for fixtures and the demo; never on a live broker's data.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from kseg.format import compression, kafka07
from kseg.format.errors import KsegError
from kseg.storage.files import segment_file_name

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


class Append07(NamedTuple):
    offset: int  # byte offset of the first entry written
    next_offset: int  # the log end after the append
    segment: Path


class Log07Writer:
    """Append-only writer for one 0.7 partition dir (created if missing, must hold no segment)."""

    def __init__(
        self,
        partition_dir: str | Path,
        *,
        magic: int = kafka07.CURRENT_MAGIC,
        compression: str | int = "none",
        segment_bytes: int = 512 << 20,  # 0.7's log.file.size default
        base_offset: int = 0,
    ) -> None:
        self.dir = Path(partition_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if any(self.dir.glob("*" + kafka07.EXTENSION)):
            raise KsegError(f"{self.dir}: already holds segments; Log07Writer only starts new logs")
        if segment_bytes < 1:
            raise ValueError("segment_bytes must be positive")
        self.magic = magic
        self.compression = compression
        self.segment_bytes = segment_bytes
        self.end = base_offset
        self.segments: list[Path] = []
        self._file = None
        self._size = 0
        self._open(base_offset)

    def _open(self, offset: int) -> None:
        path = self.dir / segment_file_name(offset, kafka07.EXTENSION)
        self._file = open(path, "xb")  # noqa: SIM115 - open for the segment's lifetime
        self._size = 0
        self.segments.append(path)

    def append(
        self,
        payloads: Iterable[bytes],
        *,
        magic: int | None = None,
        compression: str | int | None = None,
    ) -> Append07:
        """One producer request: a message per payload, or one compressed wrapper for all."""
        codec = kafka07_codec(self.compression if compression is None else compression)
        data = kafka07.encode_message_set(
            payloads, magic=self.magic if magic is None else magic, codec=codec
        )
        return self.append_raw(data)

    def append_raw(self, data: bytes) -> Append07:
        """Bytes of whole entries as they are (a nested wrapper built by the caller)."""
        if self._file is None:
            raise KsegError(f"{self.dir}: the writer is closed")
        start = self.end
        self._file.write(data)
        self._size += len(data)
        self.end += len(data)
        segment = self.segments[-1]
        if self._size > self.segment_bytes:  # maybeRoll: past the size, the next append rolls
            self._file.close()
            self._open(self.end)
        return Append07(start, self.end, segment)

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def __enter__(self) -> Log07Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def kafka07_codec(name: str | int) -> int:
    cid = compression.codec_id(name)
    if cid not in kafka07.CODECS:
        raise ValueError(f"Kafka 0.7 knows none, gzip and snappy, not {name!r}")
    return cid


def mark_clean_shutdown(log_dir: str | Path) -> Path:
    """The empty `.kafka_cleanshutdown` a 0.7 broker leaves in its log dir on a clean stop."""
    path = Path(log_dir) / CLEAN_SHUTDOWN_FILE
    path.write_bytes(b"")
    return path
