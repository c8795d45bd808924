"""``--jobs N``: how many worker processes walk the partitions (kseg.storage.jobs)."""

from typing import Annotated

import typer

JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        show_default="the cores available, at most one per 32 MiB of segments",
        help="Worker processes walking partitions in parallel; the output is the same as "
        "with --jobs 1, in the same order.",
    ),
]
