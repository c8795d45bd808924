"""Every time form kafka-consumer-groups accepts (--to-datetime, --by-duration), plus now."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.seek.timeexpr import parse_duration, parse_time
from tests.helpers import events, run_kseg

NOW = 1_800_000_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _ms(dt: datetime) -> int:
    return (dt - EPOCH) // timedelta(milliseconds=1)


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 2), max_value=datetime(9998, 12, 31), timezones=st.just(None)
    ),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
    st.sampled_from(["", "Z", "X", "XX", "XXX"]),
)
def test_to_datetime_forms(naive, offset_min, form):
    """Kafka's patterns: yyyy-MM-dd'T'HH:mm:ss.SSS with no zone (UTC), Z, X (+09), XX (+0930),
    XXX (+09:30)."""
    naive = naive.replace(microsecond=naive.microsecond // 1000 * 1000)
    if form in ("", "Z"):
        offset_min = 0
    if form == "X":
        offset_min = offset_min // 60 * 60  # whole hours only
    sign = "+" if offset_min >= 0 else "-"
    hh, mm = divmod(abs(offset_min), 60)
    zone = {
        "": "",
        "Z": "Z",
        "X": f"{sign}{hh:02d}",
        "XX": f"{sign}{hh:02d}{mm:02d}",
        "XXX": f"{sign}{hh:02d}:{mm:02d}",
    }[form]
    text = naive.strftime("%Y-%m-%dT%H:%M:%S.") + f"{naive.microsecond // 1000:03d}" + zone
    aware = naive.replace(tzinfo=timezone(timedelta(minutes=offset_min)))
    assert parse_time(text) == _ms(aware)


@given(
    st.integers(0, 400),
    st.integers(0, 48),
    st.integers(0, 120),
    st.integers(0, 5000),
    st.integers(0, 999),
    st.booleans(),
)
def test_by_duration_is_that_long_before_now(d, h, m, s, frac, negative):
    text = f"{'-' if negative else ''}P{d}DT{h}H{m}M{s}.{frac:03d}S"
    ms = ((d * 24 + h) * 60 + m) * 60_000 + s * 1000 + frac
    ms = -ms if negative else ms
    assert parse_duration(text) == ms
    assert parse_time(text, NOW) == NOW - ms


@pytest.mark.parametrize(
    "text,ms",
    [
        ("PT30M", 30 * 60_000),
        ("P1DT2H", 26 * 3_600_000),
        ("pt1h", 3_600_000),
        ("P2D", 2 * 86_400_000),
        ("PT-6H3M", -6 * 3_600_000 + 3 * 60_000),
        ("PT0.5S", 500),
        ("-PT1M", -60_000),
    ],
)
def test_duration_examples(text, ms):
    assert parse_time(text, NOW) == NOW - ms


@pytest.mark.parametrize(
    "text", ["P", "PT", "P1DT", "P1W", "PT1X", "2026-13-01T00:00:00", "2026-02-30", "yesterday"]
)
def test_not_times(text):
    with pytest.raises(ValueError):
        parse_time(text, NOW)


def test_now_and_short_forms():
    assert parse_time("now", NOW) == NOW
    assert parse_time("NOW", NOW) == NOW
    base = _ms(datetime(2026, 11, 21, 9, 30, tzinfo=timezone.utc))
    assert parse_time("2026-11-21T09:30") == base
    assert parse_time("2026-11-21 09:30:00Z") == base
    assert parse_time("2026-11-21T09:30:00+09:00") == base - 9 * 3_600_000
    assert parse_time("2026-11-21") == base - (9 * 60 + 30) * 60_000


def test_seek_cli_accepts_them(tree):
    """The real entry point: a duration before --now, now, and a --to-datetime string."""
    now = "2023-11-14T22:14:20.000Z"  # orders-0 holds 1700000000000 .. 1700000039198
    answers = {}
    for t in ("PT1M", "-1m", "2023-11-14T22:13:20.000", "2023-11-14T23:13:20.000+01:00"):
        proc = run_kseg("seek", tree / "orders-0", "--time", t, "--now", now, "-f", "json")
        assert proc.returncode == 0, proc.stderr
        (ev,) = events(proc.stdout.decode())
        answers[t] = ev["offset"]
    assert len(set(answers.values())) == 1 and answers["PT1M"] == 0, answers
    proc = run_kseg("seek", tree / "orders-0", "--time", "now", "-f", "json")
    assert proc.returncode == 0 and events(proc.stdout.decode())[0]["offset"] is None
    proc = run_kseg("seek", tree / "orders-0", "--time", "P1W")
    assert proc.returncode == 16 and b"PT30M" in proc.stderr
