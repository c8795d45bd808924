"""What a dump shows (DumpOptions), and dump's search options made into their objects."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from kseg.format.compression import DEFAULT_MAX_DECOMPRESSED


class JsonLines(Protocol):
    """What dump asks of DumpOptions.json_lines (kseg.render.dump_json.DumpJsonLines): the JSON
    text is render's, the selection dump's; the compiled kernel's JSON objects come through
    here, so dump walks and selects with them without writing JSON itself."""

    def record_maker(self, name: str, mode: str, tags: dict) -> Callable | None:
        """(record tuple, file) -> its finished JSON line, or None: the record events stay
        dicts."""

    def kernel_records(self, name: str, tags: dict, opts: DumpOptions) -> object | None:
        """The kernel's renderer of one file's record lines (kseg.dump.kernel_json.json_records), or
        None: the core's path."""

    def kernel_batches(self, opts: DumpOptions) -> object | None:
        """The same for batch lines alone (--batches-only)."""

    def batch_fields(self, name: str, tags: dict) -> tuple[bytes, bytes]:
        """(file name, partition tags) as a kernel run writes them into a batch line."""


class DumpOptions(NamedTuple):
    batches_only: bool = False
    payload: str = "auto"
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    limit: int | None = None
    max_bytes: int | None = None
    topic: str | None = None
    partition: int | None = None
    decoder: str | None = None  # a name in internal_topics.DECODERS, or "none"; None = by topic
    skip_record_metadata: bool = False  # records as offset + decoded payload only, no batches
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    # the consumer writes JSON Lines: record events may arrive as ready lines (bytes), made by
    # this (kseg.render.dump_json.JSON_LINES); None: every event is a dict
    json_lines: JsonLines | None = None
    # record search (kseg.dump.search.RecordFilter): only records it keeps, and their batches
    record_filter: object = None
    # only the number of (matching) records per partition and a total (see dump_chunks)
    count: bool = False
    # records only, as bytes in this format (kseg.dump.format_string.compile_format's parts)
    format_string: tuple | None = None
    # go on past damage (kseg.format.resync): CRCs checked, each unreadable range a ``skipped``
    # event (kseg.dump.error_events.skipped_event), the intact entries after it shown
    resync: bool = False
    # "read_committed": only what a read_committed consumer is handed (kseg.storage.isolation);
    # ``committed`` is the partition's Committed, set per partition by kseg.dump.plan
    isolation: str = "read_uncommitted"
    committed: object = None
    # worker processes for a search or --count (kseg.dump.plan._jobs; None: every core)
    jobs: int | None = 1
    # --payload schema (kseg.dump.schema_events): where the schemas are (None: the _schemas
    # topic in or beside the paths), and the decoder the plan makes of them
    schema_source: object = None
    schemas: object = None
    # a key or value that does not decode by its schema is invalid data (else a finding only)
    strict: bool = False


def search_options(key, value, header, key_eq, value_contains, format_string):
    """(record filter or None, compiled --format-string or None) from dump's search options;
    their modules are imported only when one is given (dump's start-up stays as it was)."""
    record_filter = parts = None
    if key or value or header or key_eq or value_contains:
        from kseg.dump.search import record_filter as make_filter

        record_filter = make_filter(key, value, header, key_eq, value_contains)
    if format_string is not None:
        from kseg.dump.format_string import compile_format

        parts = tuple(compile_format(format_string))
    return record_filter, parts
