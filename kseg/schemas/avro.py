"""Avro: a registered schema made into a decoder of its payloads (fastavro), bounded on hostile
input.

fastavro is the decoder (its compiled reader: the Avro rules, logical types included). It
checks every length it reads, but trusts what it reads otherwise: an array of ``null`` whose
count says 10^18 makes a list of that many Nones, and a recursive schema (a linked list) nests
the compiled reader as deep as the payload asks, until the C stack overflows (a signal death, measured at 100,000 levels). So each payload
is first walked here, iteratively, without making any value: every count and length is checked
against the bytes left, every item counts against a budget of the payload's size (an item that
takes no byte, a ``null``, is the only kind that can outnumber the bytes), and nesting stops at
MAX_DEPTH. Only a payload the walk accepts reaches fastavro, so its work is bounded by the
payload's size. The walk also refuses what fastavro reads without complaint: an enum index or
union branch that is negative (a Python list read from its end), a varint longer than 10
bytes, an ``int`` past 32 bits, a boolean byte other than 0 or 1 (Java's reader reads 2 as
false, fastavro as true). Every payload is walked: a schema that looks safe is not (a record
of null fields reached twice at every level makes 2^levels values from no byte).

Values come out as plain JSON: unions unwrapped (fastavro's default), ``bytes`` and ``fixed`` as
Avro's JSON encoding writes them (one character U+0000..U+00FF per byte), decimals as exact
strings, dates, times and timestamps as ISO 8601, UUIDs as their text.
"""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

from kseg.format.errors import CorruptionError
from kseg.format.varint import read_varint

MAX_DEPTH = 128  # records, arrays, maps and unions within each other in one value
MAX_DECIMAL_BYTES = 128  # ~300 digits: a longer decimal is made into a number in quadratic time
SPARE_ITEMS = 1 << 16  # items a payload may hold beyond one per byte (zero-width ones)

_PRIMITIVE_WIDTH = {"boolean": 1, "float": 4, "double": 8}
_INT32 = (-(1 << 31), (1 << 31) - 1)
MAX_DECIMAL_DIGITS = 1000  # a decimal's precision or scale: a longer one is a hostile schema
_SIZED = ("bytes", "string")


class AvroSchema:
    """One registered Avro schema (its references parsed before it, their names known to it)."""

    def __init__(self, text: str, references: list[str]) -> None:
        import orjson
        from fastavro import parse_schema

        named: dict = {}
        try:
            for ref in references:
                parse_schema(orjson.loads(ref), named_schemas=named)
            self.parsed = parse_schema(orjson.loads(text), named_schemas=named)
        except RecursionError:
            raise ValueError("the schema nests too deeply to parse") from None
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
        except Exception as exc:  # fastavro's SchemaParseException, UnknownType, ValueError...
            raise ValueError(str(exc) or type(exc).__name__) from None
        self.named = named
        self.plain = not _needs_conversion(self.parsed, named)
        _check_decimals(self.parsed, named)

    def decode(self, data: bytes, start: int) -> Any:
        """The value at ``data[start:]`` as plain JSON types; ValueError saying why it does not
        decode."""
        value = self.read(data, start)
        return value if self.plain else plain(value)

    def read(self, data: bytes, start: int, reader=None) -> Any:
        """The value at ``data[start:]`` as fastavro makes it, walked first; ``reader``: a
        parsed schema to resolve it to (Avro's schema resolution). ValueError saying why not."""
        from fastavro import schemaless_reader

        self._walk(data, start)
        try:
            return schemaless_reader(io.BytesIO(data[start:]), self.parsed, reader)
        except Exception as exc:  # resolution, a logical type's conversion, invalid UTF-8
            raise ValueError(f"{type(exc).__name__}: {exc}") from None

    def _walk(self, data: bytes, start: int) -> None:
        try:
            walk(data, start, self.parsed, self.named)
        except CorruptionError as exc:
            raise ValueError(f"{exc.message} at payload byte {exc.position - start}") from None


