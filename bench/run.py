"""kseg benchmarks: whole processes, side by side with anchors, ratios not only seconds.

    python bench/run.py [--mib 256] [--repeat 3] [--only verify,dump,stats,search,...] [--kernel rust,python]
    python bench/run.py --only startup [--startup-repeat 21]

--kernel runs the verify, rebuild, dump (--batches-only) and small rows once per kernel
(KSEG_KERNEL=rust|python; default: whichever is active); "vs anchor" is seconds / anchor
seconds, and the note says the throughput as a multiple of the anchor's.

Generates its inputs once under bench/data/ with kseg's LogWriter (deterministic):
  big/      one segment of ~16 KiB uncompressed batches of ~250-byte records (--mib MiB)
  small/    one segment of 1-4 record batches (--mib MiB)
  codec-*/  one segment per codec (--codec-mib MiB of records each)
  many/     a partition of 1,000 segments (64 KiB each) with indexes
  startup-0/  a partition of one batch of one record (the start-up rows; only this for
              --only startup)
Timings are medians of --repeat runs on a warm page cache, start-up included.

The start-up rows (--only startup) time whole processes of the `kseg` console script on the
one-batch partition: medians of --startup-repeat runs, next to a bare `python -c pass` and
`python -c "import typer"` (the anchor of the start-up budget: `kseg verify` within it + 40 ms
CPU; the verify row says by how much), after compiling kseg's bytecode once (an editable install under PYTHONDONTWRITEBYTECODE would
otherwise compile every module on every start, which is not what an installed kseg does).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
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

KAFKA_PYTHON = r"""
import sys
from kafka.record import MemoryRecords
with open(sys.argv[1], "rb") as f: data = f.read()
mr = MemoryRecords(data); n = 0
while mr.has_next():
    for r in mr.next_batch():
        n += 1
print(n)
"""


KAFKA_PYTHON_SEARCH = r"""
import re, sys
from kafka.record import MemoryRecords
with open(sys.argv[1], "rb") as f: data = f.read()
mr = MemoryRecords(data); n = 0
want = sys.argv[2].encode()
while mr.has_next():
    for r in mr.next_batch():
        if r.key == want:
            n += 1
