"""Output for people: ISO-8601 times beside epoch ms, tables that fit 80-200 columns, colour
that honours NO_COLOR/FORCE_COLOR, paths with control characters kept on one line. All through
the real entry point."""

from __future__ import annotations

import os
import re
import shutil

import pytest

import kseg
from tests.helpers import events, run_kseg

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _env(**kw) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
    env.update(kw)
    return env


def test_text_shows_iso_beside_epoch_ms_json_does_not(tree):
    p = tree / "orders-0"
    text = run_kseg("dump", p, "--limit", "2").stdout.decode()
    assert "CreateTime: 1700000000000 (2023-11-14T22:13:20.000Z) keySize" in text
    assert re.search(r"position: 0 CreateTime: 1700000000000 \(2023-11-14T22:13:20\.000Z\)", text)
    js = run_kseg("dump", p, "--limit", "2", "-f", "json").stdout.decode()
    assert "2023-11-14" not in js and '"timestamp":1700000000000' in js
    ti = run_kseg("dump", p / "00000000000000000000.timeindex").stdout.decode()
    assert re.search(r"^timestamp: \d+ \(\d{4}-\d\d-\d\dT[\d:.]+Z\) offset: \d+$", ti, re.M)


def test_seek_echoes_times_in_iso(tree):
    out = run_kseg("seek", tree / "orders-0", "--time", "1700000001001").stdout.decode()
    assert "offset 1 timestamp 1700000001001 (2023-11-14T22:13:21.001Z)" in out
    out = run_kseg("seek", tree / "orders-0", "--time", "2030-01-01T00:00:00Z").stdout.decode()
    assert "no record at or after 1893456000000 (2030-01-01T00:00:00.000Z)" in out
    table = run_kseg("seek", tree / "orders-0", "--time", "1700000001001", "-f", "table")
    assert "1700000001001 2023-11-14T22:13:21.001Z" in table.stdout.decode()


def test_out_of_range_timestamps_print_as_numbers(tmp_path):
    pdir = tmp_path / "odd-0"
    with kseg.LogWriter(pdir) as w:
        w.append([kseg.Record(value=b"x", timestamp=2**63 - 1)])
        w.append([kseg.Record(value=b"y", timestamp=-(2**63))])
    for fmt in ("text", "table", "json"):
        proc = run_kseg("dump", pdir, "-f", fmt)
        out = proc.stdout.decode()
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        assert str(2**63 - 1) in out and str(-(2**63)) in out


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_dump_table_fits_the_terminal_one_table_per_file(tree, columns):
    proc = run_kseg("dump", tree / "txn-0", "-f", "table", env=_env(COLUMNS=str(columns)))
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert not ANSI.search(out)  # not a terminal: no colour
    lines = out.splitlines()
    files = [ln for ln in lines if ln.startswith(str(tree))]
    assert len(files) == sum(1 for f in (tree / "txn-0").iterdir() if f.is_file())
    headers = [ln for ln in lines if ln.startswith("kind ")]
    assert len(headers) == len(files)  # batches and records share one table per file
    assert all(len(ln) <= columns for ln in lines if ln not in files)
    assert ("timestamp" in headers[0]) == (columns >= 120) and "time (UTC)" in headers[0]
    kinds = {ln.split()[0] for ln in lines if ln not in files and ln not in headers}
    assert {"batch", "record", "control", "index", "timeindex", "aborted", "producer"} <= kinds


def test_decoded_internal_records_in_the_table(real_root):
    """A table per record kind, a column per field, after each chunk of rows (not per batch)."""
    part = real_root / "xpxwo100__bullShit" / "tmp" / "kafka-logs" / "__consumer_offsets-40"
    proc = run_kseg("dump", part, "-f", "table", env=_env(COLUMNS="200"))
    out = proc.stdout.decode()
    assert proc.returncode == 0
    assert re.search(r"^offset_commit \(\d+ records\)$", out, re.M)
    header = next(ln for ln in out.splitlines() if "commit_timestamp" in ln)
    assert header.startswith("record_offset") and "group" in header and "topic" in header
    assert re.search(r"^ +1 +1 +GroupA +foo .* 1479457455691 2016-11-18T08:24:15\.691Z", out, re.M)
    titles = re.findall(r"^offset_commit \(", out, re.M)
    batches = out.count("\nbatch ")
    assert 0 < len(titles) <= batches // 100 + 1  # grouped by chunk, not one per batch