def _types(schema, named: dict):
    """Every type a schema holds, each named type once: primitive names (str) and the dicts of
    complex and logical types."""
    seen: set = set()
    stack = [schema]
    while stack:
        s = stack.pop()
        if type(s) is str:
            if s in named:
                if s not in seen:
                    seen.add(s)
                    stack.append(named[s])
            else:
                yield s
        elif type(s) is list:
            stack.extend(s)
        elif type(s) is dict:
            yield s
            t = s.get("type")
            if t in ("record", "error"):
                stack.extend(f["type"] for f in s.get("fields", ()))
            elif t == "array":
                stack.append(s["items"])
            elif t == "map":
                stack.append(s["values"])
            elif t is not None and (type(t) is not str or t not in _COMPLEX):
                stack.append(t)


def _check_decimals(schema, named: dict) -> None:
    """A decimal whose precision or scale passes MAX_DECIMAL_DIGITS would print a number of that
    many digits for every value (scale 3x10^8: 300 MB a value): ValueError, the schema's."""
    for s in _types(schema, named):
        if type(s) is dict and s.get("logicalType") == "decimal":
            for k in ("precision", "scale"):
                v = s.get(k, 0)
                if type(v) is int and abs(v) > MAX_DECIMAL_DIGITS:
                    raise ValueError(
                        f"a decimal of {k} {v}: kseg decodes up to {MAX_DECIMAL_DIGITS} digits"
                    )


def _fail(message: str, pos: int) -> CorruptionError:
    return CorruptionError(message, position=pos, field="value")


def walk(data: bytes, pos: int, schema, named: dict) -> int:
    """Check that ``data[pos:]`` holds one value of ``schema`` within the bounds (see the module);
    returns where it ends. Iterative: a stack of what is still to read."""
    budget = len(data) - pos + SPARE_ITEMS
    end = len(data)
    # (schema, depth) to read; ("items"/"entries", item schema, items left in block, depth)
    stack: list = [(schema, 0)]
    while stack:
        top = stack.pop()
        if len(top) == 4:  # the rest of an array's or map's block
            kind, item, left, depth = top
            if left == 0:  # a new block: its count is checked against the budget left (each
                # item then takes its share of it as it is read)
                left, pos = _block_count(data, pos, budget)
                if left == 0:
                    continue
            stack.append((kind, item, left - 1, depth))
            if kind == "entries":  # a map entry: its key (a string), then its value
                stack.append((item, depth))
                pos = _sized(data, pos, end)
            else:
                stack.append((item, depth))
            continue
        s, depth = top
        budget -= 1
        if budget < 0:
            raise _fail("more items than the payload can hold", pos)
        while type(s) is str and s in named:
            s = named[s]
        if type(s) is dict:
            t = s["type"]
            if type(t) is not str or t not in _COMPLEX:
                if s.get("logicalType") == "decimal" and t == "bytes":
                    pos = _decimal(data, pos, end, s)
                    continue
                stack.append((t, depth))
                budget += 1  # the same item, once
                continue
            if depth >= MAX_DEPTH:
                raise _fail(f"the value nests deeper than {MAX_DEPTH} levels", pos)
            if t == "record" or t == "error":
                for f in reversed(s["fields"]):
                    stack.append((f["type"], depth + 1))
            elif t == "array":
                stack.append(("items", s["items"], 0, depth + 1))
            elif t == "map":
                stack.append(("entries", s["values"], 0, depth + 1))
            elif t == "enum":
                i, at = read_varint(data, pos)
                if not 0 <= i < len(s["symbols"]):
                    raise _fail(f"enum index {i} of {len(s['symbols'])} symbols", pos)
                pos = at
            elif t == "fixed":
                if s.get("logicalType") == "decimal":
                    pos = _decimal(data, pos, end, s, s["size"])
                    continue
                pos += s["size"]
                if pos > end:
                    raise _fail("truncated fixed", end)
            continue
        if type(s) is list:  # a union: the branch's index, then its value
            if depth >= MAX_DEPTH:
                raise _fail(f"the value nests deeper than {MAX_DEPTH} levels", pos)
            i, at = read_varint(data, pos)
            if not 0 <= i < len(s):
                raise _fail(f"union branch {i} of {len(s)}", pos)
            pos = at
            stack.append((s[i], depth + 1))
            continue
        if s == "int":
            n, at = read_varint(data, pos)
            if not _INT32[0] <= n <= _INT32[1]:
                raise _fail(f"int {n} past 32 bits", pos)
            pos = at
        elif s == "long":
            pos = read_varint(data, pos)[1]
        elif s in _SIZED:
            pos = _sized(data, pos, end)
        elif s == "null":
            pass
        elif s in _PRIMITIVE_WIDTH:
            if s == "boolean" and pos < end and data[pos] > 1:
                raise _fail(f"boolean byte {data[pos]}", pos)
            pos += _PRIMITIVE_WIDTH[s]
            if pos > end:
                raise _fail(f"truncated {s}", end)
        else:
            raise _fail(f"unknown type {s!r}", pos)
    return pos