print(n)
"""


def timed_cpu(
    cmd: list[str], repeat: int, kernel: str | None = None, keep: bool = False
) -> tuple[float, float, bytes]:
    """Median wall and CPU (user+sys of the child) seconds of ``repeat`` runs; stdout goes to
    /dev/null (as timed's) unless ``keep`` (then the last run's stdout is returned)."""
    import resource

    env = None if kernel is None else {**os.environ, "KSEG_KERNEL": kernel}
    walls, cpus, out = [], [], ""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(
            cmd,
            stdout=subprocess.PIPE if keep else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
        out = proc.stdout
    return statistics.median(walls), statistics.median(cpus), out


def search_rows(big: Path, size_mb: float, repeat: int, row) -> None:
    """`kseg dump` record search next to the plain dump (the target: search at dump speed or
    better) and kafka-python decoding every record and comparing keys. Wall and CPU seconds
    (the machine is shared: CPU is the fairer comparison)."""
    key = "key-00500000"
    t, cpu, out = timed_cpu([PY, "-c", KAFKA_PYTHON_SEARCH, str(big), key], 1, keep=True)
    row(
        "anchor: kafka-python, every record, key == K",
        t,
        size_mb,
        note=f"{cpu:.2f} s CPU; {int(out)} match",
    )
    t_dump, cpu_dump, _ = timed_cpu(
        kseg_cmd("dump", str(big), "-f", "json", "--payload", "base64"), repeat
    )
    row(
        "kseg dump -f json --payload base64 (reference)",
        t_dump,
        size_mb,
        note=f"{cpu_dump:.2f} s CPU",
    )
    cases = [
        ("--key-eq K (literal, 1 match)", ("-f", "json", "--key-eq", key)),
        ("--key REGEX (1 match; pre-checked)", ("-f", "json", "--key", r"key-0050000[0]")),
        (
            "--key ^K$ (anchored: pre-checked by its literal)",
            ("-f", "json", "--key", f"^{key}$"),
        ),
        (
            "--value-contains (11,111 matches in 188 batches)",
            ("-f", "json", "--value-contains", '{"id":77'),
        ),
        ("--count --key REGEX (10 matches)", ("--count", "--key", r"key-0050000\d")),
        ("--value REGEX (every record matches: worst case)", ("-f", "json", "--value", '"sig"')),
    ]
    for name, args in cases:
        t, cpu, _ = timed_cpu(kseg_cmd("dump", str(big), *args), repeat)
        row(
            f"kseg dump {name}",
            t,
            size_mb,
            ratio_to=t_dump,
            note=f"{cpu:.2f} s CPU ({cpu / cpu_dump:.2f}x the reference dump's CPU)",
        )
    small = big.parent.parent / "small-0" / big.name  # 1-4-record batches
    small_mb = small.stat().st_size / 1e6
    t_small, cpu_small, _ = timed_cpu(
        kseg_cmd("dump", str(small), "-f", "json", "--payload", "base64"), repeat
    )
    row(
        "kseg dump -f json, small batches (reference)",
        t_small,
        small_mb,
        note=f"{cpu_small:.2f} s CPU",
    )
    for kern in ("rust", "python"):
        t, cpu, _ = timed_cpu(
            kseg_cmd("dump", str(small), "-f", "json", "--key-eq", key), repeat, kernel=kern
        )
        row(
            f"kseg dump --key-eq K, small batches [{kern}]",
            t,
            small_mb,
            ratio_to=t_small,
            note=f"{cpu:.2f} s CPU ({cpu / cpu_small:.2f}x the reference dump's CPU)",
        )


def _records(n: int, start: int, size: int = 230):
    """~250-byte records whose values are per-record JSON-ish text (compresses about 2:1)."""
    import hashlib

    import kseg

    out = []
    for i in range(start, start + n):
        h = hashlib.sha256(b"%d" % i).hexdigest().encode()
        value = (b'{"id":%d,"sig":"' % i + h + h[::-1] + h + b'"}')[:size]
        out.append(kseg.Record(key=b"key-%08d" % i, value=value, timestamp=TS0 + i))
    return out


def _writer(pdir: Path, **kw):
    import kseg

    shutil.rmtree(pdir, ignore_errors=True)
    return kseg.LogWriter(pdir, clock=lambda: TS0, **kw)


def generate(mib: int, codec_mib: int) -> None:
    DATA.mkdir(exist_ok=True)
    stamp = DATA / f".generated-v3-{mib}-{codec_mib}"
    if stamp.exists():
        return
    for p in DATA.glob(".generated-*"):
        p.unlink()
    t = time.perf_counter()
    target = mib << 20
    with _writer(DATA / "big-0", segment_bytes=target + (64 << 20)) as w:
        i = size = 0
        while size < target:
            info = w.append(_records(60, i))  # ~16 KiB batches
            i += 60
            size = info.position + info.size
    with _writer(DATA / "small-0", segment_bytes=target + (64 << 20)) as w:
        i = size = 0
        while size < target:
            n = 1 + i % 4
            info = w.append(_records(n, i))
            i += n
            size = info.position + info.size
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        with _writer(DATA / f"codec{codec}-0", segment_bytes=1 << 30, compression=codec) as w:
            raw = i = 0
            while raw < codec_mib << 20:
                w.append(_records(60, i))
                i += 60
                raw += 60 * 260
    with _writer(DATA / "many-0", segment_bytes=64 << 10) as w:
        for b in range(1000 * 4):
            w.append(_records(60, b * 60))
    stamp.write_text("ok")
    print(f"generated inputs in {time.perf_counter() - t:.1f} s", file=sys.stderr)


TYPER_ANCHOR = 'anchor: python -c "import typer"'
STARTUP_BUDGET_MS = 40  # issue 28: one parser (typer) is worth 40 ms; kseg's own part gets 40


def startup_rows(row, repeat: int) -> None:
    """Whole-process start-up of single commands on a one-batch partition (budget: verify <=
    `python -c "import typer"` + 40 ms CPU, both measured here). CPU seconds (user + sys) of the
    child beside the wall time: less sensitive to a busy machine than the wall clock."""
    import resource

    import kseg

    pdir = DATA / "startup-0"
    if not (pdir / "00000000000000000000.log").exists():
        with _writer(pdir) as w:
            w.append([kseg.Record(key=b"k", value=b"v", timestamp=TS0)])
    # the kseg that runs (PYTHONPATH may name another tree than this script's)
    subprocess.run([PY, "-m", "compileall", "-q", str(Path(kseg.__file__).parent)], check=True)
    script = Path(PY).with_name("kseg")
    kseg_bin = [str(script)] if script.exists() else [PY, "-m", "kseg"]
    cases = [
        ("anchor: python -c pass", [PY, "-c", "pass"]),
        (TYPER_ANCHOR, [PY, "-c", "import typer"]),
        ("kseg --version", [*kseg_bin, "--version"]),
        ("kseg --help", [*kseg_bin, "--help"]),
        ("kseg verify (one batch)", [*kseg_bin, "verify", str(pdir)]),
        ("kseg seek --time latest (one batch)", [*kseg_bin, "seek", "--time", "latest", str(pdir)]),
        ("kseg dump -f json (one batch)", [*kseg_bin, "dump", "-f", "json", str(pdir)]),
        ("kseg index check (one batch)", [*kseg_bin, "index", "check", str(pdir)]),
    ]
    walls: dict[str, list[float]] = {name: [] for name, _ in cases}
    cpus: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(repeat):  # interleaved: a burst of load hits every row alike
        for name, cmd in cases:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            walls[name].append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr!r}")
    anchor = statistics.median(walls[cases[0][0]])
    typer_cpu = statistics.median(cpus[TYPER_ANCHOR])
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    for name, _ in cases:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        note = f"{wall * 1000:.0f} ms wall (min {min(walls[name]) * 1000:.0f}), {cpu * 1000:.0f} ms CPU"
        if name.startswith("kseg verify"):
            over = (cpu - typer_cpu) * 1000
            note += (
                f"; {over:+.0f} ms CPU over `import typer` ({typer_cpu * 1000:.0f}): "
                f"budget +{STARTUP_BUDGET_MS} ms, {'met' if over <= STARTUP_BUDGET_MS else 'NOT met'}"
            )
        if name.startswith("anchor"):
            note += f"; {repeat} runs each, load average {load}"
        row(name, wall, ratio_to=None if name.startswith("anchor") else anchor, note=note)


def timed(
    cmd: list[str], repeat: int, stdout=subprocess.DEVNULL, kernel: str | None = None
) -> tuple[float, str]:
    env = None if kernel is None else {**os.environ, "KSEG_KERNEL": kernel}
    times, out = [], ""
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(
            cmd,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        times.append(time.perf_counter() - t)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-500:]}")
        out = proc.stdout or ""
    return statistics.median(times), out


def kseg_cmd(*args: str) -> list[str]:
    return [PY, "-m", "kseg", *args]


SPARK_EXPORT = r"""
import os, sys, time, shutil, kseg.spark
cores, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
TICK = os.sysconf("SC_CLK_TCK")

