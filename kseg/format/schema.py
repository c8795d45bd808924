"""One interpreter for Kafka's message schemas: decode and encode, driven by declared tables.

A table (see ``kseg/format/schemas/``) transcribes a Kafka JSON message definition: the fields in
wire order, each with its type, the versions that carry it, the versions where it may be null,
and for tagged fields the tag and default. ``decode(schema, buf, version)`` and
``encode(schema, data, version)`` are mirror images, so every fixture is written by the same
rules that read it.

Wire rules (Kafka's generated ``Readable``/``Writable`` code): before the first flexible version
strings are ``int16 length`` (-1 null), bytes ``int32 length`` and arrays ``int32 count``; from
it on they are compact (``uvarint length+1``, 0 = null) and every struct ends with its tagged
fields (``uvarint count``, then ``uvarint tag, uvarint size, value`` in ascending tag order). A
nullable struct is preceded by an ``int8`` (-1 null, 1 present). UUIDs are 16 bytes shown as
Kafka's url-safe base64 without padding; bytes are shown as standard base64.

Every length and count read from the input is checked against the bytes left before it is used;
a lie raises a CorruptionError naming the byte (relative to the buffer) and the field path.
"""

from __future__ import annotations

import base64
import re
import struct
from typing import Any, NamedTuple

from kseg.format.errors import INVALID_RECORD, CorruptionError

_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint16": struct.Struct(">H"),
    "uint32": struct.Struct(">I"),
    "float64": struct.Struct(">d"),
}
_VAR = ("string", "bytes", "records")
PRIMITIVES = frozenset((*_FIXED, *_VAR, "bool", "uuid"))
_I8 = _FIXED["int8"]
UNKNOWN_TAGS = "unknown_tagged_fields"  # tag -> base64 of the raw bytes; preserved by encode
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
_NO_DEFAULT = object()


def snake(name: str) -> str:
    """Kafka's PascalCase field name in snake_case (``KRaftVersion`` -> ``kraft_version``)."""
    name = name.replace("KRaft", "Kraft")
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return name.lower()


def _versions(spec: str | None) -> tuple[int, int]:
    """ "0+", "1-3", "2" or None (never) as an inclusive range."""
    if spec is None or spec == "none":
        return (1, 0)
    if spec.endswith("+"):
        return (int(spec[:-1]), 1 << 15)
    lo, _, hi = spec.partition("-")
    return (int(lo), int(hi or lo))


def in_range(r: tuple[int, int], v: int) -> bool:
    return r[0] <= v <= r[1]


class Field(NamedTuple):
    name: str  # snake_case
    kafka_name: str  # as in Kafka's JSON (PascalCase)
    type: str  # a primitive, or "struct"
    array: bool
    versions: tuple[int, int]
    nullable: tuple[int, int]
    tag: int | None
    tagged: tuple[int, int]
    default: Any
    fields: tuple[Field, ...] = ()  # struct members

    def default_value(self) -> Any:
        if self.default is not _NO_DEFAULT:
            return self.default
        if self.array:
            return []
        if self.type == "struct":
            return {f.name: f.default_value() for f in self.fields}
        return {
            "string": "",
            "bytes": "",
            "records": None,
            "bool": False,
            "uuid": ZERO_UUID,
            "float64": 0.0,
        }.get(self.type, 0)


def f(
    spec: str,
    *fields: Field,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = _NO_DEFAULT,
) -> Field:
    """One field, from ``"Name type versions"`` as Kafka's JSON spells them.

    ``type`` is a primitive, ``[]primitive``, or (with ``fields``) a struct name or ``[]Struct``.
    """
    name, typ, versions = spec.split()
    array = typ.startswith("[]")
    base = typ[2:] if array else typ
    if fields:
        base = "struct"
    elif base not in PRIMITIVES:
        raise ValueError(f"unknown type {typ} in {spec!r}")
    vr = _versions(versions)
    return Field(
        snake(name), name, base, array, vr, _versions(nullable), tag,
        (_versions(tagged) if tagged else vr) if tag is not None else (1, 0),
        default, tuple(fields),
    )  # fmt: skip


class Schema(NamedTuple):
    name: str  # Kafka's message name, e.g. "PartitionRecord"
    valid: tuple[int, int]
    flexible: tuple[int, int]
    fields: tuple[Field, ...]
    api_key: int | None = None
    record: str = ""  # snake_case name shown in output

    def supports(self, version: int) -> bool:
        return in_range(self.valid, version)


