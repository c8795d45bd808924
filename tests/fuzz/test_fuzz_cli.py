"""The fuzz job: every command on mutated copies of every file kind, as real subprocesses under a
memory limit and a timeout. It fails on a traceback, a signal death, an exit code outside the
contract, a hang or a memory-limit breach.

Inputs come from kseg's own writer (the example tree: v2 with every codec, legacy magic 0/1 with
compressed wrappers, transactions, indexes, snapshots, checkpoints; plus a decompression bomb),
then one mutation: a bit flip, a truncation, a length/count lie, or a zero-filled range; for
`.log` files CRCs are then recomputed (on some examples) so that the lie passes the batch checks
and reaches the record decoder.

Bounded for CI: about KSEG_FUZZ_SECONDS (default 40) of work, as a number of examples
(KSEG_FUZZ_EXAMPLES overrides it); the same examples every run unless KSEG_FUZZ_RANDOM is set.
A longer manual run, new examples each time:
    KSEG_FUZZ_SECONDS=1800 KSEG_FUZZ_RANDOM=1 .venv/bin/python -m pytest -q tests/fuzz
KSEG_FUZZ_CHILD_PYTHONPATH runs the children against another checkout (e.g. an older one, to see
that the job finds its bugs).
"""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kseg.fixtures import build_tree
from kseg.fixtures.bombs import bomb_batch, record_bomb
from kseg.format.crc import crc32c
from tests.safety.limits import run_limited

SECONDS = float(os.environ.get("KSEG_FUZZ_SECONDS", "40"))
# an example (copy, mutate, 2-3 commands as subprocesses) takes about 1.5 s on a quiet machine
EXAMPLES = int(os.environ.get("KSEG_FUZZ_EXAMPLES", str(max(1, int(SECONDS / 1.5)))))
TIMEOUT = 60

# the exit codes each command may give (verify: any OR of these bits)
DUMP = {0, 4, 8}
VERIFY_BITS = 1 | 4 | 8
RESTORE = {0, 8}

# dumps stop after 5,000 records: the seeds hold fewer, a bomb holds millions (streamed)
COMMANDS = [
    ("dump", "-f", "json", "--limit", "5000"),
    ("dump", "-f", "json", "--payload", "base64", "--limit", "5000"),
    ("dump", "-f", "json", "--payload", "json", "--limit", "5000"),
    ("dump", "-f", "text", "--payload", "hex", "--limit", "5000"),
    ("dump", "-f", "text", "--payload", "redact", "--limit", "5000"),
    ("dump", "-f", "table", "--payload", "none", "--limit", "5000"),
    ("dump", "-f", "json", "--batches-only"),
    ("dump", "-f", "json", "--from-offset", "50", "--limit", "20"),
    ("dump", "-f", "json", "--from-time", "1700000010000", "--max-bytes", "4000"),
    ("verify",),
    ("verify", "--deep", "-f", "json"),
    ("verify", "--repair"),  # on a copy; then restore
    ("index", "check"),
    ("index", "rebuild"),  # on a copy
    ("seek", "--time", "1700000010000"),
    ("seek", "--time", "max-timestamp"),
    ("seek", "--offset", "60"),
]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    root = build_tree(tmp_path_factory.mktemp("fuzz-seeds") / "logs")
    record_bomb(root / "bomb-0", [bomb_batch(records=200_000, codec="zstd")] * 2)
    record_bomb(root / "legacybomb-0", records=50_000, codec="gzip", magic=1)
    record_bomb(root / "bigbomb-0", records=8_000_000, codec="zstd")  # 5 KB; 1.6 GB as objects
    return root


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _recompute_crcs(data: bytearray) -> None:
    """Make every entry's CRC match its (mutated) bytes, as far as the sizes let a walk go."""
    pos = 0
    while pos + 17 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + size
        if size < 14 or end > len(data):
            return
        magic = data[pos + 16]
        if magic == 2 and size >= 49:
            struct.pack_into(">I", data, pos + 17, crc32c(bytes(data[pos + 21 : end])))
        elif magic in (0, 1):
            struct.pack_into(">I", data, pos + 12, zlib.crc32(bytes(data[pos + 16 : end])))
        pos = end


LIES = st.sampled_from([0, 1, -1, 0x7F, 0x7FFFFFFF, -0x80000000, 0x7FFFFFFFFFFFFFFF, 1 << 20])


@st.composite
def mutations(draw):
    kind = draw(st.sampled_from(["flip", "truncate", "lie", "zeros", "varint"]))
    where = draw(st.floats(0, 1, exclude_max=True))
    return {
        "kind": kind,
        "where": where,
        "bit": draw(st.integers(0, 7)),
        "width": draw(st.sampled_from([1, 2, 4, 8])),
        "lie": draw(LIES),
        "length": draw(st.integers(1, 64)),
        "crc": draw(st.booleans()),
        # the environment can be hostile too: stdout on a full disk, a FIFO named like a segment
        "hazard": draw(st.sampled_from([None] * 6 + ["full", "fifo"])),
    }


