"""A command line parser without typer, for the common case: importing typer (and the click it
vendors) costs about half of a command's start-up, and most runs are `kseg verify PATH` or
`kseg dump PATH -f json`.

It reads the same declarations as typer (kseg.cli_registry's commands, kseg.cli_options'
Opt/Arg) and applies click's rules for the subset it models: long and short options with a
value (``--opt v``, ``--opt=v``, ``-f v``, ``-fv``, ``-qf v``), flags and ``--x/--no-x`` pairs as
typer derives them from a bool, repeated options of list types, positional PATHS, ``--``, a
value that starts with '-' (``--from-time -30m``), int with ``min=``, enum choices,
Path/str/int conversions, defaults. On anything else (an unknown option, a bad or missing
value, ``--help``, an option it does not model, `kseg spark`) it returns None and typer parses
the untouched argv: every usage error and every help text stays click's. It never accepts an
argv that click would reject and never gives other values than click would
(tests/cli/test_parse.py checks both against the typer-built commands)."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, get_args, get_origin

from kseg.cli_options import Arg, Opt
from kseg.cli_registry import COMMANDS, EMPTY, Command, named, parameters, version

# what an Opt/Arg may hold for this parser to model it: with anything else (is_eager, callback,
# count, max, envvar, case_sensitive, ...) the command is typer's
_MODELLED = frozenset({"help", "show_default", "metavar", "min", "readable"})
_TYPES = (str, int, Path, bool)


class Declined(Exception):
    """Not this parser's to decide: typer parses the command line."""


class Param:
    """One parameter as click builds it from typer's declaration."""

    __slots__ = ("name", "opts", "secondary", "flag", "multiple", "kind", "min", "readable")
    __slots__ += ("default", "argument", "nargs", "required")

    def __init__(self, name: str, hint: Any, default: Any) -> None:
        if get_origin(hint) is not Annotated:
            raise Declined(name)  # typer's default-style declaration: not used by kseg
        kind, meta = get_args(hint)[:2]
        if len(get_args(hint)) != 2 or not isinstance(meta, (Opt, Arg)):
            raise Declined(name)
        if not _MODELLED.issuperset(meta.kw):
            raise Declined(name)
        if isinstance(kind, UnionType):  # T | None
            others = [t for t in get_args(kind) if t is not type(None)]
            if len(others) != 1:
                raise Declined(name)
            kind = others[0]
        self.multiple = get_origin(kind) is list
        if self.multiple:
            (kind,) = get_args(kind)
        if not (kind in _TYPES or isinstance(kind, type) and issubclass(kind, Enum)):
            raise Declined(name)
        self.name = name
        self.kind = kind
        self.min = meta.kw.get("min")
        self.readable = meta.kw.get("readable", True)  # typer's default for a Path
        self.default = default
        self.argument = isinstance(meta, Arg)
        self.required = default is EMPTY
        self.flag = kind is bool and not self.argument
        self.opts: list[str] = []
        self.secondary: list[str] = []
        if self.argument:
            self.nargs = -1 if self.multiple else 1
            if kind is bool:
                raise Declined(name)
        else:
            self.nargs = 1
            if self.required or (self.multiple and (self.flag or default is not None)):
                raise Declined(name)
            if not meta.decls and "metavar" in meta.kw:
                raise Declined(name)  # typer may then name the option after the metavar
            dashed = name.replace("_", "-")  # typer's option name for a parameter
            decls = meta.decls or (
                (f"--{dashed}/--no-{dashed}",) if self.flag else (f"--{dashed}",)
            )
            for decl in decls:  # click's rule: "--x/--no-x" is an option and its secondary
                if decl.isidentifier() or decl[:1] != "-" or ";" in decl:
                    raise Declined(name)
                first, _, second = decl.partition("/")
                self.opts.append(first.rstrip())
                if second.strip():
                    self.secondary.append(second.strip())
            if self.secondary and not self.flag:
                raise Declined(name)
            if self.flag and not self.secondary and default is not False:
                raise Declined(name)  # a flag's value when given differs across typer versions

    def convert(self, value: Any) -> Any:
        """click's type conversion, then typer's (Path, Enum)."""
        if self.kind is str:
            return value
        if self.kind is int:
            try:
                number = int(value)
            except ValueError:
                raise Declined(self.name) from None
            if self.min is not None and number < self.min:
                raise Declined(self.name)
            return number
        if self.kind is Path:
            # typer's Path type: a missing path is fine (kseg reports it), an unreadable existing
            # one is a usage error unless readable=False
            try:
                os.stat(value)
            except OSError:
                return Path(value)
            if self.readable and not os.access(value, os.R_OK):
                raise Declined(self.name)
            return Path(value)
        for member in self.kind:  # an Enum: its values, exactly (case-sensitive)
            if value == member.value:
                return member
        raise Declined(self.name)

    def value(self, given: list[Any]) -> Any:
        """The function's keyword argument from what the command line gave."""
        if self.flag:
            return given[-1] if given else self.default
        if self.required and not given:
            raise Declined(self.name)  # click's "Missing argument"
        if self.multiple:
            return [self.convert(v) for v in given] if given else None
        if given:
            return self.convert(given[-1])  # an option given twice: the last one
        if isinstance(self.default, Path):
            return self.convert(self.default)
        return self.default