def schema(name: str, valid: str, flexible: str | None, *fields: Field,
           api_key: int | None = None) -> Schema:  # fmt: skip
    return Schema(name, _versions(valid), _versions(flexible), tuple(fields), api_key, snake(name))


# --- decoding -----------------------------------------------------------------------------


class Reader:
    __slots__ = ("buf", "pos", "end", "what")

    def __init__(self, buf, pos: int, end: int, what: str) -> None:
        self.buf, self.pos, self.end, self.what = buf, pos, end, what

    def fail(self, message: str, path: str, at: int | None = None) -> CorruptionError:
        at = self.pos if at is None else at
        return CorruptionError(
            f"{self.what}: {message}",
            kind=INVALID_RECORD,
            field=f"{self.what} byte {at} ({path})" if path else f"{self.what} byte {at}",
        )

    def fixed(self, st: struct.Struct, path: str):
        if self.pos + st.size > self.end:
            raise self.fail(f"truncated: {st.size} bytes needed, {self.end - self.pos} left", path)
        (v,) = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return v

    def uvarint(self, path: str) -> int:
        start, value, shift = self.pos, 0, 0
        while True:
            if self.pos >= self.end:
                raise self.fail("truncated varint", path, start)
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise self.fail("unsigned varint longer than 5 bytes", path, start)

    def take(self, n: int, path: str, at: int) -> bytes:
        if n < 0 or n > self.end - self.pos:
            raise self.fail(
                f"length {n} exceeds the data ({self.end - self.pos} bytes left)", path, at
            )
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def length(self, flex: bool, wide: bool, path: str) -> int:
        """A string/bytes/array length; -1 means null."""
        if flex:
            return self.uvarint(path) - 1
        return self.fixed(_FIXED["int32"] if wide else _FIXED["int16"], path)


