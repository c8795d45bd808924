"""kseg.format.regex: RE2 on bytes (one character per byte) and on topic names (UTF-8), \\Z read
as \\z, every construct RE2 cannot match in linear time refused by name, memory bounded for a
huge pattern, and the Python-parser view the search pre-check reasons on given only where Python
reads a pattern as RE2 does."""

from __future__ import annotations

import pickle
import resource

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kseg.format import regex
from kseg.format.regex import RegexError, compile_bytes, compile_text, escape


def test_a_nested_quantifier_takes_no_time():
    p = compile_bytes("(a+)+b")
    assert p.search(b"a" * 10_000) is None  # Python's re: 2**10000 ways
    assert p.search(b"a" * 10_000 + b"b") is not None


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"(a)\1", r"backreference \1"),
        (r"(a)\9", r"backreference \9"),
        ("(?P<n>a)(?P=n)", "backreference (?P=name)"),
        (r"\k<n>", r"backreference \k"),
        (r"\g{1}", r"backreference \g"),
        ("(?=a)", "lookahead (?=...)"),
        ("(?!a)", "negative lookahead (?!...)"),
        ("(?<=a)", "lookbehind (?<=...)"),
        ("(?<!a)", "negative lookbehind (?<!...)"),
        ("(?>a)", "atomic group (?>...)"),
        ("a*+", "possessive quantifier *+"),
        ("a{1,2}+", "possessive quantifier {1,2}+"),
        ("(?(1)a|b)", "conditional (?(...)...)"),
        ("(?R)", "recursion (?R)"),
        ("(?-1)", "recursion (?-1)"),
        ("(?&n)", "recursion (?&name)"),
        ("(?P>n)", "recursion (?P>name)"),
        ("(?|a)", "branch reset (?|...)"),
    ],
)
def test_each_construct_re2_cannot_do_in_linear_time_is_named(pattern, construct):
    for compile_ in (compile_bytes, compile_text):
        with pytest.raises(RegexError) as exc:
            compile_(pattern)
        assert str(exc.value) == (
            f"'{pattern}': {construct} is not supported (kseg matches in linear time; RE2 syntax)"
        )


def test_nothing_falls_back_to_re(monkeypatch):
    import re

    def refuse(*a, **k):
        raise AssertionError("re used")

    monkeypatch.setattr(re, "compile", refuse)
    monkeypatch.setattr(re, "search", refuse)
    regex._compiled.cache_clear()
    assert compile_bytes("(x+)+y").search(b"xxy") is not None
    with pytest.raises(RegexError):
        compile_bytes(r"(x)\1")


def test_z_is_the_end_outside_classes_and_quotes():
    assert compile_bytes(r"a\Z").search(b"ba") and not compile_bytes(r"a\Z").search(b"a\n")
    assert compile_bytes(r"\\Z").search(b"\\Z")  # an escaped backslash, then Z
    assert compile_bytes(r"[\]\\]\Z").search(b"x]")  # after a class holding ] and \
    with pytest.raises(RegexError, match=r"invalid escape sequence: \\Z"):
        compile_bytes(r"[\Z]")
    with pytest.raises(RegexError, match=r"invalid escape sequence: \\Z"):
        compile_bytes(r"\Qa\E\Z")  # with \Q...\E: RE2's syntax as it is (\z)
    assert compile_bytes(r"\Qa\Z\E").search(b"a\\Z")


def test_one_character_per_byte_for_records_utf8_for_topics():
    assert compile_bytes(rb"^\xff.$").search(b"\xff\xfe")
    assert compile_bytes("^é$").search("é".encode())  # the argument's bytes
    assert not compile_bytes("^.$").search("é".encode())  # two bytes
    assert compile_text("^.$").search_str("é")  # one character
    assert compile_text("^or.ers$").search_str("or\udcffers") is False  # undecodable: no crash
    assert compile_text("ers$").search_str("or\udcffers")
    assert compile_text("^ord").match_str("orders") and not compile_text("rd").match_str("orders")


@given(st.text(max_size=20))
def test_escape_matches_exactly_the_name(name):
    p = compile_text("^" + escape(name) + "$")
    assert p.search_str(name)
    assert not p.search_str(name + "x")


def test_a_huge_pattern_is_refused_in_bounded_memory_and_time():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for pattern in ("[a-z]{1000}" * 10_000, r"\pL{1000}" * 999, "[a-z]{1000}" * 900):
        for compile_ in (compile_bytes, compile_text):
            with pytest.raises(RegexError, match=r"too large \(its RE2 program would exceed 8"):
                compile_(pattern)
    # a generous bound (RE2's parse of 10,000 x{1000} alone took 168 MiB before the guard)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024


def test_a_message_is_one_line():
    with pytest.raises(RegexError) as exc:
        compile_bytes("a\n\x00(")
    assert "\n" not in str(exc.value) and "\x00" not in str(exc.value)
    with pytest.raises(RegexError) as exc:
        compile_bytes("x" * 500 + "(")
    assert len(str(exc.value)) < 400


def test_a_pattern_pickles():
    p = pickle.loads(pickle.dumps(compile_bytes(r"k\d+\Z")))
    assert p.search(b"k12") and not p.search(b"k12x") and p.text == rb"k\d+\Z"


@pytest.mark.parametrize(
    "pattern",
    [
        "[[:alpha:]]",  # Python: the class [[:alpha:] then a literal ]
        r"\Qab\E",
        r"\z",
        r"\pL",
        r"\x{41}",
        "(?U)a",
        "a(?i)b",
        "(?<n>a)",
        r"\C",
    ],
)
def test_no_python_view_of_what_python_reads_otherwise(pattern):
    assert regex.parsed(compile_bytes(pattern)) is None


def test_python_view_of_the_common_subset():
    tree = regex.parsed(compile_bytes(r"^key-4\d\Z"))
    assert [str(op) for op, _ in tree.data][:3] == ["AT", "LITERAL", "LITERAL"]
    assert regex.parsed(compile_text("^orders$")) is None  # only record patterns


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([compile_bytes, compile_text]), st.binary(max_size=30))
def test_any_bytes_compile_or_refuse_in_one_line(compile_, pattern):
    try:
        compile_(pattern)
    except RegexError as exc:
        assert "\n" not in str(exc)


LITERALS = ["a", "ab", r"a\.b", r"\x61", "\n", r"\n", r"\\", "", r"\012", "ba", "é", "(?s)ab"]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["^a", "a$", r"\ba", "b+", "(?m)^b", r"a\z", "[^a]", r"\C", *LITERALS]),
    st.binary(max_size=12).map(lambda b: bytes(b"ab\n.\\\xc3\xa9"[x % 7] for x in b)),
    st.integers(0, 12),
    st.integers(0, 12),
)
def test_the_fast_searches_are_the_bindings_search(pattern, data, pos, end):
    """Pattern.search calls RE2's Match without the binding's per-call match object, or for a
    literal the buffer's find: the same answer (and span) as the binding's public search, over
    any range, on bytes and on a buffer without find."""
    import re2

    p = compile_bytes(pattern)
    want_fast = "literal_search" if pattern in LITERALS else "search"
    assert p.search.__name__ == want_fast  # the fast one is in use
    public = re2.compile(regex._re2_syntax(p.text), regex._options(False))
    pos, end = sorted((min(pos, len(data)), min(end, len(data))))
    m = public.search(data, pos, end)
    want = None if m is None else m.span()
    assert p.search(data, pos, end) == want
    assert p.search(memoryview(data), pos, end) == want
    if pos == 0 and end == len(data):
        assert p.search(data) == want