VERSION = Command((), version, None)


def params(command: Command) -> list[Param]:
    """The parameters of ``command`` as click builds them (Declined: one is not modelled)."""
    return [Param(*p) for p in parameters(command.fn)]


def parse(args: list[str]) -> tuple[Command, dict[str, Any]] | None:
    """The registered command ``args`` runs and its keyword arguments, or None: typer's."""
    if args in (["--version"], ["-V"]):  # the root's eager option, alone (kseg.cli_typer's _root)
        return VERSION, {}
    command, rest = _command(args)
    if command is None or command.path[0] == "spark":
        return None
    try:
        return command, _parse(params(command), rest)
    except Declined:
        return None


def _command(args: list[str]) -> tuple[Command | None, list[str]]:
    """The command named by the first words (a group's options, ``--help`` included, are not
    modelled: a word starting with '-' before the command name is typer's)."""
    path, words = named(args)
    command = COMMANDS.get(path)
    return (command, args[words:]) if command is not None else (None, [])


def _parse(params: list[Param], args: list[str]) -> dict[str, Any]:
    """click's OptionParser on ``args``, then its value processing (Declined on any error)."""
    long: dict[str, tuple[Param, Any]] = {}  # an option string -> (param, const for a flag)
    short: dict[str, tuple[Param, Any]] = {}
    for p in params:
        for opt, const in [*((o, True) for o in p.opts), *((o, False) for o in p.secondary)]:
            # click: "-x" is short, everything else ("--x", "-xy") long
            (short if len(opt) == 2 and opt[1] != "-" else long)[opt] = (p, const)
    given: dict[str, list[Any]] = {p.name: [] for p in params}
    positional: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            positional += rest
            break
        if arg[:1] != "-" or len(arg) == 1:
            positional.append(arg)
            continue
        name, eq, explicit = arg.partition("=")
        if name in long:
            p, const = long[name]
            if p.flag:
                if eq:
                    raise Declined(name)  # "does not take a value"
                given[p.name].append(const)
                continue
            if eq:
                rest.insert(0, explicit)
            if not rest:
                raise Declined(name)  # "requires an argument"
            given[p.name].append(rest.pop(0))
        elif arg[:2] == "--":
            raise Declined(name)  # "No such option"
        else:
            _short(arg, short, given, rest)
    arguments = [p for p in params if p.argument]
    if len(arguments) != 1:
        raise Declined("arguments")  # click's unpacking of several arguments: not modelled
    (argument,) = arguments
    if argument.nargs == 1 and len(positional) > 1:
        raise Declined("extra")  # "Got unexpected extra argument"
    given[argument.name] = positional
    return {p.name: p.value(given[p.name]) for p in params}


def _short(arg: str, short: dict, given: dict[str, list[Any]], rest: list[str]) -> None:
    """click's short options: ``-q``, ``-fjson``, ``-qf json`` (flags, then one with a value)."""
    for i, ch in enumerate(arg[1:], start=2):
        if "-" + ch not in short:
            raise Declined(arg)
        p, const = short["-" + ch]
        if p.flag:
            given[p.name].append(const)
            continue
        if i < len(arg):
            rest.insert(0, arg[i:])
        if not rest:
            raise Declined(arg)
        given[p.name].append(rest.pop(0))
        return
