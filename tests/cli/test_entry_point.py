"""The real entry point (the console script's, `python -m kseg`) on common command lines: each
runs, and a usage mistake found by the library (BadOption) reads as click words its own (the
option, the command's help named) with exit 16. These cases once checked that a hand-written
parser printed what typer prints; typer is now the only parser."""

from __future__ import annotations

import pytest

from kseg.format.record import Record
from kseg.storage.writer import LogWriter
from tests.helpers import run_kseg


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
    ("dump", "--key", "(", "t-0"): "Invalid value for --key: not a valid regular expression:"
    " '(' (RE2 syntax: missing ): () (see 'kseg dump --help')",
}


@pytest.mark.parametrize("args", CASES + list(MISTAKES), ids=" ".join)
def test_the_entry_point_runs_common_command_lines(root, args):
    proc = run_kseg(*args, cwd=root)
    if args in MISTAKES:
        assert (proc.returncode, proc.stderr.decode()) == (16, f"kseg: {MISTAKES[args]}\n")
    else:
        assert proc.returncode in (0, 4, 16) and (proc.stdout or proc.stderr)