def _mutate(path: Path, m: dict) -> str:
    data = bytearray(path.read_bytes())
    if not data:
        data = bytearray(b"\x00" * 8)
    pos = int(m["where"] * len(data))
    if m["kind"] == "flip":
        data[pos] ^= 1 << m["bit"]
    elif m["kind"] == "truncate":
        del data[pos:]
    elif m["kind"] == "zeros":
        data[pos : pos + m["length"]] = bytes(min(m["length"], len(data) - pos))
    elif m["kind"] == "varint":  # a long varint: a huge length or delta in a record
        data[pos : pos + 10] = b"\xff" * 9 + b"\x01"
    else:
        w = m["width"]
        lie = m["lie"] & ((1 << (8 * w)) - 1)
        data[pos : pos + w] = lie.to_bytes(w, "big")[: len(data) - pos]
    if m["crc"] and path.suffix == ".log":
        _recompute_crcs(data)
    path.write_bytes(bytes(data))
    return f"{m['kind']} at {pos} of {path.name} (crc recomputed: {m['crc'] and path.suffix == '.log'})"


def _copy_tree(src: Path, dest: Path) -> None:
    """copytree that re-creates FIFOs instead of reading them."""
    fifos = [p for p in src.rglob("*") if p.is_fifo()]
    shutil.copytree(src, dest, ignore=lambda d, names: [n for n in names if Path(d, n).is_fifo()])
    for p in fifos:
        os.mkfifo(dest / p.relative_to(src))


def _env() -> dict | None:
    child = os.environ.get("KSEG_FUZZ_CHILD_PYTHONPATH")
    return None if child is None else {**os.environ, "PYTHONPATH": child}


def _check(args, proc, what: str) -> None:
    err = (proc.stderr or b"").decode(errors="replace")
    where = f"kseg {' '.join(map(str, args))} after {what}"
    assert proc.returncode >= 0, f"{where}: killed by signal {-proc.returncode}\n{err[-2000:]}"
    assert "Traceback" not in err, f"{where}: traceback\n{err[-3000:]}"
    assert "internal error" not in err and "out of memory" not in err, f"{where}:\n{err[-2000:]}"
    rc = proc.returncode
    if args[0] == "verify":
        ok = rc & ~VERIFY_BITS == 0 and ("--repair" in args or not rc & 1)
    elif args[0] == "restore":
        ok = rc in RESTORE
    else:  # 4 and 8 together (bad data in one file, an unreadable other) is what dump ORs today
        ok = rc in DUMP or rc == 12
    assert ok, f"{where}: exit {rc} is outside the contract\n{err[-2000:]}"


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    derandomize=os.environ.get("KSEG_FUZZ_RANDOM") is None,  # reproducible in CI
    phases=(Phase.explicit, Phase.generate),  # no shrinking: each step is a few processes
)
@given(data=st.data())
def test_fuzz_every_command(seeds, tmp_path_factory, data):
    work = tmp_path_factory.mktemp("fuzz")
    files = _files(seeds)
    victim = data.draw(st.sampled_from(files), label="file")
    pdir_name = victim.parent.name if victim.parent != seeds else None
    root = work / "logs"
    if pdir_name is None:  # a root file: the whole root is the target
        shutil.copytree(seeds, root)
        target = root
    else:
        root.mkdir()
        shutil.copytree(victim.parent, root / pdir_name)
        for f in seeds.iterdir():
            if f.is_file():
                shutil.copy2(f, root / f.name)
        target = root / pdir_name
    m = data.draw(mutations())
    what = _mutate(target / victim.name if pdir_name else root / victim.name, m)
    if m["hazard"] == "fifo":
        fifo_dir = target if pdir_name else next(p for p in sorted(root.iterdir()) if p.is_dir())
        os.mkfifo(fifo_dir / "00000000000009999999.log")
        what += ", with a FIFO named like a segment"
    full = m["hazard"] == "full"
    if full:
        what += ", stdout on a full disk"
    commands = data.draw(
        st.lists(st.sampled_from(COMMANDS), min_size=2, max_size=3, unique=True), label="commands"
    )
    for args in commands:
        _run(args, target, root, what, work, full)


def _run(args, target: Path, root: Path, what: str, work: Path, full: bool) -> None:
    env = _env()
    if full:
        with open("/dev/full", "wb") as out:
            proc = run_limited(*args, target, timeout=TIMEOUT, env=env, stdout=out)
        _check(args, proc, what)
        assert proc.returncode & 8, f"{args} to a full disk: exit {proc.returncode}"
        assert b"cannot write output: No space left on device" in proc.stderr, proc.stderr[-500:]
        return
    if args[0] == "verify" and "--repair" in args:
        copy = work / "repair" / root.name
        _copy_tree(root, copy)
        sub = copy / target.relative_to(root) if target != root else copy
        q = work / "quarantine"
        proc = run_limited(*args, "--quarantine", q, sub, timeout=TIMEOUT, env=env)
        _check(args, proc, what)
        for qdir in sorted(q.glob("*/*")) if q.exists() else []:
            if (qdir / "manifest.json").exists():
                rproc = run_limited("restore", qdir, timeout=TIMEOUT, env=env)
                _check(("restore", qdir), rproc, what)
        return
    if args[:2] == ("index", "rebuild"):
        copy = work / "rebuild" / root.name
        _copy_tree(root, copy)
        sub = copy / target.relative_to(root) if target != root else copy
        proc = run_limited(*args, sub, timeout=TIMEOUT, env=env)
    else:
        proc = run_limited(*args, target, timeout=TIMEOUT, env=env)
    _check(args, proc, what)
