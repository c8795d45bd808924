"""The segment walk on one core (issue 33): `kseg verify` of one large segment, whole process,
beside `cat` of the same page-cached file and the bare Python crc32c header walk, same run.

    python bench/walk.py [--mib 2048] [--small-mib 2048] [--repeat 3] [--kernel rust,python]
                         [--data /tmp/kseg-walk]

Inputs (built once under --data, deterministic): ``big`` (one segment of ~16 KiB uncompressed
v2 batches of 60 ~250-byte records, --mib MiB) and ``small`` (1-4-record batches, --small-mib
MiB). Each repeats a few batches built by kseg's batch builder with rising base offsets (outside
the CRC: every copy is valid). Medians of --repeat runs on a warm page cache; the throughput is
per CPU second of the child (user + sys), and "vs cat" is kseg's throughput over cat's.
Delete the inputs when done (``rm -r DATA``): they are --mib + --small-mib MiB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

PY = sys.executable
TS0 = 1_700_000_000_000

CRC_WALK = r"""
import mmap, os, struct, sys
from crc32c import crc32c
fd = os.open(sys.argv[1], os.O_RDONLY); size = os.fstat(fd).st_size
mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ); mv = memoryview(mm)
unpack = struct.Struct(">qiibI").unpack_from
pos = n = bad = 0
while pos < size:
    _, length, _, _, crc = unpack(mm, pos)
    end = pos + 12 + length
    if crc32c(mv[pos + 21:end]) != crc: bad += 1
    pos = end; n += 1
print(n, bad)
"""


def _batch(base: int, n: int) -> bytes:
    import hashlib

    from kseg.format.batch import build_batch
    from kseg.format.record import Record

    recs = []
    for i in range(base, base + n):
        h = hashlib.sha256(b"%d" % i).hexdigest().encode()
        value = (b'{"id":%d,"sig":"' % i + h + h[::-1] + h + b'"}')[:230]
        recs.append(Record(b"key-%08d" % i, value, TS0 + i, [], i))
    return build_batch(recs, base)


def generate(log: Path, mib: int, counts: list[int]) -> Path:
    """A segment of about ``mib`` MiB (at most Kafka's 2^31-1 bytes) of the batches of
    ``counts`` records, round and round."""
    target = min(mib << 20, (1 << 31) - 1)
    if log.exists():
        return log
    log.parent.mkdir(parents=True, exist_ok=True)
    templates = [(_batch(0, n), n) for n in counts]
    base = size = 0
    with open(log, "wb") as f:
        while True:
            chunk = bytearray()
            for _ in range(4096):
                for one, n in templates:
                    if size + len(chunk) + len(one) > target:
                        f.write(chunk)
                        return log
                    chunk += base.to_bytes(8, "big") + one[8:]
                    base += n
            f.write(chunk)
            size += len(chunk)


def timed_cpu(cmd: list[str], repeat: int, kernel: str | None = None) -> tuple[float, float]:
    """bench/run.py's timing (median wall and CPU seconds of the child), without the output."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import timed_cpu as timed

    return timed(cmd, repeat, kernel)[:2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=2048)
    ap.add_argument("--small-mib", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kernel", default="rust")
    ap.add_argument("--data", default="/tmp/kseg-walk")
    args = ap.parse_args()
    data = Path(args.data)
    big = generate(data / f"big-{args.mib}" / "t-0" / "00000000000000000000.log", args.mib, [60])
    small = generate(
        data / f"small-{args.small_mib}" / "t-0" / "00000000000000000000.log",
        args.small_mib,
        [1, 2, 3, 4],
    )
    import kseg

    # the kseg that runs (PYTHONPATH may name another tree than this script's), compiled once
    subprocess.run([PY, "-m", "compileall", "-q", str(Path(kseg.__file__).parent)], check=True)
    print(f"kseg: {Path(kseg.__file__).parent}; load: {os.getloadavg()}", flush=True)
    rows = []
    for name, log in (("16 KiB batches", big), ("1-4-record batches", small)):
        mb = log.stat().st_size / 1e6
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL)  # warm the cache
        cat = timed_cpu(["cat", str(log)], args.repeat)
        rows.append((f"cat, {name} ({mb:.0f} MB)", *cat, mb, None))
        crc = timed_cpu([PY, "-c", CRC_WALK, str(log)], args.repeat)
        rows.append((f"anchor: python crc32c walk, {name}", *crc, mb, cat[1]))
        for kern in args.kernel.split(","):
            t = timed_cpu([PY, "-m", "kseg", "verify", str(log.parent)], args.repeat, kern)
            rows.append((f"kseg verify, {name} [{kern}]", *t, mb, cat[1]))
        for r in rows[-2 - len(args.kernel.split(",")) :]:
            print(_line(r), flush=True)
    print(f"load: {os.getloadavg()}")
    print("\n| what | wall s | CPU s | GB/s per CPU s | vs cat (CPU) |\n|---|---:|---:|---:|---:|")
    for r in rows:
        print(_line(r, md=True))


def _line(r, md: bool = False) -> str:
    name, wall, cpu, mb, cat_cpu = r
    rate = mb / 1e3 / cpu if cpu else float("inf")
    vs = f"{cat_cpu / cpu:.2f}x" if cat_cpu else ""
    if md:
        return f"| {name} | {wall:.3f} | {cpu:.3f} | {rate:.2f} | {vs} |"
    return f"{name:50s} {wall:7.3f} s wall {cpu:7.3f} s CPU {rate:6.2f} GB/s/CPU-s {vs}"


if __name__ == "__main__":
    main()
