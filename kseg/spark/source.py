"""The `kseg` Spark data source (PySpark's Python Data Source API, Spark >= 4.1).

    spark.dataSource.register(KsegDataSource)           # or kseg.spark.register(spark)
    df = spark.read.format("kseg").option("includeHeaders", "true").load("/data/kafka-logs")

Options: mode=records|batches|segments|findings; includeHeaders; segmentColumns (segment,
position, magic, compression, leader_epoch, producer_id, is_transactional, is_control);
includeControl (control batches are skipped by default, as consumers skip them); topic (regex);
partitions (comma list); fromOffset/toOffset; fromTime/toTime (epoch ms or ISO-8601);
maxPartitionBytes (split size, default 128 MiB); computeUncompressed (batches mode); problems
(batches mode: columns problem_kind and problem, null on batch rows, and a row per problem met:
what ends a segment's walk, a batch that does not decompress, an unreadable segment); badCrc
(batches mode: a batch whose CRC fails is a row, crc_valid false, and the walk goes on);
indexIntervalBytes (segments/findings); isolation (records mode: read_uncommitted, the
default, or read_committed: what a read_committed consumer gets, as `kseg dump --isolation`);
resync (records mode, default off: go on past damage,
each skipped range a warning in the executor's log, not a row; kseg.spark.arrow.skipped). Several paths: comma-separated, or a list in load().
Record search (records mode; kseg.dump.search, the same semantics as `kseg dump`): key, value
(RE2 patterns on bytes, kseg.format.regex: searched in linear time), header (NAME or
NAME=REGEX), keyEq (exact key), valueContains; all given must hold. A filter
`col("key") == b"..."` is pushed down as keyEq (with filterPushdown).
payload=schema (records mode): Schema Registry framing decoded into key_schema_id,
value_schema_id, key_json, value_json and schema_error (kseg.spark.schema_columns); schemas:
where the schemas are (default: the _schemas topic among the paths); the search options then
match the decoded values, as `kseg dump --payload schema`'s do; valueStruct=SUBJECT adds
value_struct, each Avro value read as the subject's latest schema (kseg.spark.schema_struct).

The reader object is pickled to executors: it holds plain data only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kseg.format.regex import escape
from kseg.spark import planning
from kseg.spark.planning import Prune, Task

MODES = ("records", "batches", "segments", "findings")


def _opts(options) -> dict:
    """Spark passes options case-insensitively (lower-cased keys): look them up that way."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def _bool(options, name: str, default: bool = False) -> bool:
    v = options.get(name.lower())
    return default if v is None else str(v).strip().lower() in ("true", "1", "yes")


def _int(options, name: str) -> int | None:
    v = options.get(name.lower())
    return None if v in (None, "") else int(v)


def _time(options, name: str) -> int | None:
    v = options.get(name.lower())
    if v in (None, ""):
        return None
    from kseg.seek.timeexpr import parse_time

    return parse_time(str(v))


def _paths(options) -> list[str]:
    raw = options.get("paths") or options.get("path")
    if raw is None:
        raise ValueError("kseg data source: give a path, e.g. .load('/data/kafka-logs')")
    if raw.startswith("["):
        return json.loads(raw)
    return [p for p in raw.split(",") if p]


def _payload(options) -> str:
    payload = (options.get("payload") or "raw").lower()
    if payload not in ("raw", "schema"):
        raise ValueError(f"kseg data source: option payload: {payload!r}: raw or schema")
    return payload


def _struct_type(options):
    """valueStruct's column type (None: no such column); the registry is replayed for it."""
    subject = options.get("valuestruct")
    if not subject:
        return None
    if _payload(options) != "schema":
        raise ValueError("kseg data source: option valueStruct is for payload=schema")
    from kseg.spark.schema_columns import registry_data, struct_reader

    return struct_reader(registry_data(_paths(options), options.get("schemas")), subject).type


def spark_schema(options):
    from pyspark.sql.pandas.types import from_arrow_schema

    options = _opts(options)

    from kseg.spark.arrow import BATCHES_PROBLEMS_SCHEMA, BATCHES_SCHEMA, records_schema
    from kseg.spark.checks import FINDINGS_SCHEMA, SEGMENTS_SCHEMA

    mode = (options.get("mode") or "records").lower()
    if mode not in MODES:
        raise ValueError(f"kseg data source: mode must be one of {', '.join(MODES)}")
    arrow = {
        "records": lambda: records_schema(
            _bool(options, "includeHeaders"),
            _bool(options, "segmentColumns"),
            _payload(options) == "schema",
            _struct_type(options),
        ),
        "batches": lambda: (
            BATCHES_PROBLEMS_SCHEMA if _bool(options, "problems") else BATCHES_SCHEMA
        ),
        "segments": lambda: SEGMENTS_SCHEMA,
        "findings": lambda: FINDINGS_SCHEMA,
    }[mode]()
    return from_arrow_schema(arrow)


class KsegDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kseg"

    def schema(self):
        return spark_schema(self.options)

    def reader(self, schema) -> DataSourceReader:
        # Spark refuses a reader with pushFilters unless spark.sql.python.filterPushdown.enabled;
        # kseg's own session turns it on and says so with this option.
        options = _opts(self.options)
        cls = KsegPushdownReader if _bool(options, "filterPushdown") else KsegReader
        reader = cls(options)
        if reader.value_struct is not None and reader.schema_data is not None:
            # the column's type was fixed when the DataFrame was made; the executors read by
            # the registry as it is now: a later version of the subject is another type
            from pyspark.sql.pandas.types import from_arrow_type

            names = schema.fieldNames()
            fixed = schema["value_struct"].dataType if "value_struct" in names else None
            if fixed is not None and fixed != from_arrow_type(reader.struct_type):
                raise ValueError(
                    f"kseg data source: option valueStruct: subject {reader.value_struct!r} has "
                    "a later version than when this DataFrame was made: read it again"
                )
        return reader


class KsegReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        options = _opts(options)
        self.mode = (options.get("mode") or "records").lower()
        self.paths = _paths(options)
        parts = options.get("partitions")
        self.prune = Prune(
            topic=options.get("topic"),
            partitions=frozenset(int(p) for p in parts.split(",")) if parts else None,
            from_offset=_int(options, "fromOffset"),
            to_offset=_int(options, "toOffset"),
            from_time=_time(options, "fromTime"),
            to_time=_time(options, "toTime"),
        )
        self.row_filter = {
            "from_time": self.prune.from_time,
            "to_time": self.prune.to_time,
            "from_offset": self.prune.from_offset,
            "to_offset": self.prune.to_offset,
        }
        self.include_headers = _bool(options, "includeHeaders")
        self.segment_columns = _bool(options, "segmentColumns")
        self.include_control = _bool(options, "includeControl")
        self.resync = _bool(options, "resync")  # records: go on past damage (warnings)
        self.compute_uncompressed = _bool(options, "computeUncompressed")
        self.problems = _bool(options, "problems")  # batches: a row per problem met
        self.bad_crc = _bool(options, "badCrc")  # batches: walk on past a CRC mismatch
        self.max_bytes = _int(options, "maxPartitionBytes") or planning.DEFAULT_MAX_BYTES
        self.index_interval_bytes = _int(options, "indexIntervalBytes") or 4096
        self.deep = _bool(options, "deep")
        # read_committed: only what a read_committed consumer gets (kseg.storage.isolation); the
        # driver replays each partition's transactions once and hands each task the result
        isolation = (options.get("isolation") or "read_uncommitted").lower()
        if isolation not in ("read_uncommitted", "read_committed"):
            raise ValueError(
                f"kseg data source: option isolation: {isolation!r}: read_uncommitted or "
                "read_committed"
            )
        if isolation == "read_committed" and self.mode != "records":
            raise ValueError("kseg data source: isolation read_committed needs mode=records")
        self.read_committed = isolation == "read_committed"
        self.pushed: dict = {}
        # record search: the options as given (plain data, pickled to the executors), checked
        # here so that a bad regex fails on the driver
        self.search = {
            name: [options[opt]] if options.get(opt) not in (None, "") else None
            for name, opt in (
                ("key", "key"),
                ("value", "value"),
                ("header", "header"),
                ("key_eq", "keyeq"),
                ("value_contains", "valuecontains"),
            )
        }
        if any(self.search.values()) and self.mode != "records":
            raise ValueError("kseg data source: key/value/header filters need mode=records")
        # payload=schema: Schema Registry framing decoded into columns (kseg.spark.schema_columns);
        # the registry replayed here, once, handed to the executors as plain data
        self.schema_data = None
        self.value_struct = options.get("valuestruct") or None  # a subject
        if _payload(options) == "schema":
            if self.mode != "records":
                raise ValueError("kseg data source: payload=schema needs mode=records")
            from kseg.spark.schema_columns import registry_data

            self.schema_data = registry_data(self.paths, options.get("schemas"))
            if self.value_struct is not None:
                from kseg.spark.schema_columns import struct_reader

                self.struct_type = struct_reader(self.schema_data, self.value_struct).type
        elif options.get("schemas"):
            raise ValueError("kseg data source: option schemas is for payload=schema")
        elif self.value_struct is not None:
            raise ValueError("kseg data source: option valueStruct is for payload=schema")
        self._record_filter()

    def _record_filter(self):
        """The RecordFilter of the options and of a pushed-down key == bytes (None: no filter)."""
        from kseg.dump.search import record_filter
        from kseg.outcome import BadOption

        search = dict(self.search)
        if "key_eq" in self.pushed:
            search["key_eq"] = [*(search["key_eq"] or []), self.pushed["key_eq"]]
        try:
            keep = record_filter(**search)
        except BadOption as exc:
            raise ValueError(f"kseg data source: option {exc.option.lstrip('-')}: {exc}") from None
        if keep is not None and self.schema_data is not None:  # a search on decoded values
            from kseg.dump.schema_events import DecodedFilter
            from kseg.spark.schema_columns import decoder_of

            keep = DecodedFilter(keep, decoder_of(self.schema_data))
        return keep

    def _prune(self) -> Prune:
        p = self.prune
        q = self.pushed
        return Prune(
            topic=p.topic if p.topic else q.get("topic"),
            partitions=p.partitions if p.partitions is not None else q.get("partitions"),
            from_offset=_tighter(p.from_offset, q.get("from_offset"), max),
            to_offset=_tighter(p.to_offset, q.get("to_offset"), min),
            from_time=_tighter(p.from_time, q.get("from_time"), max),
            to_time=_tighter(p.to_time, q.get("to_time"), min),
        )

    def partitions(self):
        prune = self._prune()
        if self.mode == "findings":
            tasks = planning.partition_tasks(self.paths, prune)
        elif self.mode == "segments":
            tasks = planning.plan(self.paths, prune, max_bytes=1 << 62)  # one task per segment
        else:  # records mode also reads Kafka 0.7 partitions
            tasks = planning.plan(self.paths, prune, self.max_bytes, kafka07=self.mode == "records")
        if self.read_committed:
            return _committed_partitions(tasks)
        return [InputPartition(t.to_dict()) for t in tasks]

    def read(self, partition) -> Iterator:
        if partition is None or partition.value is None:
            return  # Spark plans one empty partition when partitions() found nothing
        value = dict(partition.value)
        committed = value.pop("committed", None)  # read_committed: plain data, see partitions
        task = Task(**value)
        if self.mode == "records" and self.schema_data is not None:
            from kseg.spark.schema_columns import with_schema_columns

            yield from with_schema_columns(
                self._records(task, committed), self.schema_data, self.value_struct
            )
        elif self.mode == "records":
            yield from self._records(task, committed)
        elif self.mode == "batches":
            from kseg.spark.arrow import batch_rows

            yield from batch_rows(
                task,
                compute_uncompressed=self.compute_uncompressed,
                problems=self.problems,
                bad_crc=self.bad_crc,
            )
        elif self.mode == "segments":
            from kseg.spark.checks import segment_rows

            yield from segment_rows(task, self.index_interval_bytes)
        else:
            from kseg.spark.checks import findings

            yield from findings(task, self.index_interval_bytes, self.deep)

    def _records(self, task: Task, committed) -> Iterator:
        """The records table's batches of one task."""
        if task.kind == planning.KAFKA07:
            from kseg.spark.arrow import kafka07_record_batches

            yield from kafka07_record_batches(
                task,
                include_headers=self.include_headers,
                segment_columns=self.segment_columns,
                record_filter=self._record_filter(),
                **self.row_filter,
            )
        else:
            from kseg.spark.arrow import record_batches

            yield from record_batches(
                task,
                include_headers=self.include_headers,
                segment_columns=self.segment_columns,
                include_control=self.include_control,
                record_filter=self._record_filter(),
                resync=self.resync,
                committed=committed,
                **self.row_filter,
            )


