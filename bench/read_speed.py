"""Read speed of the format core on a large generated segment (whole-file walks, warm cache).

    python bench/read_speed.py [--mib 256] [--dir bench/data]

Generates (once) a v2 segment of ~16 KiB uncompressed batches of ~250-byte records with
LogWriter, then times: batch headers + CRC (what verify does), and full record decoding.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import kseg
from kseg.format.log import iter_entries
from kseg.storage.mapped import mapped


def generate(pdir: Path, mib: int) -> Path:
    log = pdir / "00000000000000000000.log"
    if log.exists() and log.stat().st_size >= mib << 20:
        return log
    import shutil

    shutil.rmtree(pdir, ignore_errors=True)
    value = os.urandom(96).hex().encode()[:230]
    recs = [
        kseg.Record(key=b"key-%06d" % i, value=value, timestamp=1_700_000_000_000 + i)
        for i in range(64)
    ]
    with kseg.LogWriter(pdir, segment_bytes=(mib + 64) << 20, clock=lambda: 1_700_000_000_000) as w:
        size = 0
        while size < mib << 20:
            info = w.append(recs)
            size = info.position + info.size
    return log


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--dir", type=Path, default=Path(__file__).parent / "data")
    args = ap.parse_args()
    log = generate(args.dir / "bench-0", args.mib)
    size = log.stat().st_size
    with mapped(log) as buf:
        t = time.perf_counter()
        n = sum(1 for _ in iter_entries(buf, validate=True))
        dt_crc = time.perf_counter() - t
        t = time.perf_counter()
        recs = 0
        for b in iter_entries(buf):
            for _ in b.records():
                recs += 1
        dt_rec = time.perf_counter() - t
    mb = size / 1e6
    print(f"segment: {mb:.0f} MB, {n} batches, {recs} records")
    print(f"batch headers + CRC-32C: {dt_crc:.3f} s  {mb / dt_crc:,.0f} MB/s")
    print(
        f"full record decode:      {dt_rec:.3f} s  {mb / dt_rec:,.0f} MB/s  {recs / dt_rec / 1e6:.2f} M records/s"
    )


if __name__ == "__main__":
    main()
