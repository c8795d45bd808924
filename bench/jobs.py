"""Every core (issue 33): a command over a root of P partitions, --jobs 1 against --jobs N.

    python bench/jobs.py [--partitions 8] [--mib 256] [--repeat 3] [--jobs 1,2] [--only verify,...]

The input (built once under bench/data/jobs-P-MIB/ with kseg's LogWriter, one partition written
and copied): P partitions of one MIB-MiB segment of ~16 KiB batches of ~250-byte records. Each
row is a whole `kseg` process on a warm page cache: the median wall and CPU seconds of --repeat
runs, the speed-up against --jobs 1 measured in the same run, and (from one more run) the peak
proportional resident memory (PSS) of the whole process tree (the parent and its workers,
sampled every 10 ms), against --jobs 1's.
The machine's load average is printed with the table: on a shared machine, wall times scale
with what else runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.run import DATA, _records, _writer, kseg_cmd  # noqa: E402

COMMANDS = {
    "verify": ["verify"],
    "verify-deep": ["verify", "--deep"],
    "index-check": ["index", "check"],
    "stats": ["stats"],
    "dump-count": ["dump", "--count"],
}


def generate(partitions: int, mib: int) -> Path:
    root = DATA / f"jobs-{partitions}-{mib}"
    stamp = root / ".generated"
    if stamp.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    first = root / "bench-0"
    with _writer(first, segment_bytes=(mib + 64) << 20) as w:
        i = size = 0
        while size < mib << 20:
            info = w.append(_records(60, i))
            i += 60
            size = info.position + info.size
    for p in range(1, partitions):
        shutil.copytree(first, root / f"bench-{p}")
    stamp.write_text("ok")
    return root


def _tree_rss(pid: int) -> int:
    """Proportional resident bytes (PSS: a page shared by the forked workers counts once in
    all) of ``pid`` and its children (the workers)."""
    total = 0
    pids = [pid]
    try:
        pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) << 10
        except OSError:
            pass
    return total


def run_once(cmd: list[str], sample: bool = False) -> tuple[float, float, int]:
    """Wall and CPU seconds of one run; with ``sample``, also its peak PSS (sampling reads the
    page tables every 10 ms: on two cores it takes CPU from the run, so timed runs do not)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    if sample:
        while proc.poll() is None:
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.01)
    else:
        proc.wait()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.read()!r}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--only", default="verify")
    args = ap.parse_args()
    root = generate(args.partitions, args.mib)
    # kseg's bytecode compiled once, as an installed kseg has it (an editable install under
    # PYTHONDONTWRITEBYTECODE would compile every module on every start: ~0.15 s of start-up)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(HERE.parent / "kseg")], check=True
    )
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    print(
        f"input: {args.partitions} partitions x {args.mib} MiB ({size / 1e9:.2f} GB), "
        f"cores {len(os.sched_getaffinity(0))}, load average before: {os.getloadavg()}",
    )
    print("| command | --jobs | wall s | CPU s | GB/s (wall) | speed-up | peak PSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.only.split(","):
        base = None
        for n in [int(j) for j in args.jobs.split(",")]:
            cmd = [*kseg_cmd(*COMMANDS[name], str(root), "--jobs", str(n))]
            runs = [run_once(cmd) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            peak = run_once(cmd, sample=True)[2]  # one more run, for its memory
            base = base or wall
            print(
                f"| kseg {' '.join(COMMANDS[name])} | {n} | {wall:.3f} | {cpu:.3f} | "
                f"{size / wall / 1e9:.2f} | {base / wall:.2f}x | {peak / 2**20:.0f} |",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
