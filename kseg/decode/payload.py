"""How keys, values and header values are shown: auto, utf8, hex, base64, json, none, redact."""

from __future__ import annotations

import base64
import hashlib

import orjson

MODES = ("auto", "utf8", "hex", "base64", "json", "none", "redact")
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
    if mode == "auto":
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
        return "sha256:" + hashlib.sha256(data).hexdigest()[:16], "redacted"
    raise ValueError(f"unknown payload mode {mode!r}")
