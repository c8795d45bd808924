"""Errors raised by the format core.

Every error about bad input carries where it happened: the byte position in the file (or buffer),
the field, and for checksums the stored and computed values. The format core knows no paths; the
storage layer attaches the file name with :meth:`CorruptionError.in_file`.
"""

from __future__ import annotations

# Stable kinds: they appear in JSON output and in tests, so they are part of the interface.
TORN_TAIL = "torn_tail"
ZERO_FILLED_TAIL = "zero_filled_tail"
INVALID_SIZE = "invalid_size"
INVALID_MAGIC = "invalid_magic"
CRC_MISMATCH = "crc_mismatch"
INVALID_RECORD = "invalid_record"
INVALID_CONTROL = "invalid_control"
DECOMPRESSION_FAILED = "decompression_failed"
DECOMPRESSION_LIMIT = "decompression_limit"
UNKNOWN_CODEC = "unknown_codec"
INVALID_INDEX = "invalid_index"
INVALID_FILE = "invalid_file"


class KsegError(Exception):
    """Base class of every error kseg raises on purpose."""


class CorruptionError(KsegError):
    """Input bytes that do not follow the format."""

    def __init__(
        self,
        message: str,
        *,
        kind: str = INVALID_RECORD,
        position: int | None = None,
        field: str | None = None,
        stored: object = None,
        computed: object = None,
        offset: int | None = None,
        file: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.position = position
        self.field = field
        self.stored = stored
        self.computed = computed
        self.offset = offset
        self.file = file
        self.records: list = []  # for record decoding errors: the good records before the bad one

    def in_file(self, file: object) -> CorruptionError:
        """Attach the file name (once: the innermost caller knows best)."""
        if self.file is None:
            self.file = str(file)
        return self

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.position is not None:
            where.append(f"byte {self.position}")
        if self.field:
            where.append(self.field)
        text = ": ".join(where + [self.message]) if where else self.message
        if self.stored is not None or self.computed is not None:
            text += f" (stored {_show(self.stored)}, computed {_show(self.computed)})"
        return text

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "file": self.file,
            "position": self.position,
            "offset": self.offset,
            "field": self.field,
            "message": self.message,
            "stored": self.stored,
            "computed": self.computed,
        }


class DecompressionError(CorruptionError):
    """A compressed payload that cannot be decompressed, or would exceed the size bound."""

    def __init__(self, message: str, *, kind: str = DECOMPRESSION_FAILED, **kw) -> None:
        super().__init__(message, kind=kind, **kw)


def _show(value: object) -> str:
    return str(value) if value is not None else "-"
