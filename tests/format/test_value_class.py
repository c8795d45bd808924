"""kseg's value classes are ``typing.NamedTuple``s (cheap to define at import, which keeps start-up
fast): each one's constructor takes exactly its fields, equality, hash, repr, pickle and copy
behave as the frozen ``@dataclass(slots=True)`` classes they replaced, copies are made with
``_replace`` and ``_asdict`` gives the fields by name. What a tuple changes is stated here too.

The few classes filled in as work goes (accumulators, not values) are plain classes with
``__slots__`` and a hand-written ``__init__`` on ``kseg.format.accumulator.Accumulator``
(equality by slots, as the dataclasses they were)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from pathlib import Path

import orjson
import pytest

from kseg.dump.options import DumpOptions
from kseg.dump.search import RecordFilter
from kseg.fixtures.corrupt import CorruptCase
from kseg.fixtures.recovery import RecoveryCase
from kseg.format.checkpoint import EpochEntry, TopicPartitionOffset
from kseg.format.control import ControlRecord
from kseg.format.index_rule import RefusedEntry
from kseg.format.kafka07 import Inner
from kseg.format.kafka_version import KafkaVersion
from kseg.format.magic import MagicFormat
from kseg.format.offset_index import OffsetPosition
from kseg.format.producer_snapshot import ProducerEntry, ProducerSnapshot
from kseg.format.record import Record
from kseg.format.schema import Field, Schema
from kseg.format.time_index import TimestampOffset
from kseg.format.txn_index import AbortedTxn
from kseg.index.rebuild import FileAction, RebuiltIndexes, SegmentRebuild
from kseg.offsets.leaders import LeaderAt
from kseg.repair.manifest import Action, Manifest
from kseg.repair.restore import PartitionRestore
from kseg.seek.seek import OffsetLocation, SeekResult
from kseg.spark.parquet_out import ArrowExport
from kseg.spark.planning import Prune, Task
from kseg.stats.stats import SegmentMark, StatsOptions, Timeline
from kseg.storage.files import FileKind, PartitionName
from kseg.storage.kafka07 import Gap
from kseg.storage.lock import LogDirLocks
from kseg.storage.tree import Child, Item, Layout, PartitionDir, Selection, Target
from kseg.storage.writer import AppendInfo
from kseg.storage.writer07 import Append07
from kseg.verify.findings import Finding, Patch
from kseg.verify.index_check import IndexStatus
from kseg.verify.kafka07 import Report07, Scan07
from kseg.verify.kafka_walk import KafkaWalk
from kseg.verify.partition import PartitionReport
from kseg.verify.run import VerifyOptions
from kseg.verify.segment import SegmentScan

VALUES = [
    # were FrozenValue classes
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
    RefusedEntry,
    KafkaVersion,
    # were Value classes (mutable; now built once)
    Record,
    Finding,
    IndexStatus,
    KafkaWalk,
    SeekResult,
    OffsetLocation,
    # were @dataclass classes
    ProducerSnapshot,
    ProducerEntry,
    Field,
    Schema,
    AppendInfo,
    Append07,
    LeaderAt,
    RecordFilter,
    CorruptCase,
    RecoveryCase,
    PartitionRestore,
    FileAction,
    SegmentRebuild,
    RebuiltIndexes,
    StatsOptions,
    Task,
    Prune,
    ArrowExport,
    DumpOptions,
]
# filled in as work goes; the constructor takes every slot
ACCUMULATORS = [SegmentScan, PartitionReport, Manifest, Action]
# filled in as work goes; the constructor takes what is known first
ACCUMULATORS_BUILT = {
    Scan07: lambda: Scan07(Path("0.kafka"), 0, 0),
    Report07: lambda: Report07(Target(Path("t-0"), [])),
    SegmentMark: lambda: SegmentMark("0.log", 0),
    Timeline: lambda: Timeline("t", 0, "/d"),
    LogDirLocks: LogDirLocks,
}


@pytest.mark.parametrize("cls", VALUES, ids=lambda c: c.__name__)
def test_a_value_is_a_named_tuple_of_exactly_its_fields(cls):
    assert issubclass(cls, tuple) and cls.__bases__ == (tuple,)
    assert list(inspect.signature(cls).parameters) == list(cls._fields)
    assert "__dict__" not in dir(cls)  # slots only: a typo'd attribute is an error
    # a default is shared by every instance: never a mutable one
    for name, default in cls._field_defaults.items():
        assert not isinstance(default, (list, dict, set, bytearray)), name


@pytest.mark.parametrize("cls", ACCUMULATORS, ids=lambda c: c.__name__)
def test_an_accumulator_is_a_plain_class_whose_init_sets_exactly_the_slots(cls):
    params = list(inspect.signature(cls).parameters)
    assert params == list(cls.__slots__)
    assert not issubclass(cls, tuple)
    assert "__dict__" not in dir(cls)


@pytest.mark.parametrize("cls", list(ACCUMULATORS_BUILT), ids=lambda c: c.__name__)
def test_an_accumulator_built_from_less_sets_every_slot(cls):
    obj = ACCUMULATORS_BUILT[cls]()
    assert not isinstance(obj, tuple) and "__dict__" not in dir(cls)
    for name in cls.__slots__:
        getattr(obj, name)  # set by __init__: no AttributeError
    with pytest.raises(AttributeError):
        obj.other = 1


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


def test_a_value_behaves_as_a_frozen_dataclass():
    a, b, d = OffsetPosition(5, 10), OffsetPosition(5, 10), DPair(5, 10)
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != OffsetPosition(5, 11)
    assert (a == d) is False and a.__eq__(d) is NotImplemented
    assert repr(a) == repr(d).replace("DPair", "OffsetPosition")
    assert {a, b, OffsetPosition(6, 0)} == {a, OffsetPosition(6, 0)}
    with pytest.raises(AttributeError):  # (a dataclass: FrozenInstanceError, an AttributeError)
        a.offset = 7
    with pytest.raises(AttributeError):
        del a.position
    with pytest.raises(AttributeError):
        a.other = 1
    for clone in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert clone == a and type(clone) is OffsetPosition and clone.position == 10
    assert OffsetPosition(1, 2)._replace(position=3) == OffsetPosition(1, 3)


def test_a_value_is_a_tuple():
    """What a tuple changes from a dataclass, stated so that code relying on it is visible."""
    a = OffsetPosition(5, 10)
    # equal to any tuple of the same fields, whatever its class (a dataclass of another class
    # was unequal): no kseg code compares values of two classes
    assert a == (5, 10) and a == TimestampOffset(5, 10)
    assert tuple(a) == (5, 10) and len(a) == 2
    offset, position = a
    assert (offset, position) == (5, 10)
    # orjson refuses a tuple subclass (a dataclass it wrote as an object): events take _asdict()
    with pytest.raises(TypeError):
        orjson.dumps(a)
    assert orjson.dumps(tuple(a)) == b"[5,10]"
    assert orjson.dumps(a._asdict()) == b'{"offset":5,"position":10}'
    # a value holding a list is hashable until it is hashed (a frozen dataclass: the same)
    t = Target(Path("t-0"), [Path("t-0/0.log")])
    with pytest.raises(TypeError):
        hash(t)


def test_a_finding_behaves_as_the_dataclass_did_and_is_built_once():
    args = ("error", "crc", "x.log", 61, 3, "batch CRC-32C mismatch")
    f, d = Finding(*args), DFinding(*args)
    assert f == Finding(*args) and f != Finding(*args[:-1], "other")
    assert repr(f) == repr(d).replace("DFinding", "Finding")
    assert hash(f) == hash(Finding(*args))  # immutable now: hashable (it was mutable: unhashable)
    with pytest.raises(AttributeError):
        f.repairable = True
    f = f._replace(repairable=True)
    assert f._asdict() == dataclasses.asdict(DFinding(*args, repairable=True))
    assert f.to_event() == {"type": "finding", **dataclasses.asdict(DFinding(*args, True))}
    clone = pickle.loads(pickle.dumps(f))
    assert clone == f and clone.repairable is True
    other = f._replace(message="m", position=None)
    assert other == Finding(*args[:3], None, 3, "m", True) and f.message == args[-1]


def test_default_lists_are_fresh_per_instance():
    a, b = Record(b"k"), Record(b"k")
    # a value's default is shared: an empty tuple, which nobody can append to
    assert a.headers == () and b.headers == ()
    with pytest.raises(AttributeError):
        a.headers.append(("h", None))
    assert Record(b"k", headers=[("h", None)]) != a
    s = SegmentScan(Path("0.log"), 0, 0)
    assert s.findings == [] and s.findings is not SegmentScan(Path("0.log"), 0, 0).findings
    assert s.max_timestamp == -1 and s.corrupt is False
    m = Manifest(Path("t-0"))
    assert m.actions == [] and m.actions is not Manifest(Path("t-0")).actions
    assert m.rebuilt == {} and m.rebuilt is not Manifest(Path("t-0")).rebuilt
    t = Timeline("t", 0, "/d")
    assert t.samples == [] and t.samples is not Timeline("t", 0, "/d").samples