_COMPLEX = ("record", "error", "array", "map", "enum", "fixed")


def _block_count(data: bytes, pos: int, budget: int) -> tuple[int, int]:
    """An array's or map's block: its item count (a negative count is followed by the block's
    byte size, which is read and checked)."""
    count, at = read_varint(data, pos)
    if count < 0:
        count = -count
        size, at = read_varint(data, at)
        if size < 0 or size > len(data) - at:
            raise _fail(f"block of {size} bytes with {len(data) - at} left", at)
    if count > budget:
        raise _fail(f"a block of {count} items: more than the payload can hold", pos)
    return count, at


def _sized(data: bytes, pos: int, end: int) -> int:
    n, at = read_varint(data, pos)
    if n < 0 or n > end - at:
        raise _fail(f"length {n} with {end - at} bytes left", pos)
    return at + n


def _decimal(data: bytes, pos: int, end: int, s: dict, size: int | None = None) -> int:
    """A decimal's bytes, no longer than its precision needs (a longer one would be turned into
    a number of that many digits, quadratic in its length)."""
    start = pos
    if size is None:
        n, pos = read_varint(data, pos)
        if n < 0 or n > end - pos:
            raise _fail(f"length {n} with {end - pos} bytes left", start)
    else:
        n = size
    precision = s.get("precision")
    most = (int(precision) * 851) // 2048 + 2 if isinstance(precision, int) else 64
    if n > max(most, size or 0) or n > MAX_DECIMAL_BYTES:
        raise _fail(
            f"a decimal of {n} bytes for precision {precision} (kseg decodes up to "
            f"{MAX_DECIMAL_BYTES})",
            start,
        )
    pos += n
    if pos > end:
        raise _fail("truncated decimal", end)
    return pos


def _needs_conversion(schema, named: dict) -> bool:
    """Could a value of this schema hold something JSON has no type for (bytes, a logical type's
    object)? Checked once per schema, so plain schemas' values are shown as fastavro makes them."""
    for s in _types(schema, named):
        if s == "bytes" or (
            type(s) is dict and ("logicalType" in s or s.get("type") in ("fixed", "bytes"))
        ):
            return True
    return False


def plain(value: Any) -> Any:
    """A fastavro value as plain JSON types (see the module)."""
    t = type(value)
    if t is dict:
        return {k: plain(v) for k, v in value.items()}
    if t is list:
        return [plain(v) for v in value]
    if t is bytes:
        return value.decode("latin-1")  # Avro's JSON encoding: one code point per byte
    if value is None or t in (str, int, float, bool):
        return value
    if hasattr(value, "isoformat"):  # datetime, date, time
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")  # exact, never an exponent ("0.0000000001", not "1E-10")
    return str(value)  # UUID
