"""`kseg dump -f json` through the real entry point with KSEG_KERNEL=rust and =python: stdout,
stderr and exit status identical on the fixtures, the corrupt cases, the real broker data, the
golden files and fuzzed segments (CRCs recomputed after the mutation, so damage reaches the
record loop), for every payload mode and a few selections."""

from __future__ import annotations

import os
import random
import signal
import subprocess
from pathlib import Path

import pytest

from kseg.dump import kernel_json
from kseg.format.batch import build_batch
from kseg.format.record import Record
from tests.helpers import kseg_command, run_cli, run_kseg

from .diff import kernel_built
from .test_differential import fix_crcs, segments

pytestmark = pytest.mark.skipif(not kernel_built(), reason="the compiled kernel is not built")

MODES = ("auto", "utf8", "hex", "base64", "redact", "none", "json")
SELECTIONS = (
    ("--limit", "7"),
    ("--limit", "150"),
    ("--from-offset", "5", "--to-offset", "40"),
    ("--from-offset", "30", "--limit", "9"),
    ("--from-time", "1700000000050", "--to-time", "1700000020100"),
    ("--to-time", "1700000000100", "--limit", "60"),
    ("--max-bytes", "3000"),
    ("--decoder", "none"),
    ("--topic", "orders", "--partition", "1", "--from-offset", "100"),
)


def env(choice: str) -> dict:
    return {**os.environ, "KSEG_KERNEL": choice}


def same(*args) -> bytes:
    """Both kernels give the same stdout, stderr and status; returns that stdout."""
    rust = run_kseg("dump", "-f", "json", *args, env=env("rust"))
    python = run_kseg("dump", "-f", "json", *args, env=env("python"))
    assert rust.stdout == python.stdout, args
    assert rust.stderr == python.stderr, args
    assert rust.returncode == python.returncode, args
    return rust.stdout


def records(out: bytes) -> int:
    return out.count(b'{"type":"record"')


@pytest.mark.parametrize("mode", MODES)
def test_fixture_tree_every_mode(tree, mode):
    assert records(same(str(tree), "--payload", mode)) >= 600


@pytest.mark.parametrize("selection", SELECTIONS, ids=" ".join)
@pytest.mark.parametrize("mode", ("base64", "utf8"))
def test_fixture_tree_selections(tree, mode, selection):
    same(str(tree), "--payload", mode, *selection)


def test_corrupt_cases(corrupt_cases):
    dirs = [str(c.partition_dir) for c in corrupt_cases]
    for mode in ("base64", "auto", "redact"):
        out = same(*dirs, "--payload", mode)
        assert b'"type":"error"' in out
    same(*dirs, "--payload", "hex", "--from-offset", "3", "--limit", "20")


def real_dirs(real_root: Path) -> list[str]:
    return sorted({str(p.parent) for p in real_root.rglob("*.log")})


@pytest.mark.parametrize("mode", ("base64", "auto", "hex", "utf8", "redact"))
def test_real_broker_data(real_root, mode):
    dirs = real_dirs(real_root)
    assert dirs
    assert records(same(*dirs, "--payload", mode, "--decoder", "none")) > 1000
    if mode == "base64":
        same(*dirs, "--payload", mode)  # internal topics: decoded by the core
        same(
            *dirs, "--payload", mode, "--from-offset", "10", "--to-offset", "500", "--limit", "300"
        )


GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize(
    ("partition", "fmt", "extra"),
    [
        ("compacted-0", "json", []),
        ("logappend-0", "json", ["--payload", "hex"]),
        ("txn-0", "text", ["--limit", "30"]),
    ],
)
def test_golden_both_kernels(tree, partition, fmt, extra):
    name = f"dump-{partition}-{fmt}{'-' + '-'.join(a.strip('-') for a in extra) if extra else ''}"
    golden = (GOLDEN / f"{name}.txt").read_bytes()
    for choice in ("rust", "python"):
        proc = run_kseg("dump", tree / partition, "-f", fmt, *extra, env=env(choice))
        assert proc.returncode == 0 and proc.stderr == b""
        assert proc.stdout.replace(str(tree).encode(), b"<root>") == golden, choice


