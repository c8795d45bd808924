"""The command line's grammar as typer (the one parser) builds it from kseg.cli.app: the root's
eager --version, common command lines accepted, and what click rejects or answers with help.
(These were the hand-written parser's cases, once checked against typer; typer is the parser.)"""

from __future__ import annotations

import pytest
import typer

from kseg.cli.app import app
from tests.helpers import run_kseg


def click_root():
    return typer.main.get_command(app)


def test_version_is_the_roots_eager_option():
    (option,) = [p for p in click_root().params if p.name == "version"]
    assert (option.opts, option.is_eager, option.is_flag) == (["--version", "-V"], True, True)


def test_every_command_is_on_the_app():
    root = click_root()
    names = root.list_commands(None)
    assert names == [
        "dump",
        "verify",
        "restore",
        "salvage",
        "seek",
        "demo",
        "offsets",
        "stats",
        "txn",
        "replicas",
        "schemas",
    ] + [
        "index",
        "spark",
    ]
    assert root.get_command(None, "index").list_commands(None) == ["rebuild", "check"]
    assert root.get_command(None, "spark").list_commands(None) == [
        "export",
        "verify",
        "stats",
        "replicas",
    ]


# common command lines: click parses each without a usage error (its values are typer's)
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
    ("txn", "P", "--at", "-2h", "--max-transaction-timeout", "30", "--producers", "-f", "csv"),
    ("replicas", "P", "Q", "--leader", "P", "--export-lost", "/tmp/lost", "-f", "table"),
    ("replicas", "P", "--topic", "^orders$", "--partition", "0", "-fjson"),
    ("restore", "/nonexistent/q", "--force"),
    ("salvage", "P", "--dry-run", "-f", "json", "--topic", "t"),
    ("salvage", "P", "Q", "--to", "/tmp/spare", "--kafka-version", "3.9"),
    ("salvage", "P", "--quarantine", "/tmp/q", "--force", "-q"),
    ("demo",),
    ("dump", "P", "--payload", "schema", "--schemas", "/tmp/s.json", "--strict", "--value", "x"),
    ("schemas", "P", "Q", "-f", "table"),
]


@pytest.mark.parametrize("argv", SERVED, ids=" ".join)
def test_common_command_lines_parse(argv):
    cmd, rest = click_root(), list(argv)
    while isinstance(cmd, typer.core.TyperGroup):
        cmd, rest = cmd.get_command(None, rest[0]), rest[1:]
    with cmd.make_context(argv[0], rest) as ctx:
        assert set(ctx.params) >= {p.name for p in cmd.params}


# command lines click rejects (16, one line) or answers with help or the version (0)
REJECTED = {
    ("verify",): 16,
    ("verify", "P", "--help"): 0,
    ("verify", "P", "-h"): 16,
    ("verify", "--bogus", "P"): 16,
    ("verify", "-f", "xml", "P"): 16,
    ("verify", "--repair=1", "P"): 16,
    ("verify", "P", "--index-interval-bytes", "-1"): 16,
    ("verify", "P", "--format"): 16,
    ("verify", "P", "--kafka-version"): 16,
    ("dump", "P", "--limit", "x"): 16,
    ("dump", "P", "-30m"): 16,
    ("dump", "--from-time"): 16,
    ("restore", "A", "B"): 16,
    ("salvage",): 16,
    ("salvage", "P", "--to"): 16,
    ("salvage", "P", "--repair"): 16,
    ("index", "P"): 16,
    ("index", "--help"): 0,
    ("--help",): 0,
    ("--version", "verify", "P"): 0,
    ("verify", "--version"): 16,
    ("-V", "-V"): 0,
    (): 16,
    ("verfy", "P"): 16,
}


@pytest.mark.parametrize("argv", list(REJECTED), ids=" ".join)
def test_what_click_rejects_is_a_usage_error(argv, tmp_path):
    proc = run_kseg(*argv, cwd=tmp_path)
    assert proc.returncode == REJECTED[argv], proc.stderr
    if REJECTED[argv] == 0:
        assert proc.stdout and not proc.stderr
    elif argv:
        err = proc.stderr.decode()
        assert err.count("\n") == 1 and err.endswith(" --help')\n"), err
    else:
        assert proc.stderr.startswith(b"Usage: kseg [OPTIONS] COMMAND [ARGS]...")


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("dump", "kseg dump [OPTIONS] PATH..."),
        ("restore", "kseg restore [OPTIONS] QUARANTINE_DIR"),
        ("demo", "kseg demo [OPTIONS] [DIRECTORY]"),
        ("schemas", "kseg schemas [OPTIONS] PATH..."),
        ("index check", "kseg index check [OPTIONS] PATH..."),
        ("spark stats", "kseg spark stats [OPTIONS] PATH..."),
    ],
)
def test_usage_lines_name_their_arguments(command, usage):
    """As man pages write them, whatever typer's release (0.27.3 wrote `{paths}...`)."""
    out = run_kseg(*command.split(), "--help").stdout.decode()
    assert out.splitlines()[0] == f"Usage: {usage}"
