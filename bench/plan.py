"""Spark planning at fleet scale: list and prune a log.dirs tree of 100,000 segment files.

    .venv/bin/python bench/plan.py [--partitions 100] [--segments 1000] [--uri]

The tree (bench/data/fleet-P-S/, built once) holds P partition dirs of S segments each: every
segment a sparse 1 MiB `.log` (named by its base offset, 1,000 offsets apart; no disk blocks)
with empty index files, plus one real partition written by kseg's LogWriter. Each measurement
runs in a fresh process (driver memory is that process's peak RSS, and Python's own peak
through tracemalloc): kseg.spark.planning.plan over the whole tree, then with pruning by offset
(--fromOffset past all but the last segment of each partition) and by topic (one topic of ten).
No Spark: this is the driver's planning alone, what a job pays before its first task.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"

MEASURE = r"""
import json, resource, sys, time, tracemalloc
from kseg.spark.planning import Prune, plan
root, kind, arg = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "offset":
    prune = Prune(from_offset=int(arg))
else:
    prune = Prune(topic=arg) if kind == "topic" else Prune()
t0, c0 = time.perf_counter(), time.process_time()
tasks = plan([root], prune)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
tracemalloc.start()  # a second plan for Python's own peak (tracemalloc slows allocation)
plan([root], prune)
peak = tracemalloc.get_traced_memory()[1]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"tasks": len(tasks), "wall": wall, "cpu": cpu, "py_peak": peak, "rss": rss}))
"""


def build(partitions: int, segments: int) -> Path:
    root = DATA / f"fleet-{partitions}-{segments}"
    done = root / ".complete"
    if done.exists():
        return root
    import kseg

    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\nbroker.id=0\ncluster.id=fleet\n")
    for p in range(partitions):
        pdir = root / f"topic{p % 10}-{p // 10}"
        pdir.mkdir(exist_ok=True)
        for s in range(segments):
            name = f"{s * 1000:020d}"
            with open(pdir / f"{name}.log", "wb") as f:
                f.truncate(1 << 20)  # sparse: a size, no blocks
            (pdir / f"{name}.index").touch()
            (pdir / f"{name}.timeindex").touch()
    with kseg.LogWriter(root / "real-0") as w:
        for i in range(100):
            w.append(
                [kseg.Record(key=b"k%d" % i, value=b"v" * 100, timestamp=1_700_000_000_000 + i)]
            )
    done.touch()
    return root


def measure(root: str, kind: str, arg: str = "") -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, root, kind, arg], capture_output=True)
    if out.returncode:
        sys.exit(f"planning {root} ({kind}) failed:\n{out.stderr.decode()}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--segments", type=int, default=1000)
    ap.add_argument("--uri", action="store_true", help="also plan through a file:// URI")
    args = ap.parse_args()
    t0 = time.perf_counter()
    root = build(args.partitions, args.segments)
    built = time.perf_counter() - t0
    n = args.partitions * args.segments
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        f"; tree: {n:,} segments in {args.partitions} partitions + 1 real (built in {built:.1f} s)"
    )
    print("| planning | input | tasks | wall s | CPU s | driver peak RSS | Python peak |")
    print("|---|---|---:|---:|---:|---:|---:|")
    last = (args.segments - 1) * 1000
    inputs = [("path", str(root))] + ([("file:// URI", f"file://{root}")] if args.uri else [])
    for label, path in inputs:
        for kind, arg, what in (
            ("all", "", "every segment"),
            ("offset", str(last), f"--fromOffset {last} (last segment of each)"),
            ("topic", "^topic3$", "--topic '^topic3$' (one topic of ten)"),
        ):
            r = measure(path, kind, arg)
            print(
                f"| {what} | {label} | {r['tasks']:,} | {r['wall']:.2f} | {r['cpu']:.2f} "
                f"| {r['rss'] / 2**20:.0f} MiB | {r['py_peak'] / 2**20:.1f} MiB |"
            )


if __name__ == "__main__":
    main()
