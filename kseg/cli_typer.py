"""The typer app, built from kseg.cli_registry: help, shell completion, usage errors and every
command line kseg.cli_parse leaves alone go through typer (and its click), exactly as declared in
kseg.cli_options. Importing typer costs about half of a command's start-up: kseg.entry imports
this module only when the fast parser declines."""

from __future__ import annotations

import inspect
import os
from typing import Annotated, Any, get_args, get_origin

import typer

from kseg.cli_options import Arg, Opt
from kseg.cli_registry import (
    COMMANDS,
    EMPTY,
    GROUPS,
    Command,
    Path_,
    load_spark,
    named,
    parameters,
    version,
)
from kseg.outcome import BadOption


def app_for(args: list[str]) -> typer.Typer:
    """The app with only the command ``args`` runs: click then builds that command's parameters
    and no other's (each costs start-up time). ``--version`` builds none. Anything else (no
    command name first: ``--help``, nothing; an unknown name; shell completion): every
    command (`spark` too), so that help lists them all and a typo gets click's message."""
    if not os.environ.get("_KSEG_COMPLETE"):
        if args[:1] in (["--version"], ["-V"]):  # eager: answered before any command is looked at
            return _typer((), [])
        if args[:1] == ["spark"]:
            load_spark()
        chosen = named(args)[0]
        if chosen:
            return _typer((), [p for p in COMMANDS if p[: len(chosen)] == chosen])
    load_spark()
    return _typer((), list(COMMANDS))


def _typer(path: Path_, commands: list[Path_]) -> typer.Typer:
    """The typer app of group ``path`` with those of ``commands`` under it (typer lists a
    group's commands first, then its sub-groups, each in registration order)."""
    root = path == ()
    app = typer.Typer(
        no_args_is_help=True,
        rich_markup_mode=None,
        help=GROUPS[path],
        **(dict(add_completion=True, pretty_exceptions_enable=False) if root else {}),
    )
    if root:
        app.callback()(_root)
    depth = len(path) + 1
    for cmd in commands:
        if len(cmd) == depth and cmd[:-1] == path:
            command = COMMANDS[cmd]
            app.command(cmd[-1], help=command.help)(_callback(command))
    for sub in GROUPS:
        if len(sub) == depth and sub[:-1] == path and any(c[:depth] == sub for c in commands):
            app.add_typer(_typer(sub, commands), name=sub[-1])
    return app


def _version(value: bool) -> None:
    if value:
        raise typer.Exit(version())


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


def _callback(command: Command):
    """The command's function as typer sees it: kseg.cli_options' Opt/Arg turned into
    typer.Option/typer.Argument; a usage mistake the library finds (BadOption) is shown as the
    option's usage error, as if click had found it."""
    fn = command.fn

    def run(**kw: Any) -> int:
        try:
            return command.fn(**kw)  # looked up now: tests/cli/test_parse.py swaps it
        except BadOption as exc:
            raise typer.BadParameter(str(exc), param_hint=exc.option) from None

    params = [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if default is EMPTY else default,
            annotation=typer_annotation(hint),
        )
        for name, hint, default in parameters(fn)
    ]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def typer_annotation(hint: Any) -> Any:
    """``Annotated[T, Opt(...)]`` -> ``Annotated[T, typer.Option(...)]`` (Arg: typer.Argument)."""
    if get_origin(hint) is not Annotated:
        return hint
    base, *metadata = get_args(hint)
    return Annotated[(base, *map(_typer_info, metadata))]


def _typer_info(meta: Any) -> Any:
    if isinstance(meta, Opt):
        return typer.Option(*meta.decls, **meta.kw)
    if isinstance(meta, Arg):
        return typer.Argument(**meta.kw)
    return meta