def tree_cpu():
    # CPU seconds of this process and every descendant (the JVM, pyspark's daemon and its
    # workers), including children they have reaped: Spark's work is spread over all of them
    kids, cpu = {}, 0.0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kids.setdefault(int(f[1]), []).append((int(d), sum(map(int, f[11:15])) / TICK))
    todo = [os.getpid()]
    cpu = sum(map(float, open(f"/proc/self/stat").read().rsplit(")", 1)[1].split()[11:15])) / TICK
    while todo:
        for pid, c in kids.get(todo.pop(), []):
            cpu += c
            todo.append(pid)
    return cpu

def timed(fn):
    c, t = tree_cpu(), time.perf_counter()
    n = fn()
    return n, time.perf_counter() - t, tree_cpu() - c

writers = sys.argv[4].split(",") if len(sys.argv) > 4 else ["spark", "arrow"]
t0 = time.perf_counter()
spark = kseg.spark.session(f"local[{cores}]", {"spark.ui.enabled": "false", "spark.driver.memory": "4g"})
df = kseg.spark.read(spark, [path], includeHeaders=True, maxPartitionBytes=32 << 20)
df.limit(1).collect()  # warm the Python workers
start = time.perf_counter() - t0
rows = [("noop",) + timed(lambda: df.write.mode("overwrite").format("noop").save())]
for writer in writers * 2:  # twice each: the JVM warms up
    rows.append((writer,) + timed(lambda: kseg.spark.export(
        spark, [path], out, partition_by=(), maxPartitionBytes=32 << 20, writer=writer)))
    shutil.rmtree(out, ignore_errors=True)
