"""The compiled kernel vs the pure-Python core, in one process, on the same inputs.

    python bench/kernel.py [--mib 64] [--json-mib 32] [--arrow-mib 32] [--repeat 3]

Inputs (built once under bench/data/ with kseg's LogWriter, deterministic, the records of
bench/run.py): ``kbig`` one segment of ~16 KiB uncompressed batches (60 records of ~250 bytes),
``ksmall`` one segment of 1-4-record batches. Each timing is the best of --repeat runs of the
loop alone (CPU seconds of this process, warm page cache, no start-up), with its anchors measured
in the same run: a bare Python crc32c header walk, and kafka-python's decode-only reader.

The Spark decoder (kseg.spark.arrow.record_batches, records -> Arrow, the whole task: map, walk,
CRCs, records, RecordBatches) runs on one uncompressed segment of 16 KiB batches (``kbig`` at
--arrow-mib) and on one segment per codec (``kz-<codec>``, the same records, 60 a batch), with
KSEG_KERNEL=python and =rust; for the compressed ones the kernel both with the core's codecs
(kseg.spark.kernel_arrow.KERNEL_CODECS off: before issue 33) and with its own (codecs.rs), and
each codec layer alone on the same batches. ``--only arrow`` runs only these rows.
"""

from __future__ import annotations

import argparse
import mmap
import os
import platform
import struct
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from run import DATA, TS0, _records  # noqa: E402  (bench/run.py: the same records)

_V2 = struct.Struct(">qiibI")


def generate(mib: int) -> tuple[Path, Path]:
    import kseg

    out = []
    for name, sizes in (("kbig", lambda i: 60), ("ksmall", lambda i: 1 + i % 4)):
        pdir = DATA / f"{name}-{mib}-0"
        log = pdir / "00000000000000000000.log"
        out.append(log)
        if (pdir / ".done").exists():
            continue
        import shutil

        shutil.rmtree(pdir, ignore_errors=True)
        target = mib << 20
        with kseg.LogWriter(pdir, clock=lambda: TS0, segment_bytes=target + (64 << 20)) as w:
            i = size = 0
            while size < target:
                n = sizes(i)
                info = w.append(_records(n, i))
                i += n
                size = info.position + info.size
        (pdir / ".done").write_text("ok")
    return out[0], out[1]


CODECS = ("gzip", "snappy", "lz4", "zstd")


def generate_compressed(mib: int) -> dict[str, Path]:
    """One segment per codec of about ``mib`` MiB of records before compression."""
    import shutil

    import kseg

    out = {}
    for codec in CODECS:
        pdir = DATA / f"kz-{codec}-{mib}-0"
        out[codec] = pdir / "00000000000000000000.log"
        if (pdir / ".done").exists():
            continue
        shutil.rmtree(pdir, ignore_errors=True)
        with kseg.LogWriter(pdir, compression=codec, clock=lambda: TS0) as w:
            i = 0
            while i * 250 < mib << 20:
                w.append(_records(60, i))
                i += 60
        (pdir / ".done").write_text("ok")
    return out


def arrow_task(path: Path):
    from kseg.spark.planning import Task

    return Task(str(path), "bench", 0, 0, 0, path.stat().st_size)


def spark_decode(task, choice: str, **options) -> int:
    """Rows of kseg.spark.arrow.record_batches(task) with KSEG_KERNEL=choice."""
    from kseg import kernel
    from kseg.spark.arrow import record_batches

    os.environ["KSEG_KERNEL"] = choice
    kernel.reset()
    try:
        return sum(b.num_rows for b in record_batches(task, **options))
    finally:
        os.environ["KSEG_KERNEL"] = "rust"
        kernel.reset()


def records_alone(path: Path, **options) -> int:
    """The kernel's Records over an mmap of the segment, RecordBatches assembled as
    kseg.spark.kernel_arrow.spark_records does: the decoder without the file layer (kseg.storage.mapped's
    reads) and without record_batches around it."""
    from kseg.spark import kernel_arrow
    from kseg.spark.arrow import ROWS_PER_BATCH, records_schema

    decode = kernel_arrow.spark_records(
        records_schema(options.get("include_headers", False), options.get("segment_columns", False)),
        topic="bench", partition=0, path=str(path), include_control=False, from_time=None,
        to_time=None, from_offset=None, to_offset=None, rows=ROWS_PER_BATCH,
        include_headers=options.get("include_headers", False),
        segment_columns=options.get("segment_columns", False),
    )  # fmt: skip
    n = 0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for item, shift in decode(mm, 0, len(mm), 0):
            assert shift is None, "bench input: every batch is the kernel's"
            n += sum(len(b) for b in item)
    return n


