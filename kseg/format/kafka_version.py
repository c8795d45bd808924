"""Which Kafka release's rules to apply (`--kafka-version X.Y`): the recovery and index rules
that changed between releases, each with the release that changed it and the Kafka code it
follows. Default: the newest (the rules every other module states).

- ``.txnindex``: an ABORT marker for a producer with no open transaction. Up to 2.7,
  ``ProducerAppendInfo.appendEndTxnMarker`` (core/.../kafka/log/ProducerStateManager.scala)
  opened the transaction at the marker (``case None => transactions += new
  TxnMetadata(producerId, offset)``) and always returned a ``CompletedTxn``, so
  ``LogSegment.updateTxnIndex`` wrote an entry (first offset = last offset = the marker's
  offset). From 2.8 (KAFKA-10702, "Skip bookkeeping of empty transactions", apache/kafka PR
  #9632) it returns a ``CompletedTxn`` only when the producer has an open transaction ("Only
  emit the `CompletedTxn` for non-empty transactions"), as 3.x's Scala and 3.6+'s
  storage/.../ProducerAppendInfo.java still do.
- ``.index`` entry offset in ``LogSegment.recover``: 0.10.x indexes an entry by its FIRST offset
  (``index.append(entry.firstOffset, validBytes)``: a compressed wrapper's first inner message)
  and 0.11.0 by ``batch.baseOffset`` (the same for legacy entries); 2.0 and later by
  ``offsetIndex.append(batch.lastOffset, validBytes)``. Live appends follow suit (0.10/0.11:
  the append's first offset; later: its largest). 1.0 and 1.1 were not read: kseg gives them
  the 2.0 rule.
- ``.txnindex`` exists from 0.11.0 (KIP-98), ``.timeindex`` from 0.10.1.0 (KIP-33).
"""

from __future__ import annotations

import re
from typing import NamedTuple

# every Apache Kafka release line (major.minor) kseg knows; patch numbers are accepted too
RELEASES = (
    (0, 8),
    (0, 9),
    (0, 10),
    (0, 11),
    (1, 0),
    (1, 1),
    *((2, m) for m in range(9)),
    *((3, m) for m in range(10)),
    (4, 0),
    (4, 1),
)
NEWEST = RELEASES[-1]
_FORM = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class KafkaVersion(NamedTuple):
    """A Kafka release line (and patch, when given) and the rules it wrote by."""

    major: int
    minor: int
    patch: int | None = None

    @property
    def line(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def __str__(self) -> str:
        tail = "" if self.patch is None else f".{self.patch}"
        return f"{self.major}.{self.minor}{tail}"

    @property
    def txn_index_empty_aborts(self) -> bool:
        """An ABORT that closes no open transaction still adds a `.txnindex` entry (0.11-2.7)."""
        return (0, 11) <= self.line < (2, 8)

    @property
    def offset_index_first_offset(self) -> bool:
        """`.index` entries name an entry's FIRST offset (0.8-0.11), not its last."""
        return self.line < (1, 0)

    @property
    def has_txn_index(self) -> bool:
        return self.line >= (0, 11)

    @property
    def has_time_index(self) -> bool:
        return self.line > (0, 10) or (self.line == (0, 10) and self.patch != 0)


DEFAULT = KafkaVersion(*NEWEST)

# the rule labels `index check` names ("equivalent (Kafka 0.11-2.7 rule)")
TXN_RULE_EMPTY_ABORTS = "0.11-2.7"
TXN_RULE_OPEN_ONLY = "2.8+"
OFFSET_RULE_FIRST = "0.8-0.11"
OFFSET_RULE_LAST = "1.0+"


def txn_rule(v: KafkaVersion) -> str:
    return TXN_RULE_EMPTY_ABORTS if v.txn_index_empty_aborts else TXN_RULE_OPEN_ONLY


def parse_kafka_version(text: str | None) -> KafkaVersion:
    """``X.Y`` or ``X.Y.Z`` of a known release line (None: the newest); ValueError otherwise,
    its message naming what is accepted."""
    if text is None:
        return DEFAULT
    m = _FORM.fullmatch(text.strip())
    if m is None or (int(m[1]), int(m[2])) not in RELEASES:
        raise ValueError(
            f"{text!r} is no Kafka release kseg knows (X.Y or X.Y.Z, "
            f"{'.'.join(map(str, RELEASES[0]))} to {'.'.join(map(str, NEWEST))})"
        )
    return KafkaVersion(int(m[1]), int(m[2]), None if m[3] is None else int(m[3]))
