"""The options only `kseg spark ...` takes (kseg.cli.options holds those several commands
share, --master and --conf among them)."""

from __future__ import annotations

from typing import Annotated

import typer

OutOpt = Annotated[str, typer.Option("--out", help="Output directory (path or URI).")]
FindingsOutOpt = Annotated[
    str | None, typer.Option("--out", help="Also write the findings table (Parquet) here.")
]
ExportFormatOpt = Annotated[str, typer.Option("--format", help="parquet or json.")]
PartitionByOpt = Annotated[
    str, typer.Option(help="Comma list of columns to partition the output by ('' for none).")
]
HeadersOpt = Annotated[bool, typer.Option(help="Include the headers column.")]
SparkPayloadOpt = Annotated[
    str,
    typer.Option(
        "--payload",
        help="raw (keys and values as bytes), or schema: also Schema Registry framing decoded "
        "into key_schema_id, value_schema_id, key_json, value_json and schema_error.",
    ),
]
SparkValueStructOpt = Annotated[
    str | None,
    typer.Option(
        "--value-struct",
        metavar="SUBJECT",
        help="--payload schema: a value_struct column typed by SUBJECT's latest Avro schema, "
        "each value read as it (Avro schema resolution).",
    ),
]
SparkSchemasOpt = Annotated[
    str | None,
    typer.Option(
        "--schemas",
        metavar="PATH",
        help="--payload schema: a _schemas partition dir, a root holding one, or a JSON export "
        "of the registry's schemas (default: the _schemas topic among the inputs).",
    ),
]
ExportWriterOpt = Annotated[
    str | None,
    typer.Option(
        "--writer",
        help="arrow (pyarrow on the executors) or spark (Spark's own writer); default: arrow "
        "for Parquet partitioned by topic/partition on a path or URI pyarrow writes, else spark.",
        show_default=False,
    ),
]
ExportFromTimeOpt = Annotated[str | None, typer.Option(help="Records with timestamp >= this.")]
SparkDeepOpt = Annotated[bool, typer.Option(help="Also decode every record.")]
PerHourOpt = Annotated[
    bool, typer.Option("--per-hour", help="One row per topic-partition and hour.")
]
