"""dump's --payload, the options of --payload schema, and `kseg schemas`' PATHs (Schema
Registry values)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kseg.cli.choices import Payload
from kseg.cli.options import _paths

PayloadOpt = Annotated[
    Payload,
    typer.Option(
        help="How keys, values and header values are shown (schema: Schema Registry framing "
        "decoded by the schemas of the _schemas topic beside PATH, or --schemas)."
    ),
]
SchemasPathsArg = Annotated[
    list[Path],
    _paths(
        "log.dirs roots (or directories of roots, partition dirs) holding the _schemas topic, "
        "_schemas partition dirs, or a JSON export of the registry's schemas."
    ),
]
SchemasOpt = Annotated[
    Path | None,
    typer.Option(
        "--schemas",
        metavar="PATH",
        help="Where --payload schema finds the schemas: a _schemas partition directory, a "
        "log.dirs root holding one, or a JSON file (or directory of them) exported from the "
        "registry's REST API. Default: the _schemas topic in or beside PATH.",
    ),
]
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="--payload schema: a key or value that does not decode is invalid data (exit 4); "
        "without it, a finding only.",
    ),
]
