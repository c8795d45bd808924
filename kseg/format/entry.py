"""What every entry of a `.log` shares, whatever its magic: the first 17 bytes.

Kafka's `Records` constants. Wire layout (big-endian), positions derived from the field list:

    offset i64 | size i32 | (crc u32, magic 0/1; partitionLeaderEpoch i32, magic 2) | magic i8

``offset`` is a v2 batch's base offset or a legacy message's (last) offset; ``size`` counts the
bytes after it. The magic sits at the same byte in every format, which is what lets a reader
choose the format (see magic.py) before it knows anything else.
"""

from __future__ import annotations

import struct

_FIELDS = (
    ("offset", "q"),  # baseOffset (v2) or offset (legacy: a wrapper's last inner offset)
    ("size", "i"),  # batchLength (v2) or messageSize (legacy): bytes after this field
    ("crc_or_epoch", "I"),  # legacy: crc; v2: partitionLeaderEpoch
    ("magic", "b"),
)
FIELD_POS = {}
_p = 0
for _name, _code in _FIELDS:
    FIELD_POS[_name] = _p
    _p += struct.calcsize(">" + _code)
del _name, _code

ENTRY_PREFIX = struct.Struct(">qi")  # offset, size: Kafka's LOG_OVERHEAD bytes
LOG_OVERHEAD = ENTRY_PREFIX.size  # 12
SIZE_POS = FIELD_POS["size"]  # 8
MAGIC_POS = FIELD_POS["magic"]  # 16
HEADER_SIZE_UP_TO_MAGIC = _p  # 17
del _p
assert FIELD_POS["crc_or_epoch"] == LOG_OVERHEAD


def entry_magic(buf, pos: int) -> int:
    """The magic byte of the entry at ``pos``, signed as Kafka reads it (a Java byte)."""
    m = buf[pos + MAGIC_POS]
    return m - 256 if m > 127 else m
