"""JSON Schema: the payload after the frame is the value as JSON text.

kseg shows it as JSON and does not validate it against the schema, as Confluent's
deserializer does not by default (``json.fail.invalid.schema=false``): a validator runs the
schema's ``pattern`` regexes, which a backtracking engine (Python's jsonschema) does not run in
linear time, and a schema is data from the disk like any other. The schema must parse as JSON.
An integer beyond 64 bits is shown as a string of its digits (JSON output holds 64 bits).
"""

from __future__ import annotations

import re
from typing import Any

import orjson


class JsonSchema:
    def __init__(self, text: str, references: list[str]) -> None:
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None

    def decode(self, data: bytes, start: int) -> Any:
        payload = data[start:]
        if _LONG_NUMBER.search(payload) is None:
            try:
                return orjson.loads(payload)
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"not JSON: {exc}") from None
        # a number of 19 digits or more: orjson would make an integer past 64 bits a float (and
        # kseg's JSON output holds 64 bits): such an integer is kept exact, as its digits
        import json

        try:
            value = json.loads(
                payload, parse_int=_int, parse_float=_float, parse_constant=_no_constant
            )
            orjson.dumps(value)  # what kseg's JSON output can hold (no lone surrogate)
        except (ValueError, RecursionError, TypeError) as exc:
            raise ValueError(f"not JSON: {exc}") from None
        return value


_LONG_NUMBER = re.compile(rb"[0-9]{19}")
_I64 = (-(1 << 63), (1 << 63) - 1)


def _int(text: str):
    n = int(text)  # ValueError past Python's 4300 digits: not JSON kseg shows
    return n if _I64[0] <= n <= _I64[1] else text


def _float(text: str) -> float:
    f = float(text)
    if f in (float("inf"), float("-inf")):  # as orjson: a number no double holds is not JSON
        raise ValueError(f"number {text[:20]} out of range")
    return f


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")
