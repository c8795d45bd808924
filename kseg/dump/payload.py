"""How keys, values and header values are shown: auto, utf8, hex, base64, json, none, redact,
schema (Schema Registry framing decoded: kseg.dump.schema_events; what carries no frame, a
header value or a Kafka 0.7 payload, is shown as ``auto`` shows it)."""

from __future__ import annotations

import base64
from binascii import b2a_base64
from collections.abc import Callable

import orjson

MODES = ("auto", "utf8", "hex", "base64", "json", "none", "redact", "schema")
_CONTROL = set(range(0x20)) - {0x09, 0x0A, 0x0D}


def _printable_utf8(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _CONTROL.intersection(data) or "\x7f" in text:
        return None
    return text


def encode(data: bytes | None, mode: str) -> tuple[object, str | None]:
    """(shown value, encoding used). ``None`` data stays None (a null key or value).

    Lossless for utf8 (when decodable), hex and base64; ``auto`` picks utf8 for printable text
    and base64 otherwise; ``json`` embeds parsed JSON and falls back like auto.
    """
    if data is None:
        return None, None
    if mode == "auto" or mode == "schema":
        text = _printable_utf8(data)
        if text is not None:
            return text, "utf8"
        return base64.b64encode(data).decode(), "base64"
    if mode == "base64":
        return base64.b64encode(data).decode(), "base64"
    if mode == "hex":
        return data.hex(), "hex"
    if mode == "utf8":
        return data.decode("utf-8", "replace"), "utf8"
    if mode == "json":
        try:
            return orjson.loads(data), "json"
        except orjson.JSONDecodeError:
            return encode(data, "auto")
    if mode == "redact":
        import hashlib  # only --payload redact hashes (3 ms of every dump's start-up otherwise)

        return "sha256:" + hashlib.sha256(data).hexdigest()[:16], "redacted"
    raise ValueError(f"unknown payload mode {mode!r}")


def encoder(mode: str) -> Callable[[bytes | None], tuple[object, str | None]]:
    """``encode`` specialised for one mode, chosen once per run (it runs for every field)."""
    if mode == "base64":

        def enc(data: bytes | None) -> tuple[object, str | None]:
            if data is None:
                return None, None
            return b2a_base64(data, newline=False).decode("ascii"), "base64"

        return enc
    if mode == "auto" or mode == "schema":
        control = _CONTROL

        def enc(data: bytes | None) -> tuple[object, str | None]:
            if data is None:
                return None, None
            if data.isascii():
                if control.isdisjoint(data) and b"\x7f" not in data:
                    return data.decode("ascii"), "utf8"
                return b2a_base64(data, newline=False).decode("ascii"), "base64"
            text = _printable_utf8(data)
            if text is not None:
                return text, "utf8"
            return b2a_base64(data, newline=False).decode("ascii"), "base64"

        return enc
    if mode not in MODES:
        raise ValueError(f"unknown payload mode {mode!r}")
    return lambda data: encode(data, mode)
