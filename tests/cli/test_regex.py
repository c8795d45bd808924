"""A user's regex (--key, --value, --header NAME=REGEX, --topic) through the real entry point:
matched by RE2 in linear time (a pattern Python's re takes hours on finishes at once, with the
right answer, with both kernels), RE2's syntax as the README states it, and every construct RE2
cannot match in linear time refused as a usage error (16) in one stderr line naming it."""

from __future__ import annotations

import os

import orjson
import pytest

import kseg
from tests.helpers import run_kseg

# Python's re backtracks 2**40 ways on these: hours; RE2 is linear. A regression fails by timeout.
TIMEOUT = 60
A40 = b"a" * 40
PATH_COMMANDS = [
    ["dump"],
    ["verify"],
    ["stats"],
    ["seek", "--time", "latest"],
    ["index", "check"],
    ["index", "rebuild", "--dry-run"],
]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A root with a topic named 40 a's and one named 40 a's then b, each holding records whose
    key, value and header value are 40 a's (offset 0) and 40 a's then b (offset 1); a few
    records for the syntax cases (offsets 2-6)."""
    root = tmp_path_factory.mktemp("regex") / "logs"
    for topic in ("a" * 40, "a" * 40 + "b"):
        with kseg.LogWriter(root / f"{topic}-0") as w:
            w.append(
                [
                    kseg.Record(A40, A40, 1_700_000_000_000, [("h", A40)]),
                    kseg.Record(A40 + b"b", A40 + b"b", 1_700_000_000_001, [("h", A40 + b"b")]),
                    kseg.Record(b"key-1", b"ends with a newline 1\n", 1_700_000_000_002, []),
                    kseg.Record(b"key-12", b"a.b", 1_700_000_000_003, []),
                    kseg.Record(b"KEY-3", b"\xff\xfe", 1_700_000_000_004, []),
                    kseg.Record(b"key-(4)", "é".encode(), 1_700_000_000_005, []),
                    kseg.Record(b"k5", b"line\nbreak", 1_700_000_000_006, []),
                ]
            )
    return root


def _offsets(proc, topic: str = "a" * 40) -> list[int]:
    return [
        e["offset"]
        for e in map(orjson.loads, proc.stdout.splitlines())
        if e["type"] == "record" and e["topic"] == topic
    ]


@pytest.mark.parametrize("kernel", ["rust", "python"])
@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (("--value", "(a+)+b"), [1]),
        (("--key", "^(a|aa)+b$"), [1]),
        (("--header", "h=(a*)*b"), [1]),
        (("--key", "^(a+)+$"), [0]),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else None,
)
def test_a_nested_quantifier_is_matched_in_linear_time(root, kernel, args, expect):
    """`--value '(a+)+b'` took 12 s on a 25-byte value with Python's re, doubling per byte; on
    40 bytes it would take hours. RE2 answers at once, and right."""
    env = {**os.environ, "KSEG_KERNEL": kernel}
    proc = run_kseg(
        "dump", root, "-f", "json", "--topic", "^a{40}$", *args, timeout=TIMEOUT, env=env
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert _offsets(proc) == expect


@pytest.mark.parametrize("args", PATH_COMMANDS, ids=" ".join)
def test_a_nested_quantifier_in_topic_is_linear(root, args):
    proc = run_kseg(*args, root, "--topic", "^(a+)+b$", "-f", "json", timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    topics = {e.get("topic") for e in map(orjson.loads, proc.stdout.splitlines())}
    assert topics - {None} == {"a" * 40 + "b"}


@pytest.mark.parametrize(
    ("option", "pattern", "expect"),
    [
        ("--key", r"^key-1$", [2]),  # $ is the very end (no final-newline exception)
        ("--value", r"newline 1$", []),  # ... so a value ending in \n does not match
        ("--value", r"(?m)newline 1$", [2]),  # (?m): before a newline too
        ("--key", r"\Akey-1\Z", [2]),  # \Z is \z (Python's \Z): \A...\Z keeps working
        ("--key", r"\Akey-1\z", [2]),
        ("--key", r"\Qkey-(4)\E", [5]),  # RE2's quoted literal
        ("--key", r"^key-[[:digit:]]{2}$", [3]),  # POSIX classes
        ("--key", r"(?i)^key-3$", [4]),
        ("--key", r"^K(?i)Ey-3$", [4]),  # flags from where they stand
        ("--key", r"^k(?i)EY-3$", []),
        ("--value", r"\xff", [4]),  # one character per byte
        ("--value", r"^.{2}$", [4, 5]),  # é is two bytes
        ("--value", "^é$", [5]),  # a UTF-8 argument is its bytes
        ("--value", r"^\x{e9}$", []),  # ... and \x{e9} is the byte 0xe9
        ("--value", r"line.break", []),  # . is not \n
        ("--value", r"(?s)line.break", [6]),
        ("--value", r"a\.b", [3]),
        ("--key", r"key-\d{2,}", [3]),
    ],
)
def test_the_documented_syntax(root, option, pattern, expect):
    proc = run_kseg("dump", root, "--topic", "^a{40}$", "-f", "json", option, pattern)
    assert proc.returncode == 0, proc.stderr
    assert _offsets(proc) == expect


# (pattern, what the one stderr line names)
UNSUPPORTED = [
    (r"(a)\1", r"backreference \1"),
    (r"(?P<x>a)(?P=x)", "backreference (?P=name)"),
    (r"(?<x>a)\k<x>", r"backreference \k"),
    ("a(?=b)", "lookahead (?=...)"),
    ("a(?!b)", "negative lookahead (?!...)"),
    ("(?<=a)b", "lookbehind (?<=...)"),
    ("(?<!a)b", "negative lookbehind (?<!...)"),
    ("(?>a+)b", "atomic group (?>...)"),
    ("a*+b", "possessive quantifier *+"),
    ("a++b", "possessive quantifier ++"),
    ("a?+b", "possessive quantifier ?+"),
    ("a{2,}+b", "possessive quantifier {2,}+"),
    ("(a)?(?(1)b|c)", "conditional (?(...)...)"),
    ("(a|b(?R))", "recursion (?R)"),
    ("(a|b(?1))", "recursion (?1)"),
]


@pytest.mark.parametrize(("pattern", "construct"), UNSUPPORTED, ids=[c for _, c in UNSUPPORTED])
def test_what_re2_cannot_do_in_linear_time_is_a_usage_error(root, pattern, construct):
    proc = run_kseg("dump", root, "--value", pattern)
    assert proc.returncode == 16 and proc.stdout == b""
    assert proc.stderr.decode().splitlines() == [
        f"kseg: Invalid value for --value: '{pattern}': {construct} is not supported"
        " (kseg matches in linear time; RE2 syntax) (see 'kseg dump --help')"
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("dump", "--key", "(a)\\1"),
        ("dump", "--header", "h=(a)\\1"),
        *((*c, "--topic", "(a)\\1") for c in PATH_COMMANDS),
    ],
    ids=" ".join,
)
def test_every_option_taking_a_regex_refuses_the_same(root, args):
    proc = run_kseg(*args, root)
    assert proc.returncode == 16 and proc.stdout == b""
    (line,) = proc.stderr.decode().splitlines()
    option = "--topic" if "--topic" in args else args[1]
    assert option in line and "'(a)\\1': backreference \\1 is not supported" in line


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("(", "not a valid regular expression: '(' (RE2 syntax: missing ): ()"),
        (
            "(?x) a",
            "not a valid regular expression: '(?x) a' (RE2 syntax: invalid perl operator: (?x)",
        ),
        ("a{1001}", "(RE2 syntax: invalid repetition size: {1001})"),
        ("a\n(", "not a valid regular expression: 'a\\n(' (RE2 syntax: missing ): a\\n()"),
        ("[a-z]{1000}" * 2000, "...': too large (its RE2 program would exceed 8 MiB)"),
        ("[a-z]{1000}" * 900, "...': too large (its RE2 program would exceed 8 MiB)"),
    ],
    ids=["syntax", "verbose flag", "repetition", "newline", "repeats", "program"],
)
def test_a_pattern_re2_refuses_is_one_line(root, pattern, says):
    proc = run_kseg("dump", root, "--key", pattern, timeout=TIMEOUT)
    assert proc.returncode == 16 and proc.stdout == b""
    (line,) = proc.stderr.decode().splitlines()
    assert says in line and line.startswith("kseg: Invalid value for --key: ")
