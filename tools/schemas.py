"""The JSON Schema of every JSON object kind kseg prints (`-f json`: JSON Lines, a `type` on
every object), in docs/schemas/<type>.json, and the corpus of commands they are checked on.

    python tools/schemas.py          # run the corpus, write the schemas kseg's output has now
    python tools/schemas.py --check  # exit 1 where an output breaks its schema (or has none)

A schema fixes an object's fields (each required unless the corpus shows it may be left out),
their JSON types, and nothing else (`additionalProperties: false`): a field added, dropped,
renamed or given another type fails tests/docs/test_schemas.py until the schema (the contract,
docs/conventions.md) is changed with it, on purpose. Nested objects and arrays are typed, not
described field by field. Written from what the corpus shows, then kept by hand: widen a type
the corpus happens not to show (a field it only ever saw null) rather than let it narrow.

The corpus: every command on the demo tree, a damaged copy (before and after a repair, a
salvage, a restore), the transactions fixture, an unclean election's replicas, a Kafka 0.7 log
dir and, where they are beside the project, the real brokers' data dirs (shared/real)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "docs" / "schemas"
REAL = ROOT.parent / "shared" / "real"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _kseg() -> list[str]:
    script = Path(sys.executable).with_name("kseg")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kseg"]


def _inputs(work: Path) -> dict[str, Path]:
    """The corpus's data dirs, written under ``work``."""
    from kseg.fixtures import replicas, transactions
    from kseg.fixtures.demo import write_demo
    from kseg.fixtures.kafka07 import build_kafka07_tree

    d = {"demo": work / "demo"}
    write_demo(d["demo"])
    d["damaged"] = work / "lib" / "damaged"
    d["damaged"].parent.mkdir()
    shutil.copytree(d["demo"], d["damaged"], ignore=shutil.ignore_patterns("kafka07-logs"))
    with open(d["damaged"] / "orders-0" / "00000000000000000054.log", "r+b") as f:
        f.seek(300)
        f.write(b"\xff")  # a CRC mismatch inside a batch
    d["txn"] = work / "txn"
    transactions.build_root(d["txn"])
    d["replicas"] = work / "replicas"
    replicas.build(d["replicas"], "unclean")
    d["k07"] = work / "k07"
    build_kafka07_tree(d["k07"])
    from kseg.fixtures.schemas import write_bad_registry

    d["badschemas"] = work / "badschemas" / "_schemas-0"
    write_bad_registry(d["badschemas"])
    return d


def _commands(d: dict[str, Path], work: Path) -> Iterator[tuple[str, ...]]:
    demo, damaged = str(d["demo"]), str(d["damaged"])
    orders = f"{demo}/orders-0"
    yield ("dump", orders, "--limit", "40")
    yield ("dump", orders, "--batches-only")
    yield ("dump", demo, "--topic", "^orders$", "--key-eq", "key-1", "--count")
    yield ("dump", demo, "--topic", "^orders$", "--key-eq", "key-1", "--limit", "3")
    yield ("dump", f"{demo}/__consumer_offsets-0")
    yield ("dump", f"{demo}/txn-0", "--isolation", "read_committed")
    yield ("dump", f"{demo}/upgrade-0")
    yield ("dump", f"{demo}/upgrade-0", "--batches-only")  # legacy wrappers: offsets unknown
    for name in ("index", "timeindex", "txnindex", "snapshot"):
        for f in sorted(Path(demo).glob(f"*/*.{name}"))[:2]:
            yield ("dump", str(f))
    for f in sorted(Path(demo).glob("*checkpoint")) + [Path(demo, "meta.properties")]:
        yield ("dump", str(f))
    yield ("dump", f"{orders}/leader-epoch-checkpoint")
    yield ("dump", damaged, "--topic", "^orders$")
    yield ("dump", damaged, "--topic", "^orders$", "--resync")
    yield ("dump", str(d["k07"]))
    yield ("verify", demo)
    yield ("verify", damaged)
    yield ("verify", damaged, "--repair", "--dry-run")
    yield ("seek", demo, "--time", "2023-11-14T22:13:40Z")
    yield ("seek", demo, "--offset", "5")
    yield ("offsets", demo, "--list")
    yield ("offsets", demo, "--group", "orders-app", "--lag")
    yield ("txn", str(d["txn"]), "--now", "2023-11-14T23:30:00Z", "--producers")
    yield ("replicas", str(d["replicas"]))
    yield ("stats", demo)
    yield ("stats", demo, "--by", "hour")
    yield ("index", "check", demo)
    yield ("salvage", damaged, "--dry-run")
    yield ("verify", str(d["k07"]))
    framed = "^(payments|invoices|shipments|clicks)$"
    yield ("dump", demo, "--topic", framed, "--payload", "schema")
    yield ("dump", demo, "--topic", "^payments$", "--payload", "schema", "--skip-record-metadata")
    yield ("schemas", demo)
    yield ("schemas", str(d["badschemas"]))
    yield ("dump", demo, "--topic", "^payments$", "--payload", "schema", "--schemas",
           str(d["badschemas"]))  # fmt: skip
    if REAL.is_dir():
        roots = [*REAL.glob("*/data"), *REAL.glob("*/kafka-logs"), *REAL.glob("*/tmp/kafka-logs")]
        for data in sorted(roots):
            yield ("verify", str(data))
            yield ("dump", str(data), "--limit", "200")
            if any(data.glob("__consumer_offsets-*")):
                yield ("offsets", str(data), "--list")
            yield ("txn", str(data), "--now", "now")
            for internal in (
                "__cluster_metadata-0",
                "__consumer_offsets-0",
                "__transaction_state-0",
            ):
                if (data / internal).is_dir():
                    yield ("dump", str(data / internal), "--limit", "300")
            for f in [*data.glob("quorum-state"), *data.glob("*/quorum-state")][:1]:
                yield ("dump", str(f))
            for f in sorted(data.glob("__cluster_metadata-0/*.checkpoint"))[:1]:
                yield ("dump", str(f))
    # what writes, last, in order: a repair and its undoing, a salvage, an export, a rebuild
    yield ("verify", damaged, "--repair")
    runs = d["damaged"].parent / "kseg-quarantine" / "damaged"
    yield ("restore", "@newest", str(runs))
    yield ("salvage", damaged)
    yield ("salvage", damaged, "--to", str(work / "spare"))
    yield ("replicas", str(d["replicas"]), "--export-lost", str(work / "lost"))
    yield ("index", "rebuild", f"{damaged}/orders-1")


