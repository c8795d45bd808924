"""kseg.dump.search: the filter's semantics against re computed in the test (each RE2 pattern
beside the Python pattern that means the same on bytes), and the batch pre-check's soundness (it
may only say "no match" when no record matches) on batches of every codec, including patterns
with anchors and word boundaries, and RE2-only syntax (which Python's parser cannot show: no
pre-check, or only what is sound)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kseg.dump.search import record_filter
from kseg.format import batch as v2
from kseg.format import compression as codecs
from kseg.format.record import Record
from kseg.outcome import BadOption

ALPHABET = b"ab\x00\n-"
small = st.binary(max_size=12).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b))
maybe = st.none() | small
# an RE2 pattern (what the user types) -> the Python bytes pattern that means the same, where
# they differ: RE2's $ is the very end without (?m) (Python's also matches before a final \n)
ORACLE = {
    "b$": r"b\Z",
    "a|$": r"a|\Z",
    "^ab-$": r"^ab-\Z",
    "a(b|-)a$": r"a(b|-)a\Z",
    r"a\z": r"a\Z",
    r"\Qa-\E": r"a\-",
    "[[:alpha:]]-": "[a-zA-Z]-",
    "a{,2}": r"a\{,2\}",
    r"\x{61}b": "ab",
    r"a\C": "(?s:a.)",
    "(?U)a+b": "a+?b",
    "b(?i)A": "b(?i:A)",
    "(?s)a.b": "(?s)a.b",
    r"(?m)a$": r"(?m)a$",
    "(a+)+-": "(a+)+-",
    "[^a]b": "[^a]b",
}
PATTERNS = [
    *("a", "ab", "^a", r"\Ab", r"a\b", r"\x00", "[ab]-", "", "(?m)^a-$", "ab|^b", "^a+b"),
    *(r"\bab\b", "(?i)AB", r"a\Z", r"\Ba", "a{2}", *ORACLE),
]


def _py(p: str) -> bytes:
    return ORACLE.get(p, p).encode()


def records(draw_keys, draw_values, draw_headers):
    return [
        Record(k, v, 1_700_000_000_000 + i, h, i)
        for i, (k, v, h) in enumerate(zip(draw_keys, draw_values, draw_headers, strict=True))
    ]


rec_lists = st.integers(1, 8).flatmap(
    lambda n: st.tuples(
        st.lists(maybe, min_size=n, max_size=n),
        st.lists(maybe, min_size=n, max_size=n),
        st.lists(
            st.lists(st.tuples(st.sampled_from(["h", "trace", "é"]), maybe), max_size=2),
            min_size=n,
            max_size=n,
        ),
    )
)
filters = st.fixed_dictionaries(
    {},
    optional={
        "key": st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=2),
        "value": st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=2),
        "header": st.lists(
            st.sampled_from(["h", "trace", "é", "h=a", "trace=^b", "é=\\x00", "h="]),
            min_size=1,
            max_size=2,
        ),
        "key_eq": st.lists(small, min_size=1, max_size=1),
        "value_contains": st.lists(small, min_size=1, max_size=2),
    },
)


def _expected(kw, k, v, hs) -> bool:
    """The documented semantics, written out independently."""
    for p in kw.get("key", []):
        if k is None or re.search(_py(p), k) is None:
            return False
    for p in kw.get("value", []):
        if v is None or re.search(_py(p), v) is None:
            return False
    for lit in kw.get("key_eq", []):
        if k != lit:
            return False
    for lit in kw.get("value_contains", []):
        if v is None or lit not in v:
            return False
    for spec in kw.get("header", []):
        name, eq, rx = spec.partition("=")
        if not any(
            hk == name and (not eq or (hv is not None and re.search(_py(rx), hv))) for hk, hv in hs
        ):
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(recs=rec_lists, kw=filters, codec=st.sampled_from([0, 1, 2, 3, 4]))
def test_matches_and_the_pre_check_is_sound(recs, kw, codec):
    f = record_filter(**kw)
    if f is None:
        assert not kw
        return
    rs = records(*recs)
    want = [_expected(kw, r.key, r.value, r.headers) for r in rs]
    got = [f.matches(r.key, r.value, r.headers) for r in rs]
    assert got == want
    data = v2.build_batch(rs, 0, compression_id=codec)
    body = data[v2.HEADER_SIZE :]
    if codec:
        body = codecs.decompress(codec, body, 1 << 20)
    if any(want):
        assert f.may_match(body, 0, len(body))  # never skips a batch that has a match
        assert f.may_match(memoryview(data), v2.HEADER_SIZE, len(data)) or codec


def test_the_pre_check_skips_batches_without_the_needle():
    rs = [Record(b"k%d" % i, b"value %d" % i, 0, [], i) for i in range(50)]
    data = v2.build_batch(rs, 0)
    f = record_filter(value_contains=[b"value 7"], key=["k[0-9]"])
    assert f.may_match(data, v2.HEADER_SIZE, len(data))
    assert not record_filter(value_contains=[b"value 77"]).may_match(
        data, v2.HEADER_SIZE, len(data)
    )
    assert not record_filter(key=["zz+"]).may_match(data, v2.HEADER_SIZE, len(data))
    # an anchored pattern is pre-checked by the literal bytes every match holds
    assert record_filter(key=["^zz"]).needles == (b"zz",)
    assert not record_filter(key=["^k77$"]).may_match(data, v2.HEADER_SIZE, len(data))
    assert record_filter(key=["^k7$"]).may_match(data, v2.HEADER_SIZE, len(data))
    assert record_filter(key=["(?i)^K7$", "^(k7)$"]).needles == ()  # nothing it can use


@pytest.mark.parametrize(
    ("kw", "option"),
    [
        ({"key": ["("]}, "--key"),
        ({"value": ["[a-"]}, "--value"),
        ({"header": ["x=["]}, "--header"),
        ({"header": ["=x"]}, "--header"),
    ],
)
def test_bad_patterns_name_their_option(kw, option):
    with pytest.raises(BadOption) as exc:
        record_filter(**kw)
    assert exc.value.option == option


# RE2 patterns of every shape, RE2-only syntax included (\Q...\E, POSIX classes, \x{..}, \C,
# flags anywhere, a{,2} as a literal): the pre-check derives needles from whatever it can read
_atoms = st.sampled_from(
    [
        *("a", "b", "-", "\n", r"\x00", ".", "[ab]", "[^a]", "[[:alpha:]]", r"[\d-]"),
        *(r"\Qa-\E", r"\x{61}", r"\C", r"\w", r"\s", "^", "$", r"\A", r"\z", r"\Z"),
        *(r"\b", r"\B", "(?i)", "(?m)", "(?s)", "(?U)", "a{,2}", ""),
    ]
)
_quantifiers = st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,2}", "*?", "{0}"])
re2_patterns = st.recursive(
    st.tuples(_atoms, _quantifiers).map("".join),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=4).map("".join),
        st.tuples(inner, inner).map("|".join),
        st.tuples(st.sampled_from(["(", "(?:", "(?i:", "(?P<g>"]), inner, _quantifiers).map(
            lambda t: f"{t[0]}{t[1]}){t[2]}"
        ),
    ),
    max_leaves=8,
)
# mostly anchored: the pre-check then needs the literal every match holds, read from the pattern
anchored = st.tuples(
    st.sampled_from(["", "^", r"\A", "(?m)^"]), re2_patterns, st.sampled_from(["", "$", r"\Z"])
).map("".join)


@settings(max_examples=400, deadline=None)
@given(recs=rec_lists, key=anchored, value=anchored, codec=st.sampled_from([0, 1, 4]))
@example(recs=([b"a"], [None], [[]]), key="^[[:alpha:]]", value="", codec=0)
@example(recs=([b"a-"], [None], [[]]), key=r"^\Qa-\E", value="", codec=0)
@example(recs=([b"a"], [None], [[]]), key=r"^a{,2}|a", value="", codec=0)
def test_the_pre_check_is_sound_for_any_re2_pattern(recs, key, value, codec):
    rs = records(*recs)
    for kw in ({"key": [key]}, {"value": [value]}, {"key": [key], "value": [value]}):
        try:
            f = record_filter(**kw)
        except BadOption:
            continue  # RE2 refuses it (e.g. a repeated repetition): nothing to pre-check
        if not any(f.matches(r.key, r.value, r.headers) for r in rs):
            continue
        data = v2.build_batch(rs, 0, compression_id=codec)
        body = data[v2.HEADER_SIZE :]
        if codec:
            body = codecs.decompress(codec, body, 1 << 20)
        assert f.may_match(body, 0, len(body)), (kw, f.needles)
