"""Each entry is decompressed and CRC-checked once per command: counted, so a regression fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kseg.format import batch as v2
from kseg.format import compression
from kseg.format.batch import HEADER_SIZE
from kseg.format.legacy import LegacyEntry
from kseg.format.log import walk_headers
from kseg.format.magic import V2
from kseg.storage.tree import segment_logs


def _counting(monkeypatch, module, name: str) -> list:
    calls: list = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _headers(log: Path) -> list[tuple]:
    return list(walk_headers(log.read_bytes()))


def _dump(path: Path, **opts) -> list[dict]:
    from kseg.dump.options import DumpOptions
    from kseg.dump.plan import dump_paths

    return list(dump_paths([path], DumpOptions(**opts)))


@pytest.mark.parametrize("payload", ["auto", "none", "base64"])
def test_dump_decompresses_each_compressed_entry_once(tree, monkeypatch, payload):
    pdir = tree / "upgrade-0"
    heads = [h for log in segment_logs(pdir) for h in _headers(log)]
    compressed = [h for h in heads if h[7] & 0x07]
    wrappers = [h for h in compressed if h[2] < V2.magic]
    assert len(wrappers) >= 4 and len(compressed) > len(wrappers)  # both kinds are there
    calls = _counting(monkeypatch, compression, "decompress")
    evs = _dump(pdir, payload=payload)
    assert len(calls) == len(compressed)
    records = [e for e in evs if e["type"] == "record"]
    batches = [e for e in evs if e["type"] == "batch"]
    # the wrappers' counts and first offsets came from that one decompression
    assert sum(b["count"] for b in batches) == len(records)
    assert all(b["base_offset"] is not None for b in batches)


def test_dump_with_a_tighter_limit_still_reports_it(tree, monkeypatch):
    """A wrapper decompressed for its count under the default limit is not reused for records
    when the caller's limit is lower than its size: the limit's error still shows."""
    evs = _dump(tree / "upgrade-0", max_decompressed=100)
    errors = [e for e in evs if e["type"] == "error"]
    assert any("limit" in e["message"] for e in errors)


def test_dump_computes_a_bad_v2_crc_once(tree, tmp_path, monkeypatch):
    pdir = tmp_path / "orders-0"
    shutil.copytree(tree / "orders-0", pdir)
    log = segment_logs(pdir)[0]
    heads = _headers(log)
    bad = heads[1][0]
    with open(log, "r+b") as f:  # one record byte of the second batch: its CRC fails
        f.seek(bad + HEADER_SIZE + 1)
        b = f.read(1)
        f.seek(bad + HEADER_SIZE + 1)
        f.write(bytes([b[0] ^ 0x55]))
    calls = _counting(monkeypatch, v2, "crc32c")
    evs = _dump(log, batches_only=True)
    assert len(calls) == len(heads)  # one CRC-32C per batch, the bad one included
    (err,) = [e for e in evs if e["type"] == "error"]
    assert err["position"] == bad and err["stored"] != err["computed"]


def test_spark_batch_rows_decompress_each_entry_once(tree, monkeypatch):
    pytest.importorskip("pyarrow")
    from kseg.spark.arrow import batch_rows
    from kseg.spark.planning import Task

    log = segment_logs(tree / "upgrade-0")[0]
    heads = _headers(log)
    compressed = [h for h in heads if h[7] & 0x07]
    assert any(h[2] < V2.magic for h in compressed)
    calls = _counting(monkeypatch, compression, "decompress")
    task = Task(str(log), "upgrade", 0, 0, 0, log.stat().st_size)
    rows = [r for b in batch_rows(task, compute_uncompressed=True) for r in b.to_pylist()]
    assert len(calls) == len(compressed)
    assert len(rows) == len(heads)
    monkeypatch.undo()
    data = log.read_bytes()
    for r in rows:  # the size the one decompression gave: the value's bytes replaced by it
        if r["compression"] != "none" and r["magic"] < V2.magic:
            entry = LegacyEntry(data, r["position"])
            _, value = entry.key_value()
            inner = compression.decompress(entry.compression_id, value)
            assert r["uncompressed_size"] == r["size"] - len(value) + len(inner)


def test_spark_record_batches_decompress_each_entry_once(tree, monkeypatch):
    pytest.importorskip("pyarrow")
    from kseg.spark.arrow import record_batches
    from kseg.spark.planning import Task

    log = segment_logs(tree / "upgrade-0")[0]
    heads = _headers(log)
    compressed = [h for h in heads if h[7] & 0x07]
    calls = _counting(monkeypatch, compression, "decompress")
    task = Task(str(log), "upgrade", 0, 0, 0, log.stat().st_size)
    rows = sum(b.num_rows for b in record_batches(task, segment_columns=True))
    from kseg import kernel

    if kernel.active() == kernel.RUST:  # v2 batches: once, by the kernel's codecs (issue 33)
        compressed = [h for h in compressed if h[2] != 2]
        assert len(compressed) < len([h for h in heads if h[7] & 0x07])
    assert len(calls) == len(compressed)
    assert rows == len([e for e in _dump(log, payload="none") if e["type"] == "record"]) > 0
