"""The resync scan (issue 29): `dump --resync` and `stats --resync` over a damaged region, side
by side with `kseg verify` over a clean segment of the same size (the anchor: the issue's target
is a resync scan within 2x verify's time for the same bytes).

    python bench/resync.py [--mib 1024] [--repeat 3] [--python-mib 4]

Inputs under bench/data/resync-*/ (built once, deterministic): ``clean`` (one segment of ~16 KiB
v2 batches, --mib MiB: the anchor), ``garbage`` and ``zeros`` (ten intact batches, then a
--mib MiB region of random bytes / of zeros, then ten intact batches with higher offsets: the
scan must cross the whole region to find them). The batches are kseg's batch builder's; the
clean segment repeats one batch with rising base offsets (outside its CRC: every copy is
valid). Whole processes, medians of --repeat runs on a warm page cache, CPU seconds of the child
beside wall seconds. The pure-Python scan (KSEG_KERNEL=python) is timed on --python-mib MiB
regions and reported as MB/s (it is the reference, one position at a time).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PY = sys.executable
TS0 = 1_700_000_000_000


def _batch(base: int, n: int = 60) -> bytes:
    from kseg.format.batch import build_batch
    from kseg.format.record import Record

    recs = [
        Record(b"key-%08d" % (base + i), b"v%d" % i * 30, TS0 + i, [], base + i) for i in range(n)
    ]
    return build_batch(recs, base)


def _with_base(batch: bytes, base: int) -> bytes:
    return base.to_bytes(8, "big") + batch[8:]


def generate(mib: int, name: str, fill) -> Path:
    pdir = DATA / f"resync-{name}-{mib}" / "t-0"
    log = pdir / "00000000000000000000.log"
    if log.exists():
        return log
    pdir.mkdir(parents=True, exist_ok=True)
    one = _batch(0)
    with open(log, "wb") as f:
        base = 0
        for _ in range(10):
            f.write(_with_base(one, base))
            base += 60
        if fill is None:  # the clean segment: copies up to the size
            size = 10 * len(one)
            while size < mib << 20:
                f.write(_with_base(one, base))
                base += 60
                size += len(one)
        else:
            left = mib << 20
            while left:
                n = min(left, 64 << 20)
                f.write(fill(n))
                left -= n
            base += 10**9  # the intact batches after the region hold higher offsets
        for _ in range(10):
            f.write(_with_base(one, base))
            base += 60
    return log


def timed_cpu(cmd: list[str], repeat: int, kernel: str) -> tuple[float, float]:
    import resource

    env = {**os.environ, "KSEG_KERNEL": kernel}
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 4):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python-mib", type=int, default=4)
    args = ap.parse_args()
    rnd = random.Random(29)
    clean = generate(args.mib, "clean", None)
    garbage = generate(args.mib, "garbage", rnd.randbytes)
    zeros = generate(args.mib, "zeros", bytes)
    small = {
        "garbage": generate(args.python_mib, "garbage", random.Random(30).randbytes),
        "zeros": generate(args.python_mib, "zeros", bytes),
    }
    kseg = [PY, "-m", "kseg"]
    rows = []
    anchor = timed_cpu([*kseg, "verify", str(clean)], args.repeat, "rust")
    rows.append((f"anchor: kseg verify, clean segment ({args.mib} MiB) [rust]", *anchor, None))
    for name, log in (("random bytes", garbage), ("zeros", zeros)):
        for cmd in (
            ["dump", str(log), "--resync", "--batches-only", "-f", "json"],
            ["stats", str(log.parent), "--resync", "-f", "json"],
        ):
            wall, cpu = timed_cpu([*kseg, *cmd], args.repeat, "rust")
            rows.append(
                (
                    f"kseg {cmd[0]} --resync, {args.mib} MiB of {name} [rust]",
                    wall,
                    cpu,
                    wall / anchor[0],
                )
            )
    for name, log in small.items():
        wall, cpu = timed_cpu(
            [*kseg, "dump", str(log), "--resync", "--batches-only", "-f", "json"], 1, "python"
        )
        mbps = (args.python_mib << 20) / 1e6 / wall
        rows.append(
            (
                f"kseg dump --resync, {args.python_mib} MiB of {name} [python] ({mbps:.1f} MB/s)",
                wall,
                cpu,
                None,
            )
        )
    print("| what | wall s | CPU s | vs verify (wall) |\n|---|---:|---:|---:|")
    for what, wall, cpu, ratio in rows:
        print(f"| {what} | {wall:.3f} | {cpu:.3f} | {'' if ratio is None else f'{ratio:.2f}x'} |")


if __name__ == "__main__":
    main()
