"""`--jobs` for the read commands that walk partitions: `kseg stats`, `kseg dump --count` and a
record search, `--jobs 1` against `--jobs N` (wall and CPU seconds, medians, stdout checked
identical), and the plain dump forced into workers to see whether it would pay (it does not run
so: kseg.dump.plan._jobs).

    python bench/jobs_read.py [--partitions 8] [--mib 64] [--jobs 2] [--repeat 3] [--keep]
                              [--only stats,count,search,plain]

Inputs: one partition of ~16 KiB batches of ~250-byte records (bench/run.py's records), copied
to PARTITIONS partitions of a root under bench/data/jobs/ (removed at the end unless --keep).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import kseg_cmd, timed_cpu  # noqa: E402

# the plain dump, its items forced into workers (a measurement only; kernel Lines as bytes)
FORCED = """
import sys
import kseg.dump.plan as p
from kseg import kernel
orig = p._portable
def portable(work):
    w = orig(work)
    lines = kernel.lines_type() if kernel.compiled() else None
    def g(item):
        for chunk in w(item):
            yield [bytes(e) if lines is not None and type(e) is lines else e for e in chunk]
    return g
p._portable = portable
p._jobs = lambda opts: opts.jobs
from kseg.cli.entry import run_app
sys.argv = ["kseg", *sys.argv[1:]]
run_app()
"""


def build(partitions: int, mib: int) -> Path:
    """The input of bench/jobs.py (P partitions of one MIB-MiB segment of ~16 KiB batches),
    built once by it and shared."""
    from jobs import generate

    return generate(partitions, mib)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dump-partitions", type=int, default=2)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated words: rows whose name has one")
    a = ap.parse_args()
    root = build(a.partitions, a.mib)
    few = [root / f"bench-{n}" for n in range(a.dump_partitions)]
    cases = [
        ("stats", ["stats", root]),
        ("stats --by hour", ["stats", root, "--by", "hour"]),
        ("dump --count", ["dump", root, "--count"]),
        ("dump --count --value-contains", ["dump", root, "--count", "--value-contains", "sig"]),
        ("search --key-eq (1 match/partition)", ["dump", root, "--key-eq", "key-00001234"]),
        ("search --value (regex, rare)", ["dump", root, "--value", 'id":12345[0-9]']),
    ]
    forced = [
        (f"plain dump -f json ({a.dump_partitions} partitions)", ["dump", *few, "-f", "json"]),
        (f"plain dump text ({a.dump_partitions} partitions)", ["dump", *few]),
    ]
    py = sys.executable
    print(f"root: {a.partitions} partitions x {a.mib} MiB; medians of {a.repeat}")
    print(f"{'command':44} {'jobs':>4} {'wall s':>8} {'CPU s':>8}")
    words = [w for w in a.only.split(",") if w]
    cases = [c for c in cases if not words or any(w in c[0] for w in words)]
    forced = [c for c in forced if not words or any(w in c[0] for w in words)]
    for name, args in cases:
        outs = []
        for j in (1, a.jobs):
            cmd = kseg_cmd(*map(str, args), "--jobs", str(j), "-q")
            wall, cpu, out = timed_cpu(cmd, a.repeat, keep=True)
            outs.append(out)
            print(f"{name:44} {j:>4} {wall:8.2f} {cpu:8.2f}", flush=True)
        assert outs[0] == outs[1], name
    for name, args in forced:
        outs = []
        for j in (1, a.jobs):
            cmd = [py, "-c", FORCED, *map(str, args), "--jobs", str(j), "-q"]
            wall, cpu, out = timed_cpu(cmd, a.repeat, keep=True)
            outs.append(len(out))
            print(f"{name + ' (forced)':44} {j:>4} {wall:8.2f} {cpu:8.2f}", flush=True)
        assert outs[0] == outs[1], name
    if not a.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
