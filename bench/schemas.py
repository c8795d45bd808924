"""`--payload schema` (issue 32): what decoding Schema Registry values costs, against anchors
measured in the same run.

    python bench/schemas.py [--records 200000] [--repeat 3]

The input (built once under bench/data/schemas-N/ with kseg's LogWriter; payloads by fastavro's
and protobuf's own encoders): a `_schemas` topic and three topics of N records each, in
batches of 500, uncompressed: Avro (a 6-field record with a decimal, an enum and a union),
Protobuf (4 fields and a nested message), JSON Schema.

Rows (whole `kseg` processes on a warm page cache, the median of --repeat runs):
- `dump -f json --payload base64` of each topic: the anchor (the same records, not decoded);
- `dump -f json --payload schema` of each topic: records/s and the ratio to its anchor;
- in-process, per Avro payload: fastavro's compiled reader alone, kseg's bounded walk alone,
  both with the JSON conversion (AvroSchema.decode), and that without the walk: its share.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.run import DATA, kseg_cmd  # noqa: E402

AVRO = {
    "type": "record", "name": "Payment", "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12,
                                    "scale": 2}},
        {"name": "currency", "type": {"type": "enum", "name": "C", "symbols": ["EUR", "USD"]}},
        {"name": "customer", "type": "string"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "items", "type": {"type": "array", "items": "long"}},
    ],
}  # fmt: skip
PROTO = """syntax = "proto3";
package bench;
message Order {
  int64 id = 1;
  string customer = 2;
  repeated int64 items = 3;
  Address to = 4;
  message Address { string city = 1; string street = 2; }
}
"""


def generate(n: int) -> Path:
    import orjson
    from fastavro import parse_schema, schemaless_writer

    from kseg.format import schema_registry as SR
    from kseg.format.confluent_wire import write_frame
    from kseg.format.record import Record
    from kseg.schemas.protobuf import ProtobufSchema
    from kseg.storage.writer import LogWriter

    root = DATA / f"schemas-{n}"
    if (root / "done").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    with LogWriter(root / "_schemas-0") as w:
        for sid, (subject, stype, text) in enumerate(
            [("avro-value", "AVRO", orjson.dumps(AVRO).decode()),
             ("proto-value", "PROTOBUF", PROTO),
             ("json-value", "JSON", '{"type":"object"}')], 1):  # fmt: skip
            w.append([Record(SR.schema_key(subject, 1),
                             SR.schema_value(subject, 1, sid, text, schema_type=stype))])  # fmt: skip
    parsed = parse_schema(AVRO)
    order = ProtobufSchema(PROTO, []).message_type([0])

    def avro(i):
        out = io.BytesIO()
        schemaless_writer(out, parsed, {
            "id": i, "amount": Decimal(i % 100000) / 100, "currency": "EUR" if i % 3 else "USD",
            "customer": f"customer-{i % 5000}", "note": None if i % 2 else "gift",
            "items": [i, i + 1, i + 2]})  # fmt: skip
        return write_frame(1, out.getvalue())

    def proto(i):
        o = order(id=i, customer=f"customer-{i % 5000}", items=[i, i + 1, i + 2])
        o.to.city, o.to.street = "Springfield", f"{i % 999} Main St"
        return write_frame(2, o.SerializeToString(), [0])

    def json_(i):
        return write_frame(3, orjson.dumps({"id": i, "customer": f"customer-{i % 5000}",
                                            "items": [i, i + 1, i + 2]}))  # fmt: skip

    for topic, make in (("avro", avro), ("proto", proto), ("json", json_)):
        with LogWriter(root / f"{topic}-0") as w:
            for start in range(0, n, 500):
                w.append([Record(b"k%d" % i, make(i), 1_700_000_000_000 + i)
                          for i in range(start, min(n, start + 500))])  # fmt: skip
    (root / "done").write_text("")
    return root


def timed(args: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(kseg_cmd(*args), stdout=subprocess.DEVNULL, check=False)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def in_process(root: Path, n: int) -> list[tuple[str, float]]:
    import orjson
    from fastavro import schemaless_reader

    from kseg.format.confluent_wire import read_frame
    from kseg.schemas.avro import AvroSchema, walk
    from kseg.storage.segment import Segment

    seg = Segment(next((root / "avro-0").glob("*.log")))
    payloads = [rec.value for b in seg.batches() for rec in b.records()][: min(n, 50_000)]
    schema = AvroSchema(orjson.dumps(AVRO).decode(), [])
    start = read_frame(payloads[0]).start
    rows = []
    t = time.perf_counter()
    for p in payloads:
        schemaless_reader(io.BytesIO(p[start:]), schema.parsed, None)
    rows.append(("fastavro's reader alone", len(payloads) / (time.perf_counter() - t)))
    t = time.perf_counter()
    for p in payloads:
        walk(p, start, schema.parsed, schema.named)
    rows.append(("kseg's bounded walk alone", len(payloads) / (time.perf_counter() - t)))
    t = time.perf_counter()
    for p in payloads:
        schema.decode(p, start)
    rows.append(("AvroSchema.decode (walk + reader + JSON types)", _rate(payloads, t)))
    # what the walk costs: the same decode without it (kseg always walks: fastavro alone reads
    # negative enum and union indexes from a list's end, and makes 2^n values from no byte)
    from kseg.schemas.avro import plain

    t = time.perf_counter()
    for p in payloads:
        plain(schemaless_reader(io.BytesIO(p[start:]), schema.parsed, None))
    rows.append(("the same without the walk (not what kseg does)", _rate(payloads, t)))
    return rows


def _rate(items: list, since: float) -> float:
    return len(items) / (time.perf_counter() - since)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    root = generate(a.records)
    print(f"load average {os.getloadavg()[0]:.2f}; {a.records} records per topic")
    print(f"{'row':<52} {'s':>7} {'records/s':>11} {'vs anchor':>9}")
    for topic in ("avro", "proto", "json"):
        pdir = str(root / f"{topic}-0")
        anchor = timed(["dump", pdir, "-f", "json", "--payload", "base64"], a.repeat)
        decoded = timed(["dump", pdir, "-f", "json", "--payload", "schema"], a.repeat)
        print(f"{'dump -f json --payload base64 ' + topic + ' (anchor)':<52} {anchor:7.2f} "
              f"{a.records / anchor:11,.0f} {1:9.2f}")  # fmt: skip
        print(f"{'dump -f json --payload schema ' + topic:<52} {decoded:7.2f} "
              f"{a.records / decoded:11,.0f} {decoded / anchor:9.2f}")  # fmt: skip
    for name, rate in in_process(root, a.records):
        print(f"{name:<52} {'':>7} {rate:11,.0f}")


if __name__ == "__main__":
    main()
