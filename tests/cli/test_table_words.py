"""Tables write a boolean with the word text output uses for it (``true``/``false``: kafka-dump-log's
``isTransactional: true``, JSON's ``true``), never Python's ``True``/``False``: every table that
can show a boolean, through the real entry point."""

from __future__ import annotations

import re

import pytest

from kseg.fixtures.offsets import EXPIRING, GROUP, T0, write_offsets_partition
from tests.helpers import run_kseg

PYTHON_WORD = re.compile(rb"\b(True|False)\b")


@pytest.fixture(scope="module")
def demo(tmp_path_factory, tree):
    """The fixture tree plus a __consumer_offsets partition (as the demo has)."""
    import shutil

    root = tmp_path_factory.mktemp("words") / "logs"
    shutil.copytree(tree, root)
    write_offsets_partition(root / "__consumer_offsets-0")
    return root


@pytest.fixture(scope="module")
def torn(tmp_path_factory, tree):
    """The fixture tree with a torn tail (Kafka's recovery would cut it: a kafka_recovery row)."""
    import os
    import shutil

    root = tmp_path_factory.mktemp("words-torn") / "logs"
    shutil.copytree(tree, root)
    log = sorted((root / "orders-1").glob("*.log"))[-1]
    os.truncate(log, log.stat().st_size - 7)
    return root


# (arguments after the path, the boolean fields that table shows, a word that must appear)
CASES = [
    # decoded __consumer_offsets records: the "tombstone" column
    (("dump", "--topic", "^__consumer_offsets$"), "tombstone", b"true"),
    # kafka_recovery (on the torn copy): clean_shutdown; finding: repairable (not a column,
    # but in any row dict)
    (("verify", "--deep"), "clean_shutdown", b"false"),
    # index rebuild's rows and summary: dry_run
    (("index", "rebuild", "--dry-run"), "dry_run", b"dry_run true"),
    # offsets: the group's "deleted", the offsets' "transactional" and "expired"
    (("offsets", "--group", GROUP, "--at", str(T0 + 150_000)), "transactional", b"true"),
    (("offsets", "--group", EXPIRING, "--at", str(T0 + 3600_000)), "expired", b"true"),
    (("offsets", "--list"), "deleted", b"true"),
]


@pytest.mark.parametrize("args,field,word", CASES, ids=[c[1] for c in CASES])
def test_tables_write_booleans_as_text_does(demo, torn, args, field, word):
    cmd, rest = (args[:2], args[2:]) if args[0] == "index" else (args[:1], args[1:])
    p = run_kseg(*cmd, torn if cmd == ("verify",) else demo, *rest, "-f", "table")
    assert p.returncode in (0, 4), p.stderr
    assert field.encode() in p.stdout
    assert word in p.stdout
    assert not PYTHON_WORD.search(p.stdout), PYTHON_WORD.search(p.stdout)


def _cells(out: bytes, column: str) -> dict[str, str]:
    """{first word of a row: its cell under ``column``} of a table (cells aligned on the head)."""
    lines = out.decode().splitlines()
    head = next(i for i, line in enumerate(lines) if f" {column}" in line)
    at = lines[head].index(f" {column}") + 1
    rows = {}
    for line in lines[head + 1 :]:
        if not line.strip():
            break
        rows[line.split()[0]] = line[at:].split()[0]
    return rows


def test_offsets_table_cells_say_true_and_false(demo):
    """The offsets table's transactional and expired cells: one word per cell, as text says it."""
    p = run_kseg("offsets", demo, "--group", GROUP, "--at", str(T0 + 150_000), "-f", "table")
    assert _cells(p.stdout, "transactional") == {"orders": "false", "txn": "true"}
    assert set(_cells(p.stdout, "expired").values()) == {"false"}
    p = run_kseg("offsets", demo, "--group", EXPIRING, "--at", str(T0 + 3600_000), "-f", "table")
    assert _cells(p.stdout, "expired") == {"txn": "true"}


def test_kraft_metadata_table_on_real_41(real_root):
    """KRaft metadata records carry booleans (e.g. a broker registration's ``fenced``)."""
    p = run_kseg("dump", real_root / "kafka-4.1.0-dev" / "data", "-f", "table")
    assert p.returncode == 0, p.stderr
    assert re.search(rb"\b(true|false)\b", p.stdout)
    assert not PYTHON_WORD.search(p.stdout)


def test_text_fallback_lines_write_booleans_as_text_does():
    """field_text (text lines of events without a dedicated line, stats key=value) too."""
    from kseg.render.fields import field_text

    assert (field_text("deleted", True), field_text("dry_run", False)) == ("true", "false")
