"""verify, `index rebuild`/`index check` and `verify --repair` on the kernel's walk and on the
pure-Python core: the same findings, exit codes, rebuilt index bytes and repaired files, on every
fixture, the real broker data, positioned damage and fuzzed segments (CRCs made right again
after the mutation, so the damage reaches the offset and record checks)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg import kernel
from kseg.fixtures import recovery
from kseg.format.checkpoint import EpochEntry
from kseg.format.txn_state import TxnTracker
from kseg.storage import kernel_walk
from kseg.verify.segment import EpochRanges, scan_segment

from ..helpers import run_cli, run_kseg
from .diff import kernel_built
from .test_differential import batches, make_segment, patched_segment

pytestmark = pytest.mark.skipif(not kernel_built(), reason="the compiled kernel is not built")

PATHS = (kernel.RUST, kernel.PYTHON)


def use(monkeypatch, which: str) -> None:
    monkeypatch.setenv(kernel.ENV, which)
    kernel.reset()
    assert kernel.active() == which


@pytest.fixture
def plain_rows(monkeypatch):
    """Counts the rows the kernel's plain runs took whole (the kernel path really ran)."""
    taken = [0]
    real = kernel_walk.plain_runner

    def runner():
        run = real()
        if run is None:
            return None

        def counting(*args):
            out = run(*args)
            taken[0] += out[0]
            return out

        return counting

    monkeypatch.setattr(kernel_walk, "plain_runner", runner)
    yield taken
    kernel.reset()


# --- one segment's scan ---------------------------------------------------------------------


def scan_facts(scan) -> dict:
    """Everything a SegmentScan says, in comparable form."""
    out = {}
    for name in scan.__slots__:
        v = getattr(scan, name)
        if name == "rebuilt":
            v = (bytes(v.offset_index), bytes(v.time_index), v.valid_bytes)
        elif name == "findings":
            v = [x.to_event() for x in v]
        elif name in ("first_error", "kafka_fatal"):
            v = None if v is None else v.to_event()
        out[name] = v
    return out


EPOCHS = EpochRanges([EpochEntry(0, 0), EpochEntry(3, 8), EpochEntry(5, 16)])
VARIANTS = {
    "verify": {},
    "deep": {"deep": True},
    "rebuild": {"check_indexes": False, "kafka_view": True, "txn": True},
    "epochs": {"epochs": EPOCHS, "prev_last_offset": 3},
}


def scan_one(log: Path, variant: dict):
    kw = dict(variant)
    if kw.pop("txn", False):
        kw["txn"] = TxnTracker()
    try:
        return scan_facts(scan_segment(log, **kw))
    except OSError as exc:  # an unreadable index: both paths must raise the same
        return ("raised", type(exc).__name__, str(exc))


def both_scans(monkeypatch, log: Path, variants=VARIANTS) -> None:
    for name, variant in variants.items():
        got = {}
        for which in PATHS:
            use(monkeypatch, which)
            got[which] = scan_one(log, variant)
        assert got[kernel.RUST] == got[kernel.PYTHON], (log, name)


def logs_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.log") if re.fullmatch(r"\d{20}\.log", p.name))


def recovery_roots(base: Path) -> list[Path]:
    """Every recovery fixture (markers, flipped magics, epochs, log start, aborts)."""
    made = [
        recovery.coordinator_sequences(base / "coord"),
        recovery.aborts(base / "aborts"),
        recovery.newer_markers(base / "markers"),
        recovery.below_log_start(base / "retained"),
        recovery.leader_epochs(base / "epochs", {"e3b1": 7, "e5b0": 2, "e0b1": 9}),
    ]
    made += [recovery.unreadable_marker(base / f"bad-{w}", w) for w in recovery.UNREADABLE_MARKERS]
    made += [recovery.flipped_magic(base / f"magic{m}", m) for m in (0, 1, 3, 7)]
    made += [recovery.flipped_legacy_magic(base / f"legacy{m}", m) for m in (0, 1)]
    return [c.root for c in made]


@pytest.fixture(scope="module")
def recovery_tree(tmp_path_factory) -> list[Path]:
    return recovery_roots(tmp_path_factory.mktemp("recovery"))


