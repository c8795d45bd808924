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