def test_verify_table_keeps_file_names_and_wraps_messages(corrupt_cases):
    case = corrupt_cases[0]
    for columns in (80, 200):
        proc = run_kseg("verify", case.partition_dir, "-f", "table", env=_env(COLUMNS=str(columns)))
        out = proc.stdout.decode()
        assert proc.returncode == 4
        assert out.count("\nsegment\n") + out.startswith("segment\n") == 1  # one table
        assert out.count("finding\n") == 1 and "\nseverity " in out
        for seg in case.partition_dir.glob("*.log"):
            assert str(seg) in out  # never cut
        assert re.search(r"^summary: partitions 1, segments \d+, errors [1-9]", out, re.M)
        width_ok = [
            ln
            for ln in out.splitlines()
            if str(case.partition_dir) not in ln
            and not ln.startswith(
                ("severity", "status", "partition_dir")
            )  # headers of path columns
        ]
        assert all(len(ln) <= columns for ln in width_ok)


def test_colour_honours_no_color_and_force_color(tree):
    args = ("verify", tree / "orders-0", "-f", "table")
    forced = run_kseg(*args, env=_env(FORCE_COLOR="1")).stdout.decode()
    assert ANSI.search(forced)
    assert not ANSI.search(run_kseg(*args, env=_env(FORCE_COLOR="1", NO_COLOR="1")).stdout.decode())
    assert not ANSI.search(run_kseg(*args, env=_env()).stdout.decode())
    dump = run_kseg(
        "dump", tree / "orders-0", "-f", "table", "--limit", "3", env=_env(FORCE_COLOR="1")
    )
    assert ANSI.search(dump.stdout.decode())


def test_a_newline_in_a_path_stays_on_one_line(tree, tmp_path):
    odd = tmp_path / "a\nb"
    odd.mkdir()
    shutil.copytree(tree / "orders-0", odd / "orders-0")
    logs = sorted((odd / "orders-0").glob("*.log"))
    with open(logs[1], "ab") as f:
        f.write(b"junk")  # a torn tail: a finding and a stderr line naming the file
    quoted = '"' + str(odd).replace("\n", "\\n")
    proc = run_kseg("verify", odd / "orders-0")
    out = proc.stdout.decode()
    assert proc.returncode == 4
    for line in out.splitlines()[:-1]:
        assert line.startswith((quoted, "ERROR", "INFO", "WARNING", "KAFKA RECOVERY")), line
        assert quoted in line or "a\\nb" in line, line
    dump = run_kseg("dump", logs[0], "--limit", "1").stdout.decode()
    assert dump.splitlines()[0] == f'Dumping {quoted}/orders-0/{logs[0].name}"'
    table = run_kseg("dump", logs[0], "--limit", "1", "-f", "table").stdout.decode()
    assert table.splitlines()[0] == f'{quoted}/orders-0/{logs[0].name}"'
    proc = run_kseg("dump", logs[1])
    err = proc.stderr.decode()
    assert proc.returncode == 4 and err.count("\n") == 1 and "a\\nb" in err
    js = events(run_kseg("dump", logs[0], "--limit", "1", "-f", "json").stdout.decode())
    assert js[0]["file"] == str(logs[0])  # JSON keeps the real name (JSON escapes it)


def test_a_value_nothing_recomputes_is_shown_without_computed_none(tree, tmp_path):
    """A bad v2 magic has a stored value and nothing computed: text and table say `(stored 7)`,
    not `computed None`; a CRC mismatch still shows both."""
    seg = tmp_path / "orders-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    data = bytearray((tree / "orders-0" / seg.name).read_bytes())
    data[16] = 7  # the first batch's magic byte (outside the CRC)
    seg.write_bytes(bytes(data))
    for fmt in ("text", "table"):
        proc = run_kseg("dump", seg, "--batches-only", "-f", fmt, env=_env(COLUMNS="400"))
        assert proc.returncode == 4, proc.stderr
        out = proc.stdout.decode()
        assert "bad_magic" in out and "None" not in out, out
    proc = run_kseg("dump", seg, "--batches-only")
    assert "(stored 7)" in proc.stdout.decode()
    data[16] = 2
    data[100] ^= 0xFF  # inside the first batch's CRC-covered bytes
    seg.write_bytes(bytes(data))
    proc = run_kseg("dump", seg, "--batches-only")
    assert proc.returncode == 4 and re.search(r"\(stored \d+, computed \d+\)", proc.stdout.decode())