def decompress_only(path: Path) -> int:
    """The core's bounded decompression of every batch of a segment, nothing else."""
    from kseg.format import compression as codecs
    from kseg.format.batch import ATTR_COMPRESSION, HEADER_SIZE
    from kseg.format.log import walk_headers

    n = 0
    with (
        open(path, "rb") as f,
        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
        memoryview(mm) as mv,
    ):
        for r in walk_headers(mm):
            piece = mv[r[0] + HEADER_SIZE : r[0] + r[1]]
            n += len(codecs.decompress(r[7] & ATTR_COMPRESSION, piece))
            piece.release()
    return n


def kernel_decompress_only(path: Path) -> int:
    """The kernel's codecs (kernel/src/codecs.rs) on every batch of a segment, nothing else."""
    from kseg import _kernel as k
    from kseg.format import compression as codecs
    from kseg.format.batch import ATTR_COMPRESSION, HEADER_SIZE
    from kseg.format.log import walk_headers

    n = 0
    limit = codecs.DEFAULT_MAX_DECOMPRESSED
    with (
        open(path, "rb") as f,
        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
        memoryview(mm) as mv,
    ):
        for r in walk_headers(mm):
            piece = mv[r[0] + HEADER_SIZE : r[0] + r[1]]
            n += len(k.decompress(r[7] & ATTR_COMPRESSION, piece, limit))
            piece.release()
    return n


def spark_decode_core_codecs(task, **options) -> int:
    """spark_decode(task, "rust") with every compressed batch decompressed by the core's codecs
    (kseg.spark.kernel_arrow.KERNEL_CODECS off): the kernel path before issue 33."""
    from kseg.spark import kernel_arrow

    kernel_arrow.KERNEL_CODECS = False
    try:
        return spark_decode(task, "rust", **options)
    finally:
        kernel_arrow.KERNEL_CODECS = True


def arrow_rows(args, row) -> None:
    """The Spark decoder rows: uncompressed, and per codec the Python decoder, the kernel with
    the core's codecs (before) and with its own (after), and each codec layer alone."""
    arrow_big, _ = generate(args.arrow_mib)
    for label, path in [("16 KiB batches, uncompressed", arrow_big)] + [
        (f"{codec}, 60-record batches", p)
        for codec, p in generate_compressed(args.arrow_mib).items()
    ]:
        task = arrow_task(path)
        mb = path.stat().st_size / 1e6
        compressed = "uncompressed" not in label
        spark_decode(task, "rust")  # imports, first-call costs
        for what, opts in (
            ("", {}),
            (" + headers + segment columns", {"include_headers": True, "segment_columns": True}),
        ):
            t_py, recs = best(lambda t=task, o=opts: spark_decode(t, "python", **o), args.repeat)
            row(f"Spark decoder (python){what}, {label} ({mb:.0f} MB)", t_py, mb, recs)
            if compressed:
                t_b, n_b = best(
                    lambda t=task, o=opts: spark_decode_core_codecs(t, **o), args.repeat
                )
                assert n_b == recs, (n_b, recs)
                row(
                    f"Spark decoder (rust, the core's codecs: before){what}, {label}",
                    t_b,
                    mb,
                    recs,
                    note=f"{t_py / t_b:.1f}x the Python decoder",
                )
            t_k, n_k = best(lambda t=task, o=opts: spark_decode(t, "rust", **o), args.repeat)
            assert n_k == recs, (n_k, recs)
            target = "3 M rec/s" if compressed else "5 M rec/s"
            note = f"{t_py / t_k:.1f}x the Python decoder"
            if compressed:
                note += f", {t_b / t_k:.1f}x before"
            row(
                f"Spark decoder (rust{', kernel codecs: after' if compressed else ''}){what}, "
                f"{label}",
                t_k,
                mb,
                recs,
                note=f"{note} (target >= {target})",
            )
            if not compressed:
                t_r, n_r = best(lambda p=path, o=opts: records_alone(p, **o), args.repeat)
                assert n_r == recs, (n_r, recs)
                row(f"  of which: kernel decoder alone on an mmap{what}", t_r, mb, recs)
        if compressed:
            t_d, n_d = best(lambda p=path: decompress_only(p), args.repeat)
            row(f"  core bounded decompression alone, {label}", t_d, mb, recs)
            t_kd, n_kd = best(lambda p=path: kernel_decompress_only(p), args.repeat)
            assert n_kd == n_d, (n_kd, n_d)
            row(
                f"  kernel bounded decompression alone, {label}",
                t_kd,
                mb,
                recs,
                note=f"{t_d / t_kd:.1f}x the core's codecs (per-batch Python calls in both)",
            )


