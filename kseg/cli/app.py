"""The `kseg` command line: the typer app (the one parser). Options -> one library call ->
kseg.render -> kseg.cli.exit.exit_status.

No logic lives here: the commands are kseg.cli.commands' modules (one per family), their
options kseg.cli.options; `kseg spark ...` (kseg.cli.commands.spark) is imported only when a
command line needs it. The process around the app (signals, errors that end a command) is
kseg.cli.entry.
"""

from __future__ import annotations

import typer
from typer.core import TyperGroup

from kseg.cli.command import Command
from kseg.cli.commands import (
    demo,
    dump,
    index,
    offsets,
    replicas,
    salvage,
    seek,
    stats,
    txn,
    verify,
)
from kseg.cli.exit import help_text

HELP = (
    "Inspect, verify and repair Apache Kafka log segments on disk.\n\n"
    "PATH arguments: a file, a partition dir (<topic>-<n>), a log.dirs root, or a directory of "
    "roots (one per broker); a PATH with no Kafka partition, segment or data file is a usage "
    "error. Data goes to stdout, messages to stderr.\n\n"
    "Example:\n\n\b\n  kseg verify /var/lib/kafka/data && systemctl start kafka\n\n"
    + help_text("\b\n")
)


class Kseg(TyperGroup):
    """The root group: typer's, with `kseg spark` added on first need: when it is named, when
    the commands are listed (help, completion), or when a name is unknown (click's "did you
    mean" then knows it). Its module imports what Spark needs from kseg: nothing for `kseg
    verify` to pay for."""

    def _load(self) -> None:
        if "spark" not in self.commands:
            from kseg.cli.commands import spark

            self.commands["spark"] = typer.main.get_group(spark.app)

    def list_commands(self, ctx):
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands:
            self._load()
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    cls=Kseg,
    no_args_is_help=True,
    rich_markup_mode=None,
    help=HELP,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from kseg.version import version_line

        print(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        is_eager=True,
        callback=_version,
        help="Print the version (and which kernel decodes) and exit.",
    ),
) -> None:
    pass


# in the order `kseg --help` lists them (typer lists a group's commands, then its sub-groups)
app.command("dump", cls=Command)(dump.dump)
app.command("verify", cls=Command, help=verify.VERIFY_HELP)(verify.verify)
app.command("restore", cls=Command)(verify.restore)
app.command("salvage", cls=Command, help=salvage.SALVAGE_HELP)(salvage.salvage)
app.command("seek", cls=Command)(seek.seek)
app.command("demo", cls=Command)(demo.demo)
app.command("offsets", cls=Command)(offsets.offsets)
app.command("stats", cls=Command)(stats.stats)
app.command("txn", cls=Command)(txn.txn)
app.command("replicas", cls=Command)(replicas.replicas)

index_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Rebuild or check `.index`/`.timeindex`/`.txnindex` files offline, exactly as Kafka's "
    "recovery writes them.",
)
index_app.command("rebuild", cls=Command)(index.rebuild)
index_app.command("check", cls=Command)(index.check)
app.add_typer(index_app, name="index")