def _uuid_str(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def uuid_bytes(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a 16-byte UUID: {text!r}")
    return raw


def _read_value(r: Reader, fl: Field, version: int, flex: bool, path: str, fill: bool):
    """One value of a field's base type (an array element, or the field itself)."""
    t = fl.type
    st = _FIXED.get(t)
    if st is not None:
        return r.fixed(st, path)
    if t == "bool":
        return r.fixed(_I8, path) != 0
    if t == "uuid":
        return _uuid_str(r.take(16, path, r.pos))
    if t == "string":
        at = r.pos
        n = r.length(flex, False, path)
        if n == -1 and in_range(fl.nullable, version):
            return None
        if n > 0x7FFF:  # Kafka's readers refuse it too
            raise r.fail(f"string length {n} exceeds 32767", path, at)
        raw = r.take(n, path, at)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise r.fail("string is not valid UTF-8", path, at) from None
    if t in ("bytes", "records"):
        at = r.pos
        n = r.length(flex, True, path)
        if n == -1 and (in_range(fl.nullable, version) or t == "records"):
            return None
        return base64.b64encode(r.take(n, path, at)).decode()
    return _read_struct(r, fl.fields, version, flex, path, fill)


def _read_field(
    r: Reader, fl: Field, version: int, flex: bool, path: str, fill: bool, tagged: bool = False
):
    if fl.array:
        at = r.pos
        n = r.length(flex, True, path)
        if n == -1 and in_range(fl.nullable, version):
            return None
        if n < 0 or n > r.end - r.pos:  # every element takes at least one byte
            raise r.fail(
                f"array length {n} exceeds the data ({r.end - r.pos} bytes left)", path, at
            )
        st = _FIXED.get(fl.type)
        if st is not None:  # a run of fixed-width numbers: check the whole run, unpack at once
            size = st.size * n
            if size > r.end - r.pos:
                raise r.fail(
                    f"array of {n} {fl.type} needs {size} bytes, {r.end - r.pos} left", path, at
                )
            values = list(struct.unpack_from(f">{n}{st.format[-1]}", r.buf, r.pos))
            r.pos += size
            return values
        return [_read_value(r, fl, version, flex, f"{path}[{i}]", fill) for i in range(n)]
    if fl.type == "struct" and in_range(fl.nullable, version):
        # Kafka's generated code: an int8 marker (< 0 null) in the body; inside a tagged field
        # an unsigned varint (0 null, 1 present), as Kafka 4.1 writes a null ClassicMemberMetadata
        at = r.pos
        if tagged:
            marker = r.uvarint(path)
            if marker == 0:
                return None
        else:
            marker = r.fixed(_I8, path)
            if marker < 0:
                return None
        if marker != 1:
            raise r.fail(f"nullable struct marker {marker} (expected null or 1)", path, at)
    return _read_value(r, fl, version, flex, path, fill)


_ABSENT, _TAGGED, _FIXED_WIDTH, _OTHER = range(4)
_PLANS: dict[tuple[int, int, bool], tuple] = {}


def _plan(fields: tuple[Field, ...], version: int, flex: bool) -> tuple:
    """How to read ``fields`` at ``version``, worked out once: per field, absent / tagged /
    fixed-width (read inline) / anything else, and the tagged fields by tag."""
    key = (id(fields), version, flex)
    plan = _PLANS.get(key)
    if plan is None:
        steps, tagged = [], {}
        for fl in fields:
            if not in_range(fl.versions, version):
                steps.append((fl, _ABSENT, None))
            elif flex and fl.tag is not None and in_range(fl.tagged, version):
                tagged[fl.tag] = fl
                steps.append((fl, _TAGGED, None))
            elif not fl.array and fl.type in _FIXED:
                steps.append((fl, _FIXED_WIDTH, _FIXED[fl.type]))
            else:
                steps.append((fl, _OTHER, None))
        plan = (fields, steps, tagged)  # holding ``fields`` keeps its id from being reused
        _PLANS[key] = plan
    return plan


def _read_struct(r: Reader, fields, version: int, flex: bool, path: str, fill: bool) -> dict:
    out: dict = {}
    _, steps, tagged = _plan(fields, version, flex)
    buf = r.buf
    for fl, mode, st in steps:
        if mode == _FIXED_WIDTH:
            pos = r.pos
            if pos + st.size > r.end:
                sub = f"{path}.{fl.name}" if path else fl.name
                raise r.fail(f"truncated: {st.size} bytes needed, {r.end - pos} left", sub)
            out[fl.name] = st.unpack_from(buf, pos)[0]
            r.pos = pos + st.size
        elif mode == _OTHER:
            sub = f"{path}.{fl.name}" if path else fl.name
            out[fl.name] = _read_field(r, fl, version, flex, sub, fill)
        elif mode == _TAGGED or fill:
            out[fl.name] = fl.default_value()
    if flex:
        _read_tagged(r, tagged, out, version, path, fill)
    return out


def _read_tagged(r: Reader, tagged: dict, out: dict, version: int, path: str, fill: bool) -> None:
    where = f"{path}.tagged_fields" if path else "tagged_fields"
    at = r.pos
    count = r.uvarint(where)
    if count > r.end - r.pos:  # each tagged field takes at least two bytes
        raise r.fail(f"tagged field count {count} exceeds the data", where, at)
    last = -1
    for _ in range(count):
        tag_at = r.pos
        tag = r.uvarint(where)
        if tag <= last:
            raise r.fail(f"tag {tag} after tag {last}: tags must increase", where, tag_at)
        last = tag
        size_at = r.pos
        size = r.uvarint(f"{where}[{tag}]")
        if size > r.end - r.pos:
            raise r.fail(f"tagged field {tag} size {size} exceeds the data ({r.end - r.pos} bytes left)",
                         f"{where}[{tag}]", size_at)  # fmt: skip
        fl = tagged.get(tag)
        if fl is None:
            out.setdefault(UNKNOWN_TAGS, {})[str(tag)] = base64.b64encode(
                bytes(r.buf[r.pos : r.pos + size])
            ).decode()
            r.pos += size
            continue
        sub = Reader(r.buf, r.pos, r.pos + size, r.what)
        name = f"{path}.{fl.name}" if path else fl.name
        out[fl.name] = _read_field(sub, fl, version, True, name, fill, tagged=True)
        if sub.pos != sub.end:
            raise r.fail(
                f"tagged field {tag} has {sub.end - sub.pos} bytes left over", name, sub.pos
            )
        r.pos += size


def decode(sch: Schema, buf, version: int, pos: int = 0, end: int | None = None,
           what: str = "value", fill: bool = False) -> tuple[dict, int]:  # fmt: skip
    """Decode ``sch`` at ``version`` from ``buf[pos:end]``; return (fields, next position).

    ``fill`` also gives the fields the version does not carry, at their defaults (Kafka's object
    view); without it only the version's own fields appear (Kafka's JSON view). Tagged fields of
    the version always appear, at their default when absent.
    """
    if not sch.supports(version):
        raise CorruptionError(
            f"{what}: {sch.name} version {version} is unknown (known: {sch.valid[0]}-{sch.valid[1]})",
            kind=INVALID_RECORD,
            field=f"{what} byte {pos}",
        )
    r = Reader(buf, pos, len(buf) if end is None else end, what)
    return _read_struct(r, sch.fields, version, in_range(sch.flexible, version), "", fill), r.pos


def decode_all(sch: Schema, buf, version: int, pos: int = 0, what: str = "value",
               fill: bool = False) -> dict:  # fmt: skip
    """Decode and require that nothing is left over."""
    out, end = decode(sch, buf, version, pos, what=what, fill=fill)
    if end != len(buf):
        raise CorruptionError(
            f"{what}: {len(buf) - end} bytes left after the {sch.name} v{version} body",
            kind=INVALID_RECORD,
            field=f"{what} byte {end}",
        )
    return out


# --- encoding -----------------------------------------------------------------------------


def write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_length(out: bytearray, n: int, flex: bool, wide: bool) -> None:
    if flex:
        write_uvarint(out, n + 1)
    else:
        out += (_FIXED["int32"] if wide else _FIXED["int16"]).pack(n)


def _write_value(out: bytearray, fl: Field, value, version: int, flex: bool) -> None:
    t = fl.type
    st = _FIXED.get(t)
    if st is not None:
        out += st.pack(value)
    elif t == "bool":
        out.append(1 if value else 0)
    elif t == "uuid":
        out += uuid_bytes(value)
    elif t == "string":
        if value is None:
            _write_length(out, -1, flex, False)
        else:
            raw = value.encode()
            if len(raw) > 0x7FFF:
                raise ValueError(f"{fl.name}: a string of {len(raw)} bytes (Kafka's limit: 32767)")
            _write_length(out, len(raw), flex, False)
            out += raw
    elif t in ("bytes", "records"):
        if value is None:
            _write_length(out, -1, flex, True)
        else:
            raw = base64.b64decode(value) if isinstance(value, str) else bytes(value)
            _write_length(out, len(raw), flex, True)
            out += raw
    else:
        _write_struct(out, fl.fields, value, version, flex)


def _write_field(
    out: bytearray, fl: Field, value, version: int, flex: bool, tagged: bool = False
) -> None:
    if fl.array:
        if value is None:
            _write_length(out, -1, flex, True)
            return
        _write_length(out, len(value), flex, True)
        for v in value:
            _write_value(out, fl, v, version, flex)
        return
    if fl.type == "struct" and in_range(fl.nullable, version):
        if tagged:  # the mirror of _read_field: a varint marker inside a tagged field
            out.append(0 if value is None else 1)
        else:
            out += _I8.pack(-1 if value is None else 1)
        if value is None:
            return
    _write_value(out, fl, value, version, flex)


def _write_struct(out: bytearray, fields, data: dict, version: int, flex: bool) -> None:
    tagged: dict[int, bytes] = {}
    for fl in fields:
        if not in_range(fl.versions, version):
            continue
        value = data.get(fl.name, fl.default_value()) if data is not None else fl.default_value()
        if flex and fl.tag is not None and in_range(fl.tagged, version):
            if value != fl.default_value():  # Kafka writes a tagged field only when not default
                buf = bytearray()
                _write_field(buf, fl, value, version, True, tagged=True)
                tagged[fl.tag] = bytes(buf)
            continue
        _write_field(out, fl, value, version, flex)
    if flex:
        for tag, raw in ((data or {}).get(UNKNOWN_TAGS) or {}).items():
            tagged[int(tag)] = base64.b64decode(raw)
        write_uvarint(out, len(tagged))
        for tag in sorted(tagged):
            write_uvarint(out, tag)
            write_uvarint(out, len(tagged[tag]))
            out += tagged[tag]


def encode(sch: Schema, data: dict, version: int) -> bytes:
    """The body of ``data`` at ``version`` (missing fields take their defaults)."""
    if not sch.supports(version):
        raise ValueError(f"{sch.name} has no version {version}")
    out = bytearray()
    _write_struct(out, sch.fields, data, version, in_range(sch.flexible, version))
    return bytes(out)
