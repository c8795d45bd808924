"""The real entry point parses common command lines without typer (kseg.cli_parse): what the
operator sees is byte for byte what the typer path prints for the same argv (the typer path is
the same entry point with the fast parser switched off), usage mistakes found by the library
(BadOption) included."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kseg.cli  # noqa: F401 - registers the commands
from kseg.cli_parse import parse
from kseg.format.record import Record
from kseg.storage.writer import LogWriter
from tests.helpers import run_kseg

# kseg's console script with kseg.cli_parse declining everything: typer parses
TYPER_PATH = (
    "import kseg.cli_parse as p; p.parse = lambda args: None; from kseg.entry import main; main()"
)


def run_typer_path(*args, cwd):
    return subprocess.run(
        [sys.executable, "-c", TYPER_PATH, *map(str, args)],
        capture_output=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("fast")
    with LogWriter(root / "t-0") as w:
        w.append([Record(b"k", b"v", 1_700_000_000_000, [], 0)])
    (root / "empty").mkdir()
    return root


CASES = [
    ("--version",),
    ("-V",),
    ("verify", "t-0"),
    ("verify", "-f", "json", "t-0", "--deep"),
    ("verify", "-qfjson", "t-0", "--problems-only"),
    ("dump", "-f", "json", "t-0", "--payload", "base64"),
    ("dump", "t-0", "--batches-only"),
    ("dump", "t-0", "--from-time", "-30m", "--count"),
    ("dump", "t-0", "--key=k", "--format-string", "%k %s\\n"),
    ("seek", "--time", "latest", "t-0"),
    ("seek", "--offset", "0", "t-0", "-f", "json"),
    ("index", "check", "t-0"),
    ("index", "rebuild", "--dry-run", "t-0"),
    ("stats", "t-0", "-f", "csv"),
    ("verify", "missing-0"),
    ("verify", "empty"),
    ("dump", "--", "t-0"),
]
# a usage mistake the library finds: click's wording, the command's help named, exit 16
MISTAKES = {
    ("verify", "--dry-run", "t-0"): "Invalid value for --dry-run: --dry-run goes with --repair"
    " (see 'kseg verify --help')",
    ("seek", "t-0"): "Invalid value for --time/--offset: give exactly one of --time and --offset"
    " (see 'kseg seek --help')",
    ("seek", "--offset", "0", "-f", "reset-csv", "t-0"): "Invalid value for --format:"
    " reset-csv goes with --time (see 'kseg seek --help')",
    ("dump", "--key", "(", "t-0"): "Invalid value for --key: not a regular expression: '('"
    " (missing ), unterminated subpattern at position 0) (see 'kseg dump --help')",
}


@pytest.mark.parametrize("args", CASES + list(MISTAKES), ids=" ".join)
def test_fast_and_typer_paths_print_the_same(root, args):
    assert parse(list(args)) is not None  # the fast path does serve it
    fast = run_kseg(*args, cwd=root)
    slow = run_typer_path(*args, cwd=root)
    assert (fast.returncode, fast.stdout, fast.stderr) == (
        slow.returncode,
        slow.stdout,
        slow.stderr,
    )
    if args in MISTAKES:
        assert (fast.returncode, fast.stderr.decode()) == (16, f"kseg: {MISTAKES[args]}\n")
    else:
        assert fast.returncode in (0, 4, 16) and (fast.stdout or fast.stderr)
