"""Write kernel/src/layout.rs, the v2 record batch layout the Rust kernel reads, from the one
declaration of it in kseg.format (the header's field list, the entry prefix, the attribute bits,
the codec names), so the kernel never re-types an offset, a size or a bit.

    python kernel/gen_layout.py           # from the project root: rewrites kernel/src/layout.rs
    python kernel/gen_layout.py --check   # exit 1 when the checked-in file is stale

tests/kernel/test_layout_generated.py regenerates it in memory and diffs it against the file.
Imports only kseg.format: the declaration, nothing that decodes with it.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kernel" / "src" / "layout.rs"
COMMAND = "python kernel/gen_layout.py"

if str(ROOT) not in sys.path:  # run as a script: the kseg beside this kernel/, not an installed one
    sys.path.insert(0, str(ROOT))

from kseg.format import batch, compression, entry  # noqa: E402

# struct codes of the header's fields -> the Rust type a field is read as (big-endian)
RUST_TYPES = {"q": "i64", "i": "i32", "I": "u32", "h": "i16", "b": "i8"}
# kseg.format.batch's "none" values and the field each stands in
SENTINELS = (
    ("NO_PARTITION_LEADER_EPOCH", "partition_leader_epoch"),
    ("NO_PRODUCER_ID", "producer_id"),
    ("NO_PRODUCER_EPOCH", "producer_epoch"),
    ("NO_SEQUENCE", "base_sequence"),
)


def _const(name: str, rust_type: str, value: int | str, doc: str) -> list[str]:
    return [f"/// {doc}", f"pub const {name}: {rust_type} = {value};"]


def _hex(value: int) -> str:
    return f"0x{value:02X}"


def render() -> str:
    """The text of kernel/src/layout.rs for the declaration kseg.format holds now."""
    fields = batch._FIELDS
    lines = [
        "//! The Kafka v2 record batch layout, generated from kseg/format/batch.py (_FIELDS, ATTR_*,",
        "//! MIN_RECORD_SIZE), kseg/format/entry.py (the entry prefix) and kseg/format/compression.py",
        f"//! (CODEC_NAMES) by kernel/gen_layout.py. Do not edit: regenerate with `{COMMAND}`",
        "//! (tests/kernel/test_layout_generated.py fails while this file and the declaration differ).",
        "",
        "// --- what every entry of a .log shares (kseg.format.entry) ---",
        "",
        *_const(
            "LOG_OVERHEAD",
            "usize",
            entry.LOG_OVERHEAD,
            "offset and size: the bytes an entry's size does not count",
        ),
        "",
        "// --- the v2 batch header (kseg.format.batch._FIELDS), in wire order ---",
        "// (an entry's size and magic sit where batch_length and magic do: MAGIC_POS serves both)",
        "",
    ]
    assert batch.FIELD_POS["batch_length"] == entry.SIZE_POS
    assert batch.FIELD_POS["magic"] == entry.MAGIC_POS
    for name, code in fields:
        pos, size = batch.FIELD_POS[name], struct.calcsize(">" + code)
        doc = f"{name}: {RUST_TYPES[code]} at [{pos}, {pos + size})"
        lines += _const(f"{name.upper()}_POS", "usize", pos, doc)
    lines += [
        *_const("HEADER_SIZE", "usize", batch.HEADER_SIZE, "the header: records follow it"),
        *_const(
            "CRC_COVERAGE_START",
            "usize",
            batch.CRC_COVERAGE_START,
            "the CRC-32C covers [CRC_COVERAGE_START, end of batch)",
        ),
        *_const(
            "MIN_BATCH_LENGTH",
            "i32",
            batch.MIN_BATCH_LENGTH,
            "the smallest batch_length: a header and no records",
        ),
        *_const("MAGIC", "i8", batch.MAGIC, "the magic of a v2 batch"),
        *_const(
            "MIN_RECORD_SIZE",
            "usize",
            batch.MIN_RECORD_SIZE,
            "the fewest bytes a record takes (one per varint field)",
        ),
        "",
        "// --- the values that mean none, each of its field's type ---",
        "",
    ]
    types = {name: RUST_TYPES[code] for name, code in fields}
    for name, field_name in SENTINELS:
        lines += [f"pub const {name}: {types[field_name]} = {getattr(batch, name)};"]
    lines += [
        "",
        "// --- attribute bits ---",
        "",
    ]
    bits = [n for n in vars(batch) if n.startswith("ATTR_")]
    for name in sorted(bits, key=lambda n: getattr(batch, n)):
        lines += [f"pub const {name}: i16 = {_hex(getattr(batch, name))};"]
    names = compression.CODEC_NAMES
    assert sorted(names) == list(range(len(names))), "codec ids 0..n, for an array by id"
    assert max(names) <= batch.ATTR_COMPRESSION
    codecs = ", ".join(f'"{names[cid]}"' for cid in sorted(names))
    lines += [
        "",
        *_const(
            "CODEC_NAMES",
            f"[&str; {len(names)}]",
            f"[{codecs}]",
            "the codec names by id (attributes & ATTR_COMPRESSION); other ids: the core's",
        ),
        "",
        "/// A v2 batch header, every field as it is on disk.",
        "#[derive(Clone, Copy, Debug, PartialEq, Eq)]",
        "pub struct Header {",
        *(f"    pub {name}: {RUST_TYPES[code]}," for name, code in fields),
        "}",
        "",
        "impl Header {",
        "    /// The header at `buf[pos..]`; the caller has seen HEADER_SIZE bytes there (a slice",
        "    /// shorter than that panics).",
        "    #[inline(always)]",
        "    pub fn read(buf: &[u8], pos: usize) -> Header {",
        "        let h: &[u8; HEADER_SIZE] = buf[pos..pos + HEADER_SIZE].try_into().unwrap();",
        "        Header {",
        *(
            f"            {name}: {RUST_TYPES[code]}::from_be_bytes(field(h, {name.upper()}_POS)),"
            for name, code in fields
        ),
        "        }",
        "    }",
        "}",
        "",
        "/// The N bytes of a field at `pos` of a header (N: the field's size, from its type).",
        "#[inline(always)]",
        "fn field<const N: usize>(h: &[u8; HEADER_SIZE], pos: usize) -> [u8; N] {",
        "    h[pos..pos + N].try_into().unwrap()",
        "}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--check"]:
        if OUT.read_text() != text:
            print(f"{OUT} is stale: regenerate with `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