def mutated(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(61, len(buf)) if len(buf) > 61 else rng.randrange(len(buf))
        buf[pos] = rng.randrange(256) if rng.random() < 0.7 else buf[pos] ^ 0x80
    if rng.random() < 0.8:
        fix_crcs(buf)  # the damage reaches the records (else: a CRC mismatch, records shown)
    return bytes(buf)


def test_fuzzed_segments(tree, tmp_path):
    rng = random.Random(1717)
    logs = [p.read_bytes() for p in segments(tree) if p.suffix == ".log" and p.stat().st_size]
    pdir = tmp_path / "fuzz-0"
    pdir.mkdir()
    for i in range(120):
        (pdir / f"{i * 1000:020d}.log").write_bytes(mutated(rng.choice(logs), rng))
    for mode in ("base64", "auto", "utf8", "hex", "redact"):
        out = same(str(pdir), "--payload", mode)
        assert records(out) > 1000 and b'"kind":"invalid_record"' in out
    same(str(pdir), "--payload", "base64", "--from-offset", "20", "--to-offset", "60")
    same(str(pdir), "--payload", "auto", "--limit", "500")


def big_partition(root: Path, batches: int = 40, per_batch: int = 300) -> Path:
    """One segment of batches whose JSON is larger than a pipe's buffer many times over."""
    pdir = root / "big-0"
    pdir.mkdir()
    data = bytearray()
    for b in range(batches):
        recs = [
            Record(b"k%d" % i, b"v" * (i % 200), 1_700_000_000_000 + i, [("h", b"x")], off)
            for i, off in enumerate(range(b * per_batch, (b + 1) * per_batch))
        ]
        data += build_batch(recs, b * per_batch, base_timestamp=1_700_000_000_000)
    (pdir / f"{0:020d}.log").write_bytes(data)
    return pdir


def test_closed_pipe_and_interrupt(tmp_path):
    pdir = big_partition(tmp_path)
    full = same(str(pdir))
    for choice in ("rust", "python"):
        # a reader that stops after a few lines (| head): no message, the lines a prefix
        proc = subprocess.Popen(
            [*kseg_command(), "dump", str(pdir), "-f", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(choice),
        )
        head = [proc.stdout.readline() for _ in range(5)]
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 0, (choice, err)
        assert err == b"" and b"".join(head) == b"".join(full.splitlines(True)[:5])
        # Ctrl-C while the output is blocked on a full pipe: exit 32, one line, a prefix
        proc = subprocess.Popen(
            [*kseg_command(), "dump", str(pdir), "-f", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(choice),
        )
        first = proc.stdout.read(1000)
        proc.send_signal(signal.SIGINT)
        rest = proc.stdout.read()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 32, (choice, err)
        assert err.startswith(b"kseg: interrupted") and err.count(b"\n") == 1, err
        got = first + rest
        assert len(got) < len(full) and full.startswith(got), choice


# --- in process: the kernel does take the batches, in bounded parts -------------------------


def dump_in_process(monkeypatch, capsysbinary, *args) -> tuple:
    return run_cli(monkeypatch, capsysbinary, "dump", "-f", "json", *args)


class Counting:
    """kernel_json.json_records' object, counting what its runs and per-batch renders took."""

    def __init__(self, inner, calls: list, runs: list):
        self.inner, self.calls, self.runs = inner, calls, runs

    def render(self, *args):
        got = self.inner.render(*args)
        self.calls.append(got is not None)
        return got

    def run(self, *args):
        got = self.inner.run(*args)
        self.runs.append((bytes(got[0]), *got[1:]))  # (a write to stdout empties the lines)
        return got


def count_kernel(monkeypatch) -> tuple[list, list]:
    """(calls, runs): what the kernel's per-batch renders (True: rendered) and runs return
    from here on."""
    calls: list = []
    runs: list = []
    real = kernel_json.json_records

    def counting(*args):
        inner = real(*args)
        return None if inner is None else Counting(inner, calls, runs)

    monkeypatch.setattr(kernel_json, "json_records", counting)
    return calls, runs


@pytest.fixture
def counted(monkeypatch):
    return count_kernel(monkeypatch)


def batch_lines(runs: list) -> int:
    return sum(r[0].count(b'{"type":"batch"') for r in runs)


def test_the_kernel_renders_the_data_batches(tree, monkeypatch, capsysbinary, choose, counted):
    calls, runs = counted
    choose("rust")
    code, out, _ = dump_in_process(monkeypatch, capsysbinary, tree, "--payload", "base64")
    # uncompressed batches in runs, compressed ones after the core decompressed them
    assert code == 0 and batch_lines(runs) >= 40 and sum(calls) >= 20
    # every reason a run stops: the end, the core's entry (here: compressed, control, legacy)
    assert {r[2] for r in runs} >= {kernel_json.RUN_END, kernel_json.RUN_OTHER}
    calls.clear()
    runs.clear()
    for mode in ("none", "json"):
        dump_in_process(monkeypatch, capsysbinary, tree, "--payload", mode)
    choose("python")
    dump_in_process(monkeypatch, capsysbinary, tree, "--payload", "base64")
    assert calls == [] and runs == []  # modes the kernel does not render, or the kernel off


@pytest.mark.parametrize(
    "selection",
    [(), ("--limit", "450"), ("--from-offset", "1234", "--to-offset", "5000", "--limit", "3000")],
    ids=repr,
)
def test_parts_of_a_large_batch(tmp_path, monkeypatch, capsysbinary, choose, selection):
    """A batch's lines in many parts (a tiny JSON_PART): the same lines, in several chunks."""
    pdir = big_partition(tmp_path, batches=3, per_batch=3000)
    choose("python")
    want = dump_in_process(monkeypatch, capsysbinary, pdir, *selection)
    choose("rust")
    monkeypatch.setattr(kernel_json, "JSON_PART", 5000)
    got = dump_in_process(monkeypatch, capsysbinary, pdir, *selection)
    assert got == want and records(want[1].encode()) > 400


def test_a_kernel_choice_that_cannot_be_had_is_a_usage_error(tree):
    proc = run_kseg("dump", "-f", "json", tree / "orders-0", env=env("fortran"))
    assert proc.returncode == 16 and proc.stdout == b""
    assert proc.stderr == b"kseg: KSEG_KERNEL='fortran' is not one of: rust, python, auto\n"