def corpus(work: Path | None = None) -> Iterator[tuple[tuple[str, ...], int, list[dict]]]:
    """(argv, exit status, JSON objects) of each corpus command, run as a whole process."""
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="kseg-schemas-")) if own else work
    try:
        d = _inputs(work)
        for argv in _commands(d, work):
            if argv[:2] == ("restore", "@newest"):
                argv = ("restore", str(sorted(Path(argv[2]).glob("*Z"))[-1]))
            proc = subprocess.run(
                [*_kseg(), *argv, "-f", "json"], capture_output=True, cwd=work, timeout=300
            )
            objects = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
            yield argv, proc.returncode, objects
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def _json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def infer(objects: list[dict]) -> dict[str, dict]:
    """A schema per `type` from the objects seen: fields, their types, which are required."""
    seen: dict[str, list[dict]] = {}
    for obj in objects:
        seen.setdefault(obj.get("type", "?"), []).append(obj)
    out = {}
    for kind, objs in sorted(seen.items()):
        fields: dict[str, set[str]] = {}
        for obj in objs:
            for key, value in obj.items():
                fields.setdefault(key, set()).add(_json_type(value))
        required = sorted(k for k in fields if all(k in o for o in objs))
        props = {}
        for key in sorted(fields):
            types = sorted(fields[key])
            if "integer" in types and "number" in types:
                types.remove("integer")
            props[key] = (
                {"const": kind}
                if key == "type"
                else {"type": types[0] if len(types) == 1 else types}
            )
        out[kind] = {
            "$schema": DIALECT,
            "$id": f"https://kseg.invalid/schemas/{kind}.json",
            "title": kind,
            "type": "object",
            "required": required,
            "properties": props,
            "additionalProperties": False,
        }
    return out


# What the corpus only ever shows as null, typed as the code writes it (kind -> field -> types)
WIDEN = {
    "batch": {"delete_horizon_ms": ["integer", "null"]},
    "group": {"protocol": ["null", "string"]},
    "index_check": {"log_error": ["null", "string"]},
    "index_rebuild": {"error": ["null", "string"]},
    "offset": {"expire_timestamp": ["integer", "null"], "expired_reason": ["null", "string"]},
    "repair_action": {"new_hex": ["null", "string"], "old_hex": ["null", "string"]},
    "replica": {"cleaned_to": ["integer", "null"], "damage": ["null", "string"]},
    "seek": {"error": ["null", "string"]},
    "seek_offset": {"error": ["null", "string"]},
    # --payload schema: a decoded key or value is any JSON value
    "record": {
        **dict.fromkeys(
            ("key", "value"), ["array", "boolean", "integer", "null", "number", "object", "string"]
        ),
        **dict.fromkeys(("key_schema_id", "value_schema_id"), ["integer", "null"]),
    },
    # a schema from an export has no offset in _schemas; a finding before any frame no id
    "schema": {"offset": ["integer", "null"]},
    "schema_finding": {
        "schema_id": ["integer", "null"],
        "field": ["null", "string"],
        "offset": ["integer", "null"],
    },
    "schema_problem": {"offset": ["integer", "null"], "file": ["null", "string"]},
    **{
        k: {"compression_ratio": ["null", "number"], "uncompressed_bytes": ["integer", "null"]}
        for k in ("hour_stats", "partition_stats", "root_stats", "topic_stats")
    },
}


