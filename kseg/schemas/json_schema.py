"""JSON Schema: the payload after the frame is the value as JSON text.

kseg shows it as JSON and does not validate it against the schema, as Confluent's
deserializer does not by default (``json.fail.invalid.schema=false``): a validator runs the
schema's ``pattern`` regexes, which a backtracking engine (Python's jsonschema) does not run in
linear time, and a schema is data from the disk like any other. The schema must parse as JSON.
"""

from __future__ import annotations

from typing import Any

import orjson


class JsonSchema:
    def __init__(self, text: str, references: list[str]) -> None:
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None

    def decode(self, data: bytes, start: int) -> Any:
        try:
            return orjson.loads(data[start:])
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
