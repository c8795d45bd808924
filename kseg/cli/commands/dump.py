"""`kseg dump`: decode every file of a data directory (kseg.dump.run), shown by kseg.render."""

from kseg.cli import options as o
from kseg.cli import payload_options as so
from kseg.cli.exit import exit_status, track
from kseg.cli.jobs_option import JobsOpt


def dump(
    paths: o.AnyPathsArg,
    fmt: o.FormatOpt = o.OutputFormat.text,
    payload: so.PayloadOpt = o.Payload.auto,
    schemas: so.SchemasOpt = None,
    strict: so.StrictOpt = False,
    batches_only: o.BatchesOnlyOpt = False,
    decoder: o.DecoderOpt = o.Decoder.auto,
    skip_record_metadata: o.SkipRecordMetadataOpt = False,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    from_offset: o.FromOffsetOpt = None,
    to_offset: o.ToOffsetOpt = None,
    from_time: o.FromTimeOpt = None,
    to_time: o.ToTimeOpt = None,
    limit: o.LimitOpt = None,
    max_bytes: o.MaxBytesOpt = None,
    key: o.KeyOpt = None,
    value: o.ValueOpt = None,
    header: o.HeaderOpt = None,
    key_eq: o.KeyEqOpt = None,
    value_contains: o.ValueContainsOpt = None,
    count: o.CountOpt = False,
    format_string: o.FormatStringOpt = None,
    quiet: o.QuietOpt = False,
    resync: o.ResyncOpt = False,
    isolation: o.IsolationOpt = o.Isolation.read_uncommitted,
    jobs: JobsOpt = None,
) -> int:
    """Decode every file of a Kafka data directory (read-only).

    Exit codes: 0 decoded cleanly; 4 something in the input was invalid (reported as an error
    line/object, decoding continued where it safely could; with --payload schema --strict, a
    key or value its schema does not decode); 8 a file could not be read; 16 usage.

    Example:

    \b
      kseg dump /var/lib/kafka/data/orders-0 --from-time -30m --limit 20
      kseg dump /var/lib/kafka/data --topic '^orders$' -f json | jq -c 'select(.type=="record")'
      kseg dump /var/lib/kafka/data --topic '^orders$' --key-eq order-42 --from-time -1d
      kseg dump /var/lib/kafka/data --topic '^orders$' --payload schema --limit 10
    """
    from kseg.dump.options import DumpOptions, search_options
    from kseg.dump.run import DumpRun
    from kseg.render import finish_count, finish_dump, finish_format_string
    from kseg.seek.timeexpr import parse_option_time

    record_filter, parts = search_options(key, value, header, key_eq, value_contains, format_string)
    opts = DumpOptions(
        batches_only=batches_only,
        payload=payload.value,
        from_offset=from_offset,
        to_offset=to_offset,
        from_time=parse_option_time(from_time, "--from-time"),
        to_time=parse_option_time(to_time, "--to-time"),
        limit=limit,
        max_bytes=max_bytes,
        topic=topic,
        partition=partition,
        decoder={"auto": None, "none": "none"}.get(decoder.value, decoder.value),
        skip_record_metadata=skip_record_metadata,
        json_lines=json_lines(fmt),
        record_filter=record_filter,
        count=count,
        format_string=parts,
        resync=resync,
        isolation=isolation.value,
        jobs=jobs,
        schema_source=schemas,
        strict=strict,
    )
    run = DumpRun(paths, opts)
    track(run)
    if parts is not None:
        return exit_status(finish_format_string(run))
    if count:
        return exit_status(finish_count(run, fmt.value))
    return exit_status(finish_dump(run, fmt.value, quiet))


def json_lines(fmt: o.OutputFormat):
    """DumpOptions.json_lines for ``fmt``: render's maker of dump's JSON lines for JSON Lines
    output (imported only then), else None (dump sits below render: it is handed the maker)."""
    if fmt is not o.OutputFormat.json:
        return None
    from kseg.render.dump_json import JSON_LINES

    return JSON_LINES