print(start)
for name, n, wall, cpu in rows:
    print(name, n, wall, cpu)
"""


def _best_runs(text: str) -> dict[str, tuple[int, float, float]]:
    """SPARK_EXPORT's output after its first line: per name (noop, spark, arrow) the run with
    the fewest CPU seconds, as (records, wall s, CPU s)."""
    best: dict[str, tuple[int, float, float]] = {}
    for line in filter(None, text.split("\n")[1:]):
        name, n, wall, cpu = line.split()
        got = (int(n or 0) if n != "None" else 0, float(wall), float(cpu))
        if name not in best or got[2] < best[name][2]:
            best[name] = got
    return best


def _spark_rows(big: Path, size_mb: float, row) -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("(spark rows skipped: pip install 'kseg[spark]')")
        return
    t_dump, _ = timed(kseg_cmd("dump", str(big), "-f", "json", "--payload", "base64"), 1)
    for cores in (1, 2):
        out = DATA / f"spark-out-{cores}"
        shutil.rmtree(out, ignore_errors=True)
        t, text = timed(
            [PY, "-c", SPARK_EXPORT, str(cores), str(big.parent), str(out)], 1, stdout=None
        )
        start = float(text.split("\n")[0])
        best = _best_runs(text)
        n = best["spark"][0]
        if cores == 1:
            row(
                "single process: kseg dump -f json --payload base64 (same data)", t_dump, size_mb, n
            )
        _, wall, cpu = best["noop"]
        row(
            f"spark source -> noop sink, local[{cores}]",
            wall,
            size_mb,
            n,
            note=f"session start {start:.1f} s; {n / cpu / 1e6:.2f} M rec/CPU-s",
        )
        spark_rate = n / best["spark"][2]
        # the "today": Spark's writer fed by the pure-Python decoder (no kernel), in
        # its own process (KSEG_KERNEL reaches the executors through the environment)
        _, text = timed(
            [PY, "-c", SPARK_EXPORT, str(cores), str(big.parent), str(out), "spark"],
            1,
            stdout=None,
            kernel="python",
        )
        _, today_wall, today = _best_runs(text)["spark"]
        row(
            f"kseg spark export (parquet, --writer spark), KSEG_KERNEL=python, local[{cores}]",
            today_wall,
            size_mb,
            n,
            note=f"{today:.1f} CPU-s, {n / today / 1e6:.2f} M rec/CPU-s: before the kernel",
        )
        for writer in ("spark", "arrow"):
            rows_written, wall, cpu = best[writer]
            assert rows_written == n, (writer, rows_written, n)
            rate = n / cpu
            row(
                f"kseg spark export (parquet, --writer {writer}), local[{cores}]",
                wall,
                size_mb,
                n,
                note=f"{cpu:.1f} CPU-s, {rate / 1e6:.2f} M rec/CPU-s"
                + (
                    f", {rate / spark_rate:.1f}x the spark writer, {rate * today / n:.1f}x"
                    " before the kernel (target >= 5x)"
                    if writer == "arrow"
                    else ""
                )
                + (f"; whole process {t:.1f} s" if writer == "spark" else ""),
            )
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--codec-mib", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--startup-repeat", type=int, default=21)
    ap.add_argument("--only", default="")
    ap.add_argument(
        "--kernel", default="", help="rust,python: the kernel rows once per kernel (KSEG_KERNEL)"
    )
    args = ap.parse_args()
    active = subprocess.run(kseg_cmd("--version"), capture_output=True, text=True).stdout.strip()
    print(f"active: {active}", flush=True)
    kernels = [k.strip() for k in args.kernel.split(",") if k.strip()] or [None]
    only = set(filter(None, args.only.split(",")))

    def want(name: str) -> bool:
        return not only or name in only

    rows = []

    def row(name, secs, mb=None, records=None, ratio_to=None, note=""):
        rate = f"{mb / secs:,.0f} MB/s" if mb else ""
        rec = f"{records / secs / 1e6:.2f} M rec/s" if records else ""
        ratio = f"{secs / ratio_to:.2f}x" if ratio_to else ""
        rows.append((name, f"{secs:.3f}", rate, rec, ratio, note))
        print(f"{name:55s} {secs:7.3f} s {rate:>12s} {rec:>14s} {ratio:>7s} {note}", flush=True)

    if want("startup"):
        DATA.mkdir(exist_ok=True)
        startup_rows(row, args.startup_repeat)
    if only and only <= {"startup"}:
        _table(rows)
        return
    generate(args.mib, args.codec_mib)
    big = DATA / "big-0" / "00000000000000000000.log"
    small = DATA / "small-0" / "00000000000000000000.log"
    size_mb = big.stat().st_size / 1e6
    subprocess.run(["cat", str(big), str(small)], stdout=subprocess.DEVNULL)  # warm the cache
    t_cat, _ = timed(["cat", str(big)], args.repeat)
    row(f"cat ({size_mb:.0f} MB, 16 KiB batches)", t_cat, size_mb)
    t_crc, out = timed([PY, "-c", CRC_WALK, str(big)], args.repeat, stdout=None)
    batches = int(out.split()[0])
    row("anchor: plain crc32c header walk (python)", t_crc, size_mb, note=f"{batches} batches")
    for kern in kernels:
        tag = f" [{kern}]" if kern else ""
        if want("verify"):
            t, _ = timed(kseg_cmd("verify", str(big.parent)), args.repeat, kernel=kern)
            row(
                f"kseg verify (partition: CRCs, offsets, indexes){tag}",
                t,
                size_mb,
                ratio_to=t_crc,
                note=f"{t_crc / t:.2f}x the anchor's throughput (target >= 2x)",
            )
        if want("rebuild"):
            t, _ = timed(kseg_cmd("index", "rebuild", str(big.parent)), args.repeat, kernel=kern)
            row(
                f"kseg index rebuild{tag}",
                t,
                size_mb,
                ratio_to=t_crc,
                note=f"{t_crc / t:.2f}x the anchor's throughput",
            )
        if want("dump"):
            t, _ = timed(
                kseg_cmd("dump", str(big), "--batches-only", "-f", "json"), args.repeat, kernel=kern
            )
            row(f"kseg dump --batches-only -f json{tag}", t, size_mb, ratio_to=t_crc)
    if want("search"):
        search_rows(big, size_mb, args.repeat, row)
    records = None
    if want("dump") or want("kafka-python"):
        t_kp, out = timed([PY, "-c", KAFKA_PYTHON, str(big)], 1, stdout=None)
        records = int(out.strip())
        row("anchor: kafka-python reader (records)", t_kp, size_mb, records)
        for kern in kernels:
            tag = f" [{kern}]" if kern else ""
            t, _ = timed(
                kseg_cmd("dump", str(big), "-f", "json", "--payload", "base64"), 1, kernel=kern
            )
            row(
                f"kseg dump -f json --payload base64 (decode + print){tag}",
                t,
                size_mb,
                records,
                note=f"{t_kp / t:.2f}x kafka-python's rate (target >= 10x)",
            )
    if want("small"):
        small_mb = small.stat().st_size / 1e6
        t_crc_s, out = timed([PY, "-c", CRC_WALK, str(small)], args.repeat, stdout=None)
        row(
            f"anchor: crc32c walk, small batches ({small_mb:.0f} MB)",
            t_crc_s,
            small_mb,
            note=f"{out.split()[0]} batches",
        )
        for kern in kernels:
            tag = f" [{kern}]" if kern else ""
            t, _ = timed(kseg_cmd("verify", str(small.parent)), args.repeat, kernel=kern)
            row(
                f"kseg verify, small batches{tag}",
                t,
                small_mb,
                ratio_to=t_crc_s,
                note=f"{t_crc_s / t:.2f}x the anchor's throughput (target >= 2 GB/s)",
            )
    if want("stats"):
        _stats_rows(big, small, size_mb, kernels, args.repeat, row)
    if want("codecs"):
        for codec in ("gzip", "snappy", "lz4", "zstd"):
            log = DATA / f"codec{codec}-0" / "00000000000000000000.log"
            mb = log.stat().st_size / 1e6
            t_kp, out = timed([PY, "-c", KAFKA_PYTHON, str(log)], 1, stdout=None)
            n = int(out.strip())
            t, _ = timed(kseg_cmd("dump", str(log), "-f", "json", "--payload", "base64"), 1)
            row(
                f"kseg dump json, {codec} ({mb:.0f} MB on disk)",
                t,
                mb,
                n,
                note=f"kafka-python {n / t_kp / 1e6:.2f} M rec/s",
            )
    if want("seek"):
        many = DATA / "many-0"
        segs = len(list(many.glob("*.log")))
        total = sum(p.stat().st_size for p in many.glob("*.log"))
        target = str(TS0 + 1000 * 4 * 60 * 3 // 4)
        t, _ = timed(kseg_cmd("seek", str(many), "--time", target), args.repeat)
        t_py, _ = timed([PY, "-c", "pass"], args.repeat)
        sys.path.insert(0, str(HERE.parent))
        from kseg.seek.seek import seek_time

        t0 = time.perf_counter()
        res = seek_time(many, int(target))
        work = time.perf_counter() - t0
        row(
            f"kseg seek --time ({segs} segments, {total / 1e6:.0f} MB)",
            t,
            note=f"work {work * 1000:.0f} ms after start-up, examined {res.bytes_read / 1e3:.0f} kB of {total / 1e6:.0f} MB (target < 100 ms, < 1 MB); bare python start {t_py * 1000:.0f} ms",
        )
        t_scan, _ = timed(kseg_cmd("dump", str(many), "--batches-only", "-f", "json"), 1)
        row("  vs a full header scan of that partition (dump --batches-only)", t_scan, total / 1e6)
    if want("spark"):
        _spark_rows(big, size_mb, row)
    _table(rows)


def _stats_rows(big: Path, small: Path, size_mb: float, kernels, repeat: int, row) -> None:
    """kseg stats (whole process) next to the bare crc32c walk, wall and CPU seconds, on the big
    segment (16 KiB batches; target >= 0.5x the anchor's throughput) and on small batches
    (per-batch Python work dominates there)."""
    for log, mb, what in (
        (big, size_mb, "16 KiB batches"),
        (small, small.stat().st_size / 1e6, "small batches"),
    ):
        wall_a, cpu_a, _ = timed_cpu([PY, "-c", CRC_WALK, str(log)], repeat)
        row(f"anchor: crc32c walk ({what}, {mb:.0f} MB)", wall_a, mb, note=f"cpu {cpu_a:.3f} s")
        for kern in kernels:
            tag = f" [{kern}]" if kern else ""
            wall, cpu, _ = timed_cpu(kseg_cmd("stats", str(log.parent), "-f", "json"), repeat, kern)
            row(
                f"kseg stats ({what}){tag}",
                wall,
                mb,
                ratio_to=wall_a,
                note=f"{wall_a / wall:.2f}x the anchor's throughput by wall time, "
                f"{cpu_a / cpu:.2f}x by CPU time (cpu {cpu:.3f} s; target >= 0.5x)",
            )


def _table(rows: list) -> None:
    print()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}"
    )
    print("| what | seconds | MB/s | records/s | vs anchor | note |")
    print("|---|---:|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