def test_scans_of_every_fixture(tree, corrupt_cases, recovery_tree, monkeypatch, plain_rows):
    logs = logs_under(tree)
    for case in corrupt_cases:
        logs += logs_under(case.partition_dir)
    for root in recovery_tree:
        logs += logs_under(root)
    assert len(logs) >= 30
    for log in logs:
        both_scans(monkeypatch, log)
    assert plain_rows[0] > 100  # most batches went through the kernel's plain runs


def test_scans_of_real_broker_data(real_root, monkeypatch, plain_rows):
    logs = logs_under(real_root)
    assert logs, "no segments under shared/real"
    for log in logs:
        both_scans(monkeypatch, log)
    assert plain_rows[0] > 0


def test_base_offset_beyond_int64_takes_the_core(tmp_path, monkeypatch):
    """A segment named past int64 cannot be handed to the kernel's int64 state: the core runs."""
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    log = pdir / f"{(1 << 63) + 5:020d}.log"
    log.write_bytes(make_segment([([(b"k", b"v", (), 0)], 0, False, None, 0)]))
    both_scans(monkeypatch, log)


def fuzz_segment(tmp_path: Path, buf: bytes) -> Path:
    pdir = tmp_path / "fuzz-0"
    pdir.mkdir(exist_ok=True)
    log = pdir / "00000000000000000000.log"
    log.write_bytes(buf)
    for ext in (".index", ".timeindex"):
        (pdir / f"00000000000000000000{ext}").unlink(missing_ok=True)
    return log


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    spec=batches,
    patches=st.lists(
        st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=3)), max_size=4
    ),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    fix=st.booleans(),
    small_offsets=st.booleans(),
)
def test_scans_of_fuzzed_segments(tmp_path, monkeypatch, spec, patches, cut, fix, small_offsets):
    if small_offsets:  # offsets that stay near each other: order and epoch checks bite
        spec = [(r, i * 3, la, seq, c) for i, (r, _, la, seq, c) in enumerate(spec)]
    both_scans(monkeypatch, fuzz_segment(tmp_path, patched_segment(spec, patches, cut, fix)))


# --- whole commands, in process and as the real entry point --------------------------------

STAMP = re.compile(r"\d{8}T\d{6}(\.\d+)?Z")


def cli_both(monkeypatch, capsysbinary, tmp_path: Path, src: Path, *args, writes=False):
    """The command on each path (on a fresh copy of ``src`` when it ``writes``): the outputs
    (paths and time stamps made neutral) and exit codes, and the files it left."""
    got = {}
    for which in PATHS:
        use(monkeypatch, which)
        where = src
        if writes:
            where = tmp_path / which / "data" / src.name  # the quarantine goes beside data
            shutil.copytree(src, where)
        code, out, err = run_cli(monkeypatch, capsysbinary, *args, where)
        base = str(tmp_path / which)

        def neutral(s: str, w=str(where), base=base) -> str:
            return STAMP.sub("T", s.replace(w, "ROOT").replace(base, "BASE"))

        files = tree_bytes(tmp_path / which) if writes else None
        got[which] = (code, neutral(out), neutral(err), files)
    rust, python = got[kernel.RUST], got[kernel.PYTHON]
    if writes:
        differ = [
            k for k in rust[3].keys() | python[3].keys() if rust[3].get(k) != python[3].get(k)
        ]
        assert differ == [], (src, args)
    assert rust == python, (src, args)
    return got[kernel.RUST]


