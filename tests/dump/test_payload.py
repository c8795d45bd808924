"""kseg/dump/payload.py: every mode shows bytes so that they can be had back exactly (or says why
not: none, redact), and the per-run specialised encoder agrees with the reference encode()."""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.dump.payload import MODES, encode, encoder


def _back(shown, encoding: str | None) -> bytes | None:
    """What a script reading dump's JSON does to get the bytes back."""
    if encoding is None:
        return None
    if encoding == "base64":
        return base64.b64decode(shown)
    if encoding == "hex":
        return bytes.fromhex(shown)
    if encoding == "utf8":
        return shown.encode()
    if encoding == "json":
        return orjson.dumps(shown)
    raise AssertionError(encoding)


@given(st.one_of(st.none(), st.binary(max_size=64), st.text(max_size=32).map(str.encode)))
def test_auto_base64_hex_round_trip_and_the_encoder_agrees(data):
    for mode in ("auto", "base64", "hex"):
        shown, used = encode(data, mode)
        assert encoder(mode)(data) == (shown, used)
        assert _back(shown, used) == data
    json_shown = orjson.loads(orjson.dumps(encode(data, "auto")[0]))
    assert json_shown == encode(data, "auto")[0]  # always valid JSON


def test_utf8_replaces_only_what_is_not_utf8_and_auto_never_loses():
    assert encode(b"caf\xc3\xa9", "utf8") == ("café", "utf8")
    assert encode(b"\xff\x00", "utf8")[0] == "\ufffd\x00"  # shown, lossy by request
    assert encode(b"\xff\x00", "auto") == (base64.b64encode(b"\xff\x00").decode(), "base64")
    assert encode(b"a\x01b", "auto")[1] == "base64"  # control characters are not text
    assert encode(b"a\tb\n", "auto") == ("a\tb\n", "utf8")


def test_json_mode_parses_or_falls_back_to_auto():
    assert encode(b'{"a": [1, 2]}', "json") == ({"a": [1, 2]}, "json")
    assert encode(b"not json", "json") == ("not json", "utf8")
    assert encode(b"\xff", "json") == ("/w==", "base64")


def test_none_and_redact_hide_the_bytes():
    shown, used = encode(b"secret", "redact")
    assert used == "redacted" and "secret" not in shown and shown.startswith("sha256:")
    assert encode(b"secret", "redact")[0] == shown  # deterministic: equal values compare equal
    assert encode(b"other", "redact")[0] != shown
    assert encode(None, "redact") == (None, None)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "none"])
def test_null_stays_null_in_every_mode(mode):
    assert encode(None, mode) == (None, None)
    assert encoder(mode)(None) == (None, None)


def test_mode_none_is_the_dumps_business_and_unknown_modes_are_refused():
    """'none' shows sizes only: dump never asks for an encoding (kseg.dump.record_events)."""
    with pytest.raises(ValueError, match="unknown payload mode 'none'"):
        encode(b"x", "none")
    with pytest.raises(ValueError, match="unknown payload mode"):
        encode(b"x", "rot13")
