"""kseg.cli_parse (the command line parsed without typer) against the typer-built commands: the
same parameters, and for any argv either it declines or it gives exactly the keyword arguments
typer would pass (in process, through click's make_context and typer's conversions)."""

from __future__ import annotations

import string
from enum import Enum
from pathlib import Path

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kseg.cli  # noqa: F401 - registers the commands
from kseg.cli_parse import VERSION, Declined, _parse, params, parse
from kseg.cli_registry import COMMANDS, Command, load_spark, version
from kseg.cli_typer import _callback, app_for

load_spark()
# the commands the parser serves (not `spark`: typer's, and the JVM dwarfs start-up there)
FAST = [p for p in COMMANDS if p[0] != "spark"]


def click_command(path):
    """The click command typer builds for ``path``, as `kseg <path...>` runs it."""
    cmd = typer.main.get_command(app_for(list(path)))
    for word in path:
        cmd = cmd.commands[word]
    return cmd


def test_the_parser_serves_every_command_but_spark():
    assert {p[0] for p in FAST} >= {"verify", "dump", "seek", "index", "stats", "offsets"}
    for path in FAST:
        params(COMMANDS[path])  # Declined would fail: every parameter is modelled


# click's type names (typer's vendored click says "str", "int", "bool")
TYPE_NAMES = {
    str: {"text", "str"},
    int: {"integer", "int"},
    Path: {"path"},
    bool: {"boolean", "bool"},
}


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_parameters_equal_what_click_built(path):
    """Names, option strings, secondary options, flag/value, multiple, type, choices, min,
    default: the parser's view of each parameter is click's, so the two cannot drift."""
    try:
        mine = params(COMMANDS[path])
    except Declined:
        assert path[0] == "spark"  # a required option (--out): not modelled, never parsed
        return
    theirs = click_command(path).params
    assert [p.name for p in mine] == [p.name for p in theirs]
    for p, c in zip(mine, theirs, strict=True):
        assert p.argument == (c.param_type_name == "argument"), p.name
        assert p.nargs == c.nargs and p.required == c.required, p.name
        if not p.argument:
            assert (p.opts, p.secondary) == (c.opts, c.secondary_opts), p.name
            assert (p.flag, p.multiple) == (c.is_flag, c.multiple), p.name
        if p.required:
            assert c.default is None, p.name
        else:
            assert type(p.default) is type(c.default) and p.default == c.default, p.name
        if isinstance(p.kind, type) and issubclass(p.kind, Enum):
            assert c.type.name == "choice" and list(c.type.choices) == [m.value for m in p.kind]
            assert c.type.case_sensitive, p.name
        elif p.kind is int and p.min is not None:
            assert (p.min, c.type.max, c.type.min_open, c.type.clamp) == (
                c.type.min,
                None,
                False,
                False,
            )
        else:
            assert c.type.name in TYPE_NAMES[p.kind] and p.min is None, p.name
        if p.kind is Path:
            assert (p.readable, c.type.exists, c.type.allow_dash) == (c.type.readable, False, False)
            assert (c.type.writable, c.type.resolve_path, c.type.type) == (False, False, None)


def test_version_is_the_roots_eager_option():
    """The bare `kseg --version` / `-V` the parser answers is the root's eager option."""
    root = typer.main.get_command(app_for(["--version"]))
    (option,) = [p for p in root.params if p.name == "version"]
    assert (option.opts, option.is_eager, option.is_flag) == (["--version", "-V"], True, True)
    assert parse(["--version"]) == parse(["-V"]) == (VERSION, {})
    assert VERSION.fn is version


def typer_kwargs(path, argv: list[str]):
    """What typer passes to the command's function for ``argv``, or the exception click raised."""
    real = COMMANDS[path]
    seen = {}
    command = Command(path, real.fn, real.help)
    cmd = typer.main.get_command(_typer_of(command))

    def capture(**kw):
        seen.update(kw)
        return 0

    command.fn = capture
    try:
        with cmd.make_context(path[-1], list(argv)) as ctx:
            cmd.invoke(ctx)
    except (Exception, SystemExit) as exc:  # a usage error, --help's exit
        return exc
    return seen


def _typer_of(command: Command) -> typer.Typer:
    app = typer.Typer()
    app.command(command.path[-1])(_callback(command))
    return app


def fast_kwargs(path, argv: list[str]):
    try:
        return _parse(params(COMMANDS[path]), list(argv))
    except Declined:
        return None


def typed(kwargs: dict) -> dict:
    """Values with their types: an Enum member is not its string, a list not a tuple."""
    return {
        k: (type(v), v, [type(x) for x in v] if isinstance(v, list) else None)
        for k, v in kwargs.items()
    }


ANY = [
    "json", "x", "", "-30m", "latest", "--", "-", "-q", "--repair", "--help", "a=b", ".",
    "/nonexistent/k", "^orders$", "%k %o", "0", "-1",
]  # fmt: skip
NUMBERS = ["0", "1", "-1", "-0", "007", " 5", "+3", "1_0", "4096", "x", "", "1.5", "0x10", "٣"]
UNKNOWN = ["--bogus", "-x", "--help", "-h", "--", "-", "--no-quiet", "--format-", "-30m", "-V"]


