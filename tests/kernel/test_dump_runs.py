"""`kseg dump -f json` with the kernel taking runs of plain batches (JsonRecords.run): through
the real entry point with KSEG_KERNEL=rust and =python, stdout, stderr and exit status
identical on runs interrupted by every kind of entry the kernel leaves to the core, across
window boundaries of a segment larger than a window, with every payload mode and selections
landing inside runs and on their edges; and in process with tiny windows and parts, so that
every way a run stops is taken many times."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import kseg
from kseg import kernel
from kseg.dump import kernel_json
from kseg.format.batch import build_batch
from kseg.format.crc import crc32c
from kseg.format.record import Record
from tests.helpers import run_cli

from .diff import kernel_built
from .test_differential import segments
from .test_dump_cli import MODES, count_kernel, mutated, records, same

pytestmark = pytest.mark.skipif(not kernel_built(), reason="the compiled kernel is not built")

TS = 1_700_000_000_000


def recs(
    start: int, n: int, size: int = 40, headers: bool = True, offsets: bool = False
) -> list[Record]:
    rng = random.Random(start)
    return [
        Record(
            b"k%d" % (start + i),
            bytes(rng.randrange(256) for _ in range(size)) if i % 3 == 0 else b"v" * size,
            TS + (start + i) * 10,
            [("h", b"x"), ("\u00e9", None)] if headers else [],
            start + i if offsets else None,
        )
        for i in range(n)
    ]


def fix_crc(path: Path, pos: int) -> None:
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
    data[pos + 17 : pos + 21] = crc32c(bytes(data[pos + 21 : pos + size])).to_bytes(4, "big")
    path.write_bytes(bytes(data))


def patch(path: Path, pos: int, value: bytes) -> None:
    data = bytearray(path.read_bytes())
    data[pos : pos + len(value)] = value
    path.write_bytes(bytes(data))


def interrupted_runs(root: Path) -> list[Path]:
    """Partitions whose segments hold runs of plain batches broken by everything the kernel
    leaves to the core: a control batch, legacy entries, compressed batches, a CRC mismatch and
    an invalid record in the middle of a run, an empty batch, transactional, LogAppendTime and
    delete-horizon batches, a torn tail, a zero-filled tail."""
    made = []
    pdir = root / "runs-0"
    w = kseg.LogWriter(pdir, clock=lambda: TS, segment_bytes=1 << 30)
    infos = []
    i = 0

    def plain(n_batches: int, **kw) -> None:
        nonlocal i
        for _ in range(n_batches):
            infos.append(w.append(recs(i, 5), **kw))
            i += 5

    with w:
        plain(12)
        w.append(recs(i, 3), producer_id=7, producer_epoch=1, base_sequence=0, transactional=True)
        i += 3
        w.append_control(commit=True, producer_id=7, producer_epoch=1, coordinator_epoch=3)
        i += 1
        plain(6)
        w.append(recs(i, 2, headers=False), magic=1)  # legacy entries in the middle of the log
        i += 2
        w.append(recs(i, 2, headers=False), magic=1, compression="gzip")
        i += 2
        plain(6)
        w.append(recs(i, 4), compression="zstd")
        i += 4
        plain(5, log_append_time=TS + 5)
        plain(4, producer_id=11, producer_epoch=0, base_sequence=2_147_483_640)
        infos.append(w.append([], last_offset=i + 3))  # an empty batch (compaction)
        i += 4
        plain(10)
    log = w.segments[0]
    # a CRC mismatch at a batch in the middle of the first run
    patch(log, infos[4].position + 70, b"\xff")
    # a record that lies (its length varint: -1), with the CRC fixed, in the middle of a run
    patch(log, infos[8].position + 61, b"\x01")
    fix_crc(log, infos[8].position)
    # a delete-horizon batch (build_batch: kseg's writer), then the torn tail of a batch
    with log.open("ab") as f:
        f.write(build_batch(recs(i, 3, offsets=True), i, delete_horizon_ms=TS + 99))
        f.write(build_batch(recs(i + 3, 3, offsets=True), i + 3)[:-20])
    made.append(pdir)

    pdir = root / "zeros-0"
    with kseg.LogWriter(pdir, clock=lambda: TS) as w:
        for b in range(8):
            w.append(recs(b * 5, 5))
    with w.segments[0].open("ab") as f:
        f.write(bytes(8192))
    made.append(pdir)
    return made


@pytest.fixture(scope="module")
def runs_dirs(tmp_path_factory) -> list[str]:
    return [str(p) for p in interrupted_runs(tmp_path_factory.mktemp("runs"))]


@pytest.mark.parametrize("mode", MODES)
def test_interrupted_runs_every_mode(runs_dirs, mode):
    out = same(*runs_dirs, "--payload", mode)
    assert records(out) > 200
    for kind in ("crc_mismatch", "invalid_record", "torn_tail", "zero_filled_tail"):
        assert f'"kind":"{kind}"'.encode() in out, kind
    assert b'"type":"control"' in out and b'"magic":1' in out and b'"compression":"zstd"' in out


SELECTIONS = (
    ("--limit", "0"),
    ("--limit", "1"),
    ("--limit", "5"),  # the end of the first batch
    ("--limit", "23"),
    ("--limit", "61"),  # the first record of the batch after the control batch
    ("--from-offset", "20", "--to-offset", "24"),  # one batch exactly
    ("--from-offset", "22", "--to-offset", "103"),
    ("--from-offset", "58", "--limit", "40"),
    ("--to-offset", "0"),
    ("--from-offset", "1000000"),
    ("--from-time", str(TS + 300), "--to-time", str(TS + 900)),
    ("--from-time", str(TS + 5), "--to-time", str(TS + 5)),  # LogAppendTime batches only
    ("--to-time", str(TS + 200), "--limit", "30"),
    ("--max-bytes", "5000"),
    ("--max-bytes", "1"),
    ("--topic", "runs", "--from-offset", "40", "--to-offset", "200", "--limit", "77"),
)


@pytest.mark.parametrize("selection", SELECTIONS, ids=" ".join)
def test_interrupted_runs_selections(runs_dirs, selection):
    same(*runs_dirs, "--payload", "base64", *selection)


@pytest.mark.parametrize("selection", [(), *SELECTIONS[::2]], ids=" ".join)
def test_batches_only(runs_dirs, selection):
    out = same(*runs_dirs, "--batches-only", *selection)
    assert records(out) == 0
    if not selection:
        for kind in ("crc_mismatch", "torn_tail", "zero_filled_tail"):
            assert f'"kind":"{kind}"'.encode() in out, kind
        # compressed and control batches are batch lines like any other here
        assert b'"compression":"zstd"' in out and b'"is_control":true' in out


def test_batches_only_fixture_tree_and_real_data(tree, real_root):
    same(str(tree), "--batches-only")
    same(str(tree), "--batches-only", "--from-time", "1700000000050", "--limit", "40")
    roots = sorted({str(p.parent) for p in real_root.rglob("meta.properties")})
    assert b'"log_dir":' in same(*roots, "--batches-only")


# --- a segment larger than the kernel's window --------------------------------------------


BIG_BATCHES = 720


def big_log(root: Path) -> Path:
    """One segment of ~10.5 MiB: plain batches of ~16 KiB (60 records of ~250 bytes, as
    bench/run.py's), more than one window of a buffer read on demand (8 MiB)."""
    pdir = root / "big-0"
    with kseg.LogWriter(pdir, clock=lambda: TS) as w:
        payload = bytes(range(230))
        for b in range(BIG_BATCHES):
            w.append(
                [Record(b"key-%d" % (b * 60 + j), payload, TS + b * 60 + j, []) for j in range(60)]
            )
    assert w.segments[0].stat().st_size > 10 << 20
    return pdir


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return big_log(tmp_path_factory.mktemp("big"))


@pytest.mark.parametrize(
    "selection",
    [
        ("--payload", "base64"),
        ("--payload", "auto", "--from-offset", "31000", "--to-offset", "31100"),
        ("--payload", "hex", "--limit", "30001"),
        ("--payload", "redact", "--from-time", str(TS + 29990), "--limit", "200"),
    ],
    ids=" ".join,
)
def test_a_segment_larger_than_a_window(big, selection):
    out = same(str(big), *selection)
    assert records(out) > 100


def test_a_crc_mismatch_at_a_window_boundary(big, tmp_path):
    """Damage around 8 MiB (where a window ends): the core reports it, the run goes on."""
    pdir = tmp_path / "big-0"
    pdir.mkdir()
    log = next(big.glob("*.log"))
    data = bytearray(log.read_bytes())
    for at in (8 << 20, (8 << 20) + 40_000):
        data[at] ^= 0x55
    (pdir / log.name).write_bytes(bytes(data))
    out = same(str(pdir), "--payload", "base64")
    assert records(out) == BIG_BATCHES * 60 and out.count(b'"kind":"crc_mismatch"') >= 1


# --- in process: tiny windows and parts, every way a run stops ------------------------------


@pytest.mark.parametrize(
    "selection",
    [
        (),
        ("--limit", "23"),
        ("--from-offset", "22", "--to-offset", "103"),
        ("--from-time", str(TS + 300), "--to-time", str(TS + 900)),
        ("--max-bytes", "9000"),
    ],
    ids=repr,
)
@pytest.mark.parametrize("window", [(1 << 30, 1 << 30), (700, 300), (5000, 4000)], ids=repr)
@pytest.mark.parametrize("part", [1, 600, 8000, 4 << 20])
def test_tiny_windows_and_parts(
    runs_dirs, monkeypatch, capsysbinary, choose, selection, window, part
):
    args = ("dump", "-f", "json", *runs_dirs, "--payload", "auto", *selection)
    batches_args = ("dump", "-f", "json", *runs_dirs, "--batches-only", *selection)
    choose("python")
    want = run_cli(monkeypatch, capsysbinary, *args)
    want_batches = run_cli(monkeypatch, capsysbinary, *batches_args)
    choose("rust")
    monkeypatch.setattr(kernel_json, "RUN_WINDOW", window[0])
    monkeypatch.setattr(kernel_json, "READ_WINDOW", window[1])
    monkeypatch.setattr(kernel_json, "JSON_PART", part)
    calls, runs = count_kernel(monkeypatch)
    got = run_cli(monkeypatch, capsysbinary, *args)
    assert got == want
    if part >= 8000:  # a batch's lines fit in half a part: runs took batches
        assert any(r[3] for r in runs)
    else:  # batches larger than a part: the core's per-batch path (in parts) took them
        assert any(calls)
        if part == 1:
            assert not any(r[3] for r in runs)
    runs.clear()
    assert run_cli(monkeypatch, capsysbinary, *batches_args) == want_batches
    assert any(r[3] for r in runs)  # batch lines need no more than a part


def test_every_reason_a_run_stops(runs_dirs, tmp_path, monkeypatch, capsysbinary, choose):
    choose("rust")
    monkeypatch.setattr(kernel_json, "JSON_PART", 8000)
    calls, runs = count_kernel(monkeypatch)
    clean = tmp_path / "clean-0"
    with kseg.LogWriter(clean, clock=lambda: TS) as w:
        for b in range(4):
            w.append(recs(b * 5, 5))
    for args, status in (
        ((*runs_dirs,), 4),  # the part full, the core's entries
        ((*runs_dirs, "--limit", "13"), 0),  # the limit inside a run
        ((clean,), 0),  # the end of the file
    ):
        code, _, _ = run_cli(monkeypatch, capsysbinary, "dump", "-f", "json", *args)
        assert code == status, args
    reasons = {r[2] for r in runs}
    assert reasons == {
        kernel_json.RUN_END,
        kernel_json.RUN_FULL,
        kernel_json.RUN_OTHER,
        kernel_json.RUN_LIMIT,
    }


def test_real_log_dirs_with_tags(real_root):
    roots = sorted({str(p.parent) for p in real_root.rglob("meta.properties")})
    assert len(roots) >= 2
    # several log.dirs roots: every event carries topic, partition and log_dir (on batch lines
    # after the batch's fields, on record lines after the file)
    out = same(*roots, "--payload", "base64", "--decoder", "none")
    assert records(out) > 1000 and out.count(b'"type":"batch"') > 10
    batch = next(line for line in out.splitlines() if line.startswith(b'{"type":"batch"'))
    assert b'"delete_horizon_ms":' in batch and batch.endswith(b"}") and b'"log_dir":' in batch


def test_shared_data_dirs_each_mode(real_root):
    dirs = sorted({str(p.parent) for p in real_root.rglob("*.log")})
    for mode in ("auto", "hex", "redact"):
        same(*dirs, "--payload", mode, "--decoder", "none", "--from-offset", "3", "--limit", "999")


# --- in process: fixture segments and fuzzed ones, every mode and selection -----------------


def test_fixture_segments_whole_files(tree, k, monkeypatch):
    from .diff import KERNEL_MODES, check_dump

    calls, runs = count_kernel(monkeypatch)
    logs = [p for p in segments(tree) if p.suffix == ".log"]
    shown = sum(check_dump(log, mode) for log in logs for mode in KERNEL_MODES)
    assert shown > 1000 and sum(r[3] for r in runs) > 1000  # the runs took most records


def test_fuzzed_segments_whole_files(tree, k, tmp_path):
    """Mutated segments (CRCs recomputed after most mutations, so the damage reaches the
    records and the kernel's runs must stop exactly where the core would object)."""
    from .diff import DUMP_OPTIONS, KERNEL_MODES, check_dump

    rng = random.Random(2311)
    logs = [p.read_bytes() for p in segments(tree) if p.suffix == ".log" and p.stat().st_size]
    (tmp_path / "fuzz-0").mkdir()
    log = tmp_path / "fuzz-0" / f"{0:020d}.log"
    shown = 0
    for i in range(150):
        data = bytearray(mutated(rng.choice(logs), rng))
        if i % 5 == 0:  # a torn or zero-filled tail as well
            cut = rng.randrange(len(data))
            data = data[:cut] + (bytes(rng.randrange(1, 9000)) if i % 2 else b"")
        log.write_bytes(bytes(data))
        mode = KERNEL_MODES[i % len(KERNEL_MODES)]
        shown += check_dump(log, mode, options=(DUMP_OPTIONS[i % len(DUMP_OPTIONS)],))
    assert shown > 1000


def test_the_progress_bar_moves_within_a_run(big, choose):
    """dump_progress moves the bar by each part's position, not only at the file's end."""
    from kseg.dump.options import DumpOptions
    from kseg.dump.plan import dump_chunks
    from kseg.dump.progress import dump_progress
    from kseg.render.dump_json import JSON_LINES

    class Bar:
        enabled = True

        def __init__(self):
            self.seen: list[int] = []

        def due(self) -> bool:
            return True

        def update(self, completed: int) -> None:
            self.seen.append(completed)

    choose("rust")
    bar = Bar()
    opts = DumpOptions(payload="base64", json_lines=JSON_LINES)
    for _ in dump_progress(dump_chunks([big], opts), bar):
        pass
    size = next(big.glob("*.log")).stat().st_size
    inside = [c for c in bar.seen if 0 < c < size]
    assert len(inside) > 10 and inside == sorted(inside)


# --- the lines of a run written to descriptor 1 by the kernel --------------------------------


def test_run_lines_written_to_stdout_by_the_kernel(tmp_path, k, capfd):
    """A run's lines (kseg._kernel.Lines) as bytes, and the same bytes on descriptor 1 from
    write_stdout (then they are empty: the buffer goes back to its JsonRecords, whose next run
    gives the same lines again)."""
    with kseg.LogWriter(tmp_path / "t-0", clock=lambda: TS) as w:
        for b in range(3):
            w.append(recs(b * 7, 7))
    log = next((tmp_path / "t-0").glob("*.log"))
    data = log.read_bytes()
    lines = kernel_json.json_records(b'"x.log"', "base64")

    def run():
        return lines.run(data, 0, len(data), b'"x.log"', b"", None, 1 << 20, False)

    first = run()
    assert type(first[0]) is kernel.lines_type() and first[2] == kernel_json.RUN_END
    text = bytes(first[0])
    assert len(first[0]) == len(text) and text.count(b'{"type":"record"') == 21
    capfd.readouterr()
    first[0].write_stdout()
    assert capfd.readouterr().out.encode() == text
    assert len(first[0]) == 0 and bytes(first[0]) == b""
    first[0].write_stdout()  # nothing left: writes nothing
    assert capfd.readouterr().out == ""
    assert bytes(run()[0]) == text


def test_kernel_writes_to_stdout_only_when_it_is_descriptor_1(tmp_path):
    """streams.lines_writer: straight from the kernel's buffer when kseg's stdout buffer is on
    descriptor 1 (the CLI tests compare that path byte for byte with the core's); as bytes
    through any other writer (a file object, a captured stdout)."""
    import io
    import subprocess
    import sys

    code = (
        "import io, sys\n"
        "from kseg.render import streams\n"
        "print(streams.lines_writer(streams.stdout()).__name__,"
        " streams.lines_writer(io.BytesIO()).__name__, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert proc.stderr.split() == [b"direct", b"<lambda>"]
    from kseg.render import streams

    streams.reset()
    assert streams.lines_writer(io.BytesIO()).__name__ == "<lambda>"
