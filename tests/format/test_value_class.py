"""kseg.format.value_class: the data classes on every command's start-up path behave as the
``@dataclass(slots=True[, frozen=True])`` classes they replaced (equality, hash, repr,
immutability, pickle and copy), and each one's ``__init__`` sets exactly its ``__slots__``."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from pathlib import Path

import pytest

from kseg.format.checkpoint import EpochEntry, TopicPartitionOffset
from kseg.format.control import ControlRecord
from kseg.format.kafka07 import Inner
from kseg.format.magic import MagicFormat
from kseg.format.offset_index import OffsetPosition
from kseg.format.record import Record
from kseg.format.time_index import TimestampOffset
from kseg.format.txn_index import AbortedTxn
from kseg.format.value_class import FrozenValue, Value
from kseg.index.check import IndexStatus
from kseg.seek.seek import OffsetLocation, SeekResult
from kseg.storage.files import FileKind, PartitionName
from kseg.storage.kafka07 import Gap
from kseg.storage.tree import Child, Item, Layout, PartitionDir, Selection, Target
from kseg.verify.findings import Finding, Patch
from kseg.verify.partition import PartitionReport
from kseg.verify.run import VerifyOptions
from kseg.verify.segment import SegmentScan

FROZEN = [
    EpochEntry,
    TopicPartitionOffset,
    ControlRecord,
    MagicFormat,
    OffsetPosition,
    TimestampOffset,
    AbortedTxn,
    FileKind,
    PartitionName,
    Child,
    Item,
    Layout,
    PartitionDir,
    Selection,
    Target,
    Patch,
    VerifyOptions,
    Inner,
    Gap,
]
MUTABLE = [Record, Finding, IndexStatus, PartitionReport, SegmentScan, SeekResult, OffsetLocation]


@pytest.mark.parametrize("cls", FROZEN + MUTABLE, ids=lambda c: c.__name__)
def test_init_sets_exactly_the_slots(cls):
    params = list(inspect.signature(cls).parameters)
    assert params == list(cls.__slots__)
    assert issubclass(cls, FrozenValue if cls in FROZEN else Value)
    assert not issubclass(cls, FrozenValue) or cls in FROZEN
    assert "__dict__" not in dir(cls)  # slots only: a typo'd attribute is an error


@dataclasses.dataclass(frozen=True, slots=True)
class DPair:
    offset: int
    position: int


@dataclasses.dataclass(slots=True)
class DFinding:
    severity: str
    kind: str
    file: str
    position: int | None
    offset: int | None
    message: str
    repairable: bool = False


def test_frozen_behaves_as_a_frozen_dataclass():
    a, b, d = OffsetPosition(5, 10), OffsetPosition(5, 10), DPair(5, 10)
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != OffsetPosition(5, 11) and a != TimestampOffset(5, 10)  # other class: unequal
    assert (a == d) is False and a.__eq__(d) is NotImplemented
    assert repr(a) == repr(d).replace("DPair", "OffsetPosition")
    assert {a, b, OffsetPosition(6, 0)} == {a, OffsetPosition(6, 0)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.offset = 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        del a.position
    with pytest.raises(AttributeError):
        a.other = 1
    for clone in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert clone == a and type(clone) is OffsetPosition and clone.position == 10


def test_mutable_behaves_as_a_dataclass():
    args = ("error", "crc", "x.log", 61, 3, "batch CRC-32C mismatch")
    f, d = Finding(*args), DFinding(*args)
    assert f == Finding(*args) and f != Finding(*args[:-1], "other")
    assert repr(f) == repr(d).replace("DFinding", "Finding")
    with pytest.raises(TypeError):
        hash(f)
    f.repairable = True
    assert f.as_dict() == dataclasses.asdict(DFinding(*args, repairable=True))
    assert f.to_event() == {"type": "finding", **dataclasses.asdict(DFinding(*args, True))}
    clone = pickle.loads(pickle.dumps(f))
    assert clone == f and clone.repairable is True
    other = f.replaced(message="m", position=None)
    assert other == Finding(*args[:3], None, 3, "m", True) and f.message == args[-1]
    assert OffsetPosition(1, 2).replaced(position=3) == OffsetPosition(1, 3)


def test_default_lists_are_fresh_per_instance():
    a, b = Record(b"k"), Record(b"k")
    a.headers.append(("h", None))
    assert b.headers == [] and a != b
    s = SegmentScan(Path("0.log"), 0, 0)
    assert s.findings == [] and s.findings is not SegmentScan(Path("0.log"), 0, 0).findings
    assert s.max_timestamp == -1 and s.corrupt is False