def tree_bytes(root: Path) -> dict:
    """Every file's bytes; a repair manifest (paths, times) only as being there."""
    return {
        STAMP.sub("T", str(p.relative_to(root))): (
            None if p.name == "manifest.json" else p.read_bytes()
        )
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def damaged_roots(corrupt_cases, recovery_tree) -> list[Path]:
    return [c.partition_dir for c in corrupt_cases] + [r for r in recovery_tree]


def test_verify_and_index_commands(
    tree, corrupt_cases, recovery_tree, real_root, tmp_path, monkeypatch, capsysbinary
):
    codes = set()
    for src in [tree, real_root, *damaged_roots(corrupt_cases, recovery_tree)]:
        for args in (
            ("verify", "-f", "json"),
            ("verify", "--deep", "-f", "json"),
            ("index", "check", "-f", "json"),
            ("index", "rebuild", "--dry-run", "-f", "json"),
        ):
            code, out, _, _ = cli_both(monkeypatch, capsysbinary, tmp_path, src, *args)
            assert out
            codes.add(code)
    assert {0, 4} <= codes  # clean and damaged inputs both among them


def test_repairs_and_rebuilds(
    tree, corrupt_cases, recovery_tree, tmp_path, monkeypatch, capsysbinary
):
    repaired = 0
    for i, src in enumerate(damaged_roots(corrupt_cases, recovery_tree)):
        code, _, _, files = cli_both(
            monkeypatch, capsysbinary, tmp_path / f"r{i}", src, "verify", "--repair", "-f", "json",
            writes=True,
        )  # fmt: skip
        repaired += bool(code & 1)
        cli_both(
            monkeypatch, capsysbinary, tmp_path / f"i{i}", src, "index", "rebuild", "-f", "json",
            writes=True,
        )  # fmt: skip
    assert repaired >= 5


def _env(which: str) -> dict:
    return {**os.environ, kernel.ENV: which}


@pytest.mark.parametrize("args", [("verify", "-f", "json"), ("verify", "--deep", "-f", "json")])
def test_real_entry_point_both_ways(tree, corrupt_cases, real_root, args):
    sources = [tree / "orders-0", real_root, corrupt_cases[3].partition_dir]
    for src in sources:
        out = {w: run_kseg(*args, src, env=_env(w)) for w in PATHS}
        assert out[kernel.RUST].returncode == out[kernel.PYTHON].returncode
        assert out[kernel.RUST].stdout == out[kernel.PYTHON].stdout
        assert out[kernel.RUST].stdout
    version = {w: run_kseg("--version", env=_env(w)).stdout.decode() for w in PATHS}
    assert "kernel: rust" in version[kernel.RUST]
    assert "kernel: python" in version[kernel.PYTHON]


def test_kernel_scan_holds_a_bounded_window(tmp_path, monkeypatch):
    """On a file read on demand (storage.mapped.ShadowMap) the kernel's walk makes a bounded
    window readable at a time and lets go of what it passed, as the core's walk does."""
    from kseg.storage import mapped

    spec = [([(b"k" * 100, b"v" * 900, (), 0)] * 4, i * 4, False, None, 0) for i in range(600)]
    log = fuzz_segment(tmp_path, make_segment(spec))
    assert log.stat().st_size > 2 << 20
    monkeypatch.setattr(mapped, "FILL_STEP", 64 << 10)
    monkeypatch.setattr(mapped, "KEEP_BEHIND", 128 << 10)
    monkeypatch.setattr(kernel_walk, "READ_WINDOW", 64 << 10)
    widest = [0]
    real = mapped.ShadowMap._commit  # what ensure and the kernel's fused read_walk end with

    def commit(self, target):
        out = real(self, target)
        widest[0] = max(widest[0], self.hi - self.lo)
        return out

    monkeypatch.setattr(mapped.ShadowMap, "_commit", commit)
    use(monkeypatch, kernel.RUST)
    rust = scan_facts(scan_segment(log, check_indexes=False))
    assert rust["batches"] == 600
    assert 0 < widest[0] <= (128 + 64 + 64 + 8) << 10
    use(monkeypatch, kernel.PYTHON)
    assert scan_facts(scan_segment(log, check_indexes=False)) == rust


def test_unknown_kernel_choice_is_a_usage_error(tmp_path):
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.log").write_bytes(
        make_segment([([(b"k", b"v", (), 0)], 0, False, None, 0)])
    )
    proc = run_kseg("verify", pdir, env=_env("fortran"))
    assert proc.returncode == 16
    assert proc.stderr.decode().count("\n") == 1
    assert "KSEG_KERNEL='fortran' is not one of: rust, python, auto" in proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