def best(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.process_time()
        result = fn()
        times.append(time.process_time() - t)
    return min(times), result


def crc_walk(mm) -> int:
    """The anchor: a bare Python header walk with the C crc32c package (no checks at all)."""
    from crc32c import crc32c

    mv = memoryview(mm)
    unpack = _V2.unpack_from
    pos = n = 0
    size = len(mm)
    while pos < size:
        _, length, _, _, crc = unpack(mm, pos)
        end = pos + length + 12
        if crc32c(mv[pos + 21 : end]) != crc:
            raise SystemExit("bad crc in bench input")
        pos = end
        n += 1
    mv.release()
    return n


def core_walk(mm) -> int:
    from kseg.format.log import walk_headers

    return sum(1 for _ in walk_headers(mm))


def kernel_walk(mm) -> int:
    from kseg.storage import kernel_walk

    return sum(len(b) for b in kernel_walk.walk_blocks(mm)) // kernel_walk.ROW.size


def json_batches(mm, limit: int) -> tuple[list[int], int]:
    """Positions of the batches wholly within the first ``limit`` bytes, and where they end."""
    from kseg.format.log import walk_headers

    out, end = [], 0
    for r in walk_headers(mm):
        if r[0] + r[1] > limit:
            break
        out.append(r[0])
        end = r[0] + r[1]
    return out, end


def core_json(mm, positions, name: str) -> int:
    from kseg.format.batch import RecordBatch
    from kseg.render.dump_json import record_json_maker

    make = record_json_maker(name, "base64")
    n = 0
    for pos in positions:
        n += len(b"".join([make(t) for t in RecordBatch(mm, pos).record_tuples()]))
    return n


def kernel_json(mm, positions, name: str) -> int:
    import orjson

    from kseg.dump import kernel_json

    fj = orjson.dumps(name)
    n = 0
    for pos in positions:
        n += len(kernel_json.batch_json(mm, pos, fj, "base64"))
    return n


def kafka_python(data: bytes) -> int:
    from kafka.record import MemoryRecords

    mr = MemoryRecords(data)
    n = 0
    while mr.has_next():
        for _ in mr.next_batch():
            n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--json-mib", type=int, default=32)
    ap.add_argument("--arrow-mib", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--only", default="walk,json,arrow", help="comma-separated parts: walk, json, arrow"
    )
    args = ap.parse_args()
    parts = set(args.only.split(","))
    os.environ["KSEG_KERNEL"] = "rust"
    from kseg import kernel

    kernel.reset()
    print(kernel.describe(), file=sys.stderr)
    rows = []

    def row(name, secs, mb=None, recs=None, note=""):
        rate = f"{mb / secs / 1e3:.2f} GB/s" if mb else ""
        rr = f"{recs / secs / 1e6:.2f} M rec/s" if recs else ""
        rows.append((name, f"{secs:.3f}", rate, rr, note))
        print(f"{name:58s} {secs:7.3f} s {rate:>11s} {rr:>14s} {note}", flush=True)

    big, small = generate(args.mib) if parts & {"walk", "json"} else (None, None)
    for label, path in (("16 KiB batches", big), ("1-4-record batches", small)):
        if "walk" not in parts:
            break
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            mb = len(mm) / 1e6
            bytes(mm)  # warm the page cache
            t_crc, n = best(lambda mm=mm: crc_walk(mm), args.repeat)
            row(
                f"anchor: bare Python crc32c walk, {label} ({mb:.0f} MB)",
                t_crc,
                mb,
                note=f"{n} batches",
            )
            t_py, n_py = best(lambda mm=mm: core_walk(mm), args.repeat)
            row(f"core walk_headers (python), {label}", t_py, mb)
            t_k, n_k = best(lambda mm=mm: kernel_walk(mm), args.repeat)
            assert n_k == n_py == n, (n_k, n_py, n)
            row(
                f"kernel walk_blocks (rust), {label}",
                t_k,
                mb,
                note=f"{t_py / t_k:.1f}x the core walk, {t_crc / t_k:.1f}x the bare crc32c walk",
            )

    if "json" in parts:
        with open(big, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            positions, end = json_batches(mm, args.json_mib << 20)
            data = bytes(mm[:end])
            mb = len(data) / 1e6
            t_kp, recs = best(lambda: kafka_python(data), 1)
            row(f"anchor: kafka-python decode only, 16 KiB batches ({mb:.0f} MB)", t_kp, mb, recs)
            name = str(big)
            t_py, n_py = best(lambda: core_json(mm, positions, name), args.repeat)
            row("core records -> JSON lines, --payload base64 (python)", t_py, mb, recs)
            t_k, n_k = best(lambda: kernel_json(mm, positions, name), args.repeat)
            assert n_k == n_py, (n_k, n_py)
            row(
                "kernel records -> JSON lines, --payload base64 (rust)",
                t_k,
                mb,
                recs,
                note=f"{t_py / t_k:.1f}x the core, {t_kp / t_k:.1f}x kafka-python (target >= 10x)",
            )

    if "arrow" in parts:
        arrow_rows(args, row)

    print()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.platform()}; {kernel.describe()}"
    )
    print("| what | CPU s | GB/s | records/s | note |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
