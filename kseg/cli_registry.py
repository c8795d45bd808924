"""The commands of the command line, by name, typer-free: kseg.cli (and kseg.cli_stats,
kseg.cli_offsets, kseg.cli_spark) register their functions here; kseg.cli_typer builds the typer
app from this registry and kseg.cli_parse parses a common command line from it without typer.

A command function takes its options as keyword arguments declared with kseg.cli_options'
``Annotated[T, Opt(...)]`` aliases and returns its exit status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Path_ = tuple[str, ...]  # ("verify",), ("index", "check"); () is the root


class Command:
    __slots__ = ("path", "fn", "help")

    def __init__(self, path: Path_, fn: Callable[..., int], help: str | None) -> None:
        self.path = path
        self.fn = fn
        self.help = help  # typer's help=; None: the function's docstring


# registration order is the order `kseg --help` lists them in (typer keeps it)
COMMANDS: dict[Path_, Command] = {}
GROUPS: dict[Path_, str] = {}  # a group's path -> its help; () is the root


def group(path: Path_, help: str) -> None:
    GROUPS[path] = help


def command(*path: str, help: str | None = None) -> Callable[[Callable[..., int]], Callable]:
    """Register a command function under its words (``command("index", "check")``)."""

    def register(fn: Callable[..., int]) -> Callable[..., int]:
        COMMANDS[path] = Command(path, fn, help)
        return fn

    return register


def named(args: list[str]) -> tuple[Path_, int]:
    """The registered command, else the deepest group, that the first words of ``args`` name
    (``()``: none), and how many words that is."""
    path: Path_ = ()
    for word in args:
        if path + (word,) in COMMANDS:
            return path + (word,), len(path) + 1
        if path + (word,) not in GROUPS:
            break
        path += (word,)
    return path, len(path)


EMPTY = object()  # a parameter without a default (a required argument)


def parameters(fn: Callable) -> list[tuple[str, Any, Any]]:
    """``(name, annotation, default)`` of each parameter of ``fn``, annotations resolved with
    their ``Annotated`` metadata (without importing inspect: start-up time)."""
    from typing import get_type_hints

    hints = get_type_hints(fn, include_extras=True)
    code = fn.__code__
    names = code.co_varnames[: code.co_argcount]
    defaults = fn.__defaults__ or ()
    firsts = len(names) - len(defaults)
    return [
        (name, hints[name], defaults[i - firsts] if i >= firsts else EMPTY)
        for i, name in enumerate(names)
    ]


def version() -> int:
    """`kseg --version`, the root's eager option: kseg.cli_typer's callback for it and
    kseg.cli_parse (for the bare ``kseg --version``) both run this."""
    from kseg.version import version_line

    print(version_line())
    return 0


def load_spark() -> None:
    """Register `kseg spark` (kseg.cli_spark imports its own modules: only when asked for)."""
    from kseg import cli_spark  # noqa: F401 - registers its commands