def values(p) -> st.SearchStrategy[str]:
    """Values for parameter ``p``: mostly ones its type may accept, some it must refuse."""
    text = st.text(string.printable.strip() + " ", max_size=6)
    if p.kind is int:
        return st.sampled_from(NUMBERS) | text
    if isinstance(p.kind, type) and issubclass(p.kind, Enum):
        choices = [m.value for m in p.kind]
        return st.sampled_from([*choices, *(c.upper() for c in choices), "", "x"]) | text
    return st.sampled_from(ANY) | text


@st.composite
def argv_for(draw, path):
    ps = params(COMMANDS[path])
    options = [(o, p) for p in ps for o in (*p.opts, *p.secondary)]
    shorts = [(o, p) for o, p in options if len(o) == 2]
    pick = st.sampled_from(options)
    token = st.one_of(
        pick.flatmap(lambda op: values(op[1]).map(lambda v: [op[0], v])),  # --opt value
        pick.flatmap(lambda op: values(op[1]).map(lambda v: [f"{op[0]}={v}"])),
        pick.map(lambda op: [op[0]]),  # a flag, or a value option with the next token
        st.sampled_from(shorts or options).flatmap(
            lambda op: values(op[1]).map(lambda v: [op[0] + v])  # -fjson, -qf
        ),
        st.sampled_from(ANY).map(lambda v: [v]),  # a positional, or an option's value
        st.sampled_from(UNKNOWN).map(lambda u: [u]),
    )
    parts = draw(st.lists(token, max_size=7))
    return [t for part in parts for t in part]


@pytest.mark.parametrize("path", FAST, ids=" ".join)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_either_declines_or_gives_typers_values(path, data):
    argv = data.draw(argv_for(path))
    mine = fast_kwargs(path, argv)
    if mine is None:
        return
    theirs = typer_kwargs(path, argv)
    assert isinstance(theirs, dict), (argv, theirs)  # click accepted it too
    assert typed(mine) == typed(theirs), argv


# common command lines the parser must serve (not decline), with typer's values
SERVED = [
    ("verify", "P"),
    ("verify", "P", "Q", "-f", "json", "--deep", "--no-deep", "-q"),
    ("verify", "--repair", "--dry-run", "--index-interval-bytes=0", "P", "--quarantine", "/tmp/q"),
    ("verify", "-qfjson", "P"),
    ("verify", "P", "--", "--repair"),
    ("dump", "P", "-f", "json", "--payload", "base64"),
    ("dump", "P", "--from-time", "-30m", "--key", "a", "--key=b", "--limit", "10", "--topic="),
    ("dump", "P", "--from-offset", "+3", "--to-offset", " 7", "--decoder", "none", "--count"),
    ("dump", "-", "--format-string", "%k %s\\n", "--header", "h=v"),
    ("seek", "P", "--time", "latest"),
    ("seek", "P", "--offset", "0", "-f", "reset-csv", "--now", "1700000000000"),
    ("index", "check", "P", "--partition", "0"),
    ("index", "check", "P", "--kafka-version", "2.2"),
    ("index", "check", "P", "--kafka-version=9.9"),  # a bad value: the command's usage error
    ("index", "rebuild", "P", "--kafka-version", "0.10", "--dry-run"),
    ("verify", "P", "--kafka-version", "2.2.1", "-f", "json"),
    ("index", "rebuild", "P", "--dry-run", "--preallocate", "--backup", "/tmp/b"),
    ("stats", "P", "--by", "hour", "-f", "csv"),
    ("offsets", "P", "-g", "billing", "--at", "-2h", "--lag"),
    ("restore", "/nonexistent/q", "--force"),
    ("demo",),
]


@pytest.mark.parametrize("argv", SERVED, ids=" ".join)
def test_common_command_lines_are_served(argv):
    command, kwargs = parse(list(argv))
    path = command.path
    rest = list(argv[len(path) :])
    assert typed(kwargs) == typed(typer_kwargs(path, rest))


# command lines click rejects (or answers with help): the parser leaves them to typer
DECLINED = [
    ("verify",),
    ("verify", "P", "--help"),
    ("verify", "P", "-h"),
    ("verify", "--bogus", "P"),
    ("verify", "-f", "xml", "P"),
    ("verify", "--repair=1", "P"),
    ("verify", "P", "--index-interval-bytes", "-1"),
    ("verify", "P", "--format"),
    ("verify", "P", "--kafka-version"),
    ("dump", "P", "--limit", "x"),
    ("dump", "P", "-30m"),
    ("dump", "--from-time"),
    ("restore", "A", "B"),
    ("index", "P"),
    ("index", "--help"),
    ("--help",),
    ("--version", "verify", "P"),
    ("verify", "--version"),
    ("-V", "-V"),
    ("spark", "verify", "P"),
    (),
    ("verfy", "P"),
]


@pytest.mark.parametrize("argv", DECLINED, ids=" ".join)
def test_what_click_rejects_is_declined(argv):
    assert parse(list(argv)) is None
