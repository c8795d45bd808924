"""The `kseg` command line: the typer app (the one parser). Options -> one library call ->
kseg.render -> kseg.cli.exit.exit_status.

No logic lives here: the commands are kseg.cli.commands' modules (one per family), their
options kseg.cli.options; `kseg spark ...` (kseg.cli.commands.spark) is imported only when a
command line needs it. The process around the app (signals, errors that end a command) is
kseg.cli.entry.
"""

from __future__ import annotations

import importlib

import typer
from typer.core import TyperGroup

from kseg.cli.command import Command
from kseg.cli.exit import help_text

HELP = (
    "Inspect, verify and repair Apache Kafka log segments on disk.\n\n"
    "PATH arguments: a file, a partition dir (<topic>-<n>), a log.dirs root, or a directory of "
    "roots (one per broker); a PATH with no Kafka partition, segment or data file is a usage "
    "error. Data goes to stdout, messages to stderr.\n\n"
    "Example:\n\n\b\n  kseg verify /var/lib/kafka/data && systemctl start kafka\n\n"
    + help_text("\b\n")
)


# The commands, in the order `kseg --help` lists them: name -> (module of kseg.cli.commands,
# its function, the name of its module's help text or None: the docstring). Each is built (its
# module imported, typer's click command made from its signature) only when a command line
# names it: `kseg verify` does not pay for eleven commands it does not run (~15 ms a start).
COMMANDS = {
    "dump": ("dump", "dump", None),
    "verify": ("verify", "verify", "VERIFY_HELP"),
    "restore": ("verify", "restore", None),
    "salvage": ("salvage", "salvage", "SALVAGE_HELP"),
    "seek": ("seek", "seek", None),
    "demo": ("demo", "demo", None),
    "offsets": ("offsets", "offsets", None),
    "stats": ("stats", "stats", None),
    "txn": ("txn", "txn", None),
    "replicas": ("replicas", "replicas", None),
    "schemas": ("schemas", "schemas", None),
}
GROUPS = ("index", "spark")  # typer lists a group's commands, then its sub-groups


def _command(name: str):
    module, function, help_name = COMMANDS[name]
    mod = importlib.import_module(f"kseg.cli.commands.{module}")
    one = typer.Typer(add_completion=False, rich_markup_mode=None)
    help_text_ = getattr(mod, help_name) if help_name else None
    one.command(name, cls=Command, help=help_text_)(getattr(mod, function))
    return typer.main.get_command(one)


def _group(name: str):
    if name == "index":
        return typer.main.get_group(index_app())
    from kseg.cli.commands import spark  # imports what Spark needs from kseg

    return typer.main.get_group(spark.app)


class Kseg(TyperGroup):
    """The root group: typer's, with each command built on first need: when it is named, when
    the commands are listed (help, completion), or when a name is unknown (click's "did you
    mean" then knows them all)."""

    def _ensure(self, name: str):
        if name not in self.commands:
            self.commands[name] = _command(name) if name in COMMANDS else _group(name)
        return self.commands[name]

    def _load(self) -> None:
        self.commands = {name: self._ensure(name) for name in (*COMMANDS, *GROUPS)}

    def list_commands(self, ctx):
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx, cmd_name: str):
        if cmd_name in COMMANDS or cmd_name in GROUPS:
            return self._ensure(cmd_name)
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


def index_app() -> typer.Typer:
    """`kseg index rebuild|check`."""
    from kseg.cli.commands import index

    group = typer.Typer(
        no_args_is_help=True,
        rich_markup_mode=None,
        help="Rebuild or check `.index`/`.timeindex`/`.txnindex` files offline, exactly as "
        "Kafka's recovery writes them.",
    )
    group.command("rebuild", cls=Command)(index.rebuild)
    group.command("check", cls=Command)(index.check)
    return group