# Every object from a partition names it, null where a file's directory is not named like one
# (docs/conventions.md)
EVERYWHERE = {"topic": ["null", "string"], "partition": ["integer", "null"]}


def _widened(kind: str, schema: dict) -> dict:
    for key, types in {**EVERYWHERE, **WIDEN.get(kind, {})}.items():
        if key in schema["properties"]:
            schema["properties"][key] = {"type": types}
    return schema


def load() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(SCHEMAS.glob("*.json"))}


def problems(objects: list[dict], schemas: dict[str, dict]) -> list[str]:
    """Each object that has no schema or breaks its own, in one line."""
    from jsonschema import Draft202012Validator

    validators = {k: Draft202012Validator(s) for k, s in schemas.items()}
    out = []
    for obj in objects:
        kind = obj.get("type")
        if kind not in validators:
            out.append(f"{kind!r}: no schema in docs/schemas ({json.dumps(obj)[:200]})")
            continue
        for err in validators[kind].iter_errors(obj):
            out.append(f"{kind}: {err.message} at {list(err.absolute_path)}")
    return out


PAGE = ROOT / "docs" / "json.md"


def page(schemas: dict[str, dict], printed_by: dict[str, set[str]]) -> str:
    """docs/json.md: every kind, the commands that print it, its fields and their types."""
    out = [
        "# JSON object kinds",
        "",
        "`-f json` prints JSON Lines: one object per line, its kind in `type`. Each kind's fields",
        "and their JSON types are fixed by a JSON Schema (draft 2020-12) in `docs/schemas/`; the",
        "tests run every command on a corpus of data dirs and validate each object against its",
        "kind's schema (`tests/docs/test_schemas.py`), so a field is not added, dropped, renamed or",
        "retyped without the schema changing with it. A field marked optional may be left out;",
        "every other is always there, `null` where the type allows it. Written by",
        "`python tools/schemas.py`.",
        "",
    ]
    for kind, schema in schemas.items():
        commands = ", ".join(f"`kseg {c}`" for c in sorted(printed_by.get(kind, ()))) or "-"
        out += [
            f"## `{kind}`",
            "",
            f"Printed by {commands}. Schema: [{kind}.json](schemas/{kind}.json).",
        ]
        out += ["", "| field | type | |", "|---|---|---|"]
        for key, spec in schema["properties"].items():
            if "const" in spec:
                kind_text = f'`"{spec["const"]}"`'
            else:
                t = spec.get("type", "any")
                kind_text = " or ".join(t) if isinstance(t, list) else t
            note = "" if key in schema["required"] else "optional"
            out.append(f"| `{key}` | {kind_text} | {note} |")
        out.append("")
    return "\n".join(out)


def printed_by(runs) -> dict[str, set[str]]:
    """kind -> the commands (`dump`, `index check`, ...) of the corpus that printed it."""
    out: dict[str, set[str]] = {}
    for argv, _, objects in runs:
        name = " ".join(argv[:2]) if argv[0] in ("index",) else argv[0]
        for obj in objects:
            out.setdefault(obj.get("type"), set()).add(name)
    return out


def _write(schemas: dict[str, dict]) -> None:
    SCHEMAS.mkdir(parents=True, exist_ok=True)
    for kind, schema in schemas.items():
        (SCHEMAS / f"{kind}.json").write_text(json.dumps(schema, indent=2) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    runs = list(corpus())
    objects = [o for _, _, objs in runs for o in objs]
    if args.check:
        found = problems(objects, load())
        if PAGE.read_text() != page(load(), printed_by(runs)):
            found.append(f"{PAGE.relative_to(ROOT)}: not what the schemas say")
        for line in sorted(set(found)):
            print(line)
        return 1 if found else 0
    inferred = infer(objects)
    kept = load()
    for kind, schema in inferred.items():
        if kind in kept:  # kept by hand: only widened, never narrowed
            schema = _merge(kept[kind], schema)
        inferred[kind] = _widened(kind, schema)
    _write(inferred)
    PAGE.write_text(page(load(), printed_by(runs)))
    print(f"{len(inferred)} kinds in {SCHEMAS.relative_to(ROOT)}, {PAGE.relative_to(ROOT)}")
    return 0


def _merge(old: dict, new: dict) -> dict:
    """``old`` widened by what ``new`` saw: more fields, more types, fewer required."""
    props = dict(old["properties"])
    for key, spec in new["properties"].items():
        if key not in props:
            props[key] = spec
        elif "type" in spec and "type" in props[key]:
            a, b = props[key]["type"], spec["type"]
            types = sorted(
                {*([a] if isinstance(a, str) else a), *([b] if isinstance(b, str) else b)}
            )
            props[key] = {**props[key], "type": types[0] if len(types) == 1 else types}
    required = sorted(set(old["required"]) & set(new["required"]))
    return {**old, "properties": dict(sorted(props.items())), "required": required}


if __name__ == "__main__":
    sys.exit(main())
