import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.format.errors import CorruptionError
from kseg.format.varint import read_varint, varint_size, write_varint

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(INT64)
def test_varint_round_trip(value):
    out = bytearray()
    write_varint(out, value)
    assert len(out) == varint_size(value)
    assert read_varint(bytes(out) + b"tail", 0) == (value, len(out))


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-65, b"\x81\x01"),
        (300, b"\xd8\x04"),
    ],
)
def test_known_encodings(value, encoded):
    out = bytearray()
    write_varint(out, value)
    assert bytes(out) == encoded


def test_truncated_varint_names_position():
    with pytest.raises(CorruptionError, match="truncated varint") as err:
        read_varint(b"\x00\x80\x80", 1)
    assert err.value.position == 1


def test_overlong_varint_is_rejected():
    with pytest.raises(CorruptionError, match="longer than 10 bytes"):
        read_varint(b"\xff" * 12, 0)