class KsegPushdownReader(KsegReader):
    def pushFilters(self, filters):
        """Use filters on topic/partition/offset/timestamp to prune segments; Spark still applies
        every filter to the rows (all are returned), so pruning can only save work."""
        from pyspark.sql.datasource import (
            EqualTo,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            LessThan,
            LessThanOrEqual,
        )

        if self.mode != "records":
            return filters
        p = {}
        for f in filters:
            col = f.attribute[0] if len(f.attribute) == 1 else None
            value = getattr(f, "value", None)
            if col == "key" and isinstance(f, EqualTo) and isinstance(value, (bytes, bytearray)):
                p["key_eq"] = bytes(value)  # a record search: only batches holding it decode
            elif col == "topic" and isinstance(f, EqualTo):
                p["topic"] = "^" + escape(value) + "$"
            elif col == "partition" and isinstance(f, (EqualTo, In)):
                p["partitions"] = frozenset([value] if isinstance(f, EqualTo) else value)
            elif col in ("offset", "timestamp") and isinstance(
                f, (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
            ):
                v = int(value.timestamp() * 1000) if isinstance(value, datetime) else int(value)
                lower = isinstance(f, (GreaterThan, GreaterThanOrEqual))
                key = ("from_" if lower else "to_") + ("offset" if col == "offset" else "time")
                p[key] = v
        self.pushed = p
        return filters


def _committed_partitions(tasks: list[Task]) -> list[InputPartition]:
    """The tasks with their partition's read_committed view (kseg.storage.isolation.Committed as
    plain data): one replay per partition, on the driver."""
    from kseg.storage.isolation import committed_for
    from kseg.storage.uri import as_path

    views: dict[str, tuple] = {}
    out = []
    for t in tasks:
        value = t.to_dict()
        if t.kind != planning.KAFKA07:  # Kafka 0.7: no transaction
            pdir = str(as_path(t.path).parent)
            if pdir not in views:
                views[pdir] = committed_for(as_path(pdir)).to_data()
            value["committed"] = views[pdir]
        out.append(InputPartition(value))
    return out


def _tighter(a, b, pick):
    if a is None:
        return b
    if b is None:
        return a
    return pick(a, b)
