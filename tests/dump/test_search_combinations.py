"""Every combination of dump's record search (--key, --value, --header, --key-eq,
--value-contains) with the selectors (--topic, --partition, --from/--to-offset,
--from/--to-time), --limit and --count equals "filter the plain dump by hand": the JSON dump of
everything, each selector applied in Python by the README's rules ("kseg dump": Selection and
Record search). So no combination can silently drop or add a record.

The model (``_expected``), from the README:
- --topic (a search on the topic name) / --partition select partition dirs of the root; a root's own
  files (bootstrap.checkpoint: records of no topic) only when neither is given;
- --from/--to-offset and --from/--to-time: inclusive, on each record's offset and timestamp
  (control records too: they are shown when selected and no search option is given);
- search options: AND of all, on the raw bytes (RE2 patterns, searched; the model matches each
  with the Python bytes pattern that means the same, ``ORACLE``); null never matches; control
  records never match;
- --limit N: the first N of what is selected, in dump order (a search counts matches);
- output: each selected record, after its batch line (a batch shows only with a selected
  record when any selector is given) and its file line;
- --count: per place (partition dir; bootstrap.checkpoint on its own) the number of data
  records shown, places in dump order until --limit is spent, then the total.

Hypothesis drives the library entry the CLI calls (DumpRun, rendered as JSON Lines by
kseg.render.show_dump) over a small tree built once; a handful of fixed combinations also go
through the real `kseg` as a subprocess. Run under both kernels (KSEG_KERNEL=rust|python)."""

from __future__ import annotations

import base64
import io
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kseg.dump.options import DumpOptions, search_options
from kseg.dump.run import DumpRun
from kseg.render import show_dump
from kseg.render.dump_json import JSON_LINES
from kseg.storage.tree import InputError
from tests.helpers import events, run_kseg

TOPICS = [None, "^orders$", "o", "^txn$", "^(upgrade|skewed)$", "ed", ""]
KEYS = ["^key-1$", "key-1", "^key-(3|5)$", "(?i)KEY-2", r"\bkey-7\b", "^$", "", "key-1?2", "[0-9]$"]
VALUES = [
    "order 1",
    "^order 2",
    "(?i)ORDER 3",
    "[a-f]{6}",
    "1$",
    r"\Border",
    r"\Qorder 5\E",
    r"[[:digit:]]\z",
    "orders",
    "txn",
    "(o+)+r",
]
HEADERS = ["trace-id", "source", "source=web", "source=^w", "trace-id=0$", "nope", "source="]
# an RE2 pattern -> the Python bytes pattern that means the same, where they differ (RE2's $ is
# the very end without (?m); Python's also matches before a final newline)
ORACLE = {
    "^key-1$": r"^key-1\Z",
    "^key-(3|5)$": r"^key-(3|5)\Z",
    "^$": r"^\Z",
    "[0-9]$": r"[0-9]\Z",
    "1$": r"1\Z",
    r"\Qorder 5\E": "order 5",
    r"[[:digit:]]\z": r"[0-9]\Z",
    "0$": r"0\Z",  # --header trace-id=0$
}


def _py(p: str) -> bytes:
    return ORACLE.get(p, p).encode()


KEY_EQ = ["key-1", "", "key-12", "order"]
CONTAINS = ["order 1", "orders", "web", "a", "zzz", "metadata"]
POOLS = {
    "key": KEYS,
    "value": VALUES,
    "header": HEADERS,
    "key_eq": KEY_EQ,
    "value_contains": CONTAINS,
}


def _b64(v):
    return None if v is None else base64.b64decode(v)


def _json_dump(root, **kw) -> list[dict]:
    """The library entry `kseg dump -f json --payload base64` runs: DumpRun + show_dump."""
    filt, _ = search_options(
        kw.pop("key", None),
        kw.pop("value", None),
        kw.pop("header", None),
        kw.pop("key_eq", None),
        kw.pop("value_contains", None),
        None,
    )
    count = kw.pop("count", False)
    opts = DumpOptions(
        payload="base64",
        json_lines=None if count else JSON_LINES,
        record_filter=filt,
        count=count,
        **kw,
    )
    run = DumpRun([root], opts)
    if count:
        return [ev for chunk in run.chunks() for ev in chunk]
    out = io.BytesIO()
    show_dump(run.chunks(), "json", out)
    return events(out.getvalue())


@pytest.fixture(scope="module")
def plain(tree_with_bootstrap):
    evs = _json_dump(tree_with_bootstrap)
    assert not [e for e in evs if e["type"] == "error"]
    recs = [e for e in evs if e["type"] == "record"]
    # the tree exercises what the options look at
    assert any(e.get("topic") is None for e in recs)  # bootstrap.checkpoint
    assert any(e["key"] is None for e in recs) and any(e["value"] is None for e in recs)
    assert any(e["headers"] for e in recs)
    assert any(e["type"] == "control" for e in evs)
    return evs


def _matches(e: dict, o: dict) -> bool:
    if e["type"] != "record":
        return False
    key, value = _b64(e["key"]), _b64(e["value"])
    headers = [(n, _b64(v)) for n, v in e["headers"]]
    for k in o.get("key_eq") or ():
        if key != k.encode():
            return False
    for p in o.get("key") or ():
        if key is None or re.search(_py(p), key) is None:
            return False
    for c in o.get("value_contains") or ():
        if value is None or c.encode() not in value:
            return False
    for p in o.get("value") or ():
        if value is None or re.search(_py(p), value) is None:
            return False
    for h in o.get("header") or ():
        name, eq, rx = h.partition("=")
        if not any(
            n == name and (not eq or (v is not None and re.search(_py(rx), v))) for n, v in headers
        ):
            return False
    return True


SEARCH = ("key", "value", "header", "key_eq", "value_contains")


def _selected(e: dict, o: dict) -> bool:
    """Does the dump show this record or control record (before --limit)?"""
    if not _selected_place(e, o):
        return False
    off, ts = e["offset"], e["timestamp"]
    if o.get("from_offset") is not None and off < o["from_offset"]:
        return False
    if o.get("to_offset") is not None and off > o["to_offset"]:
        return False
    if o.get("from_time") is not None and ts < o["from_time"]:
        return False
    if o.get("to_time") is not None and ts > o["to_time"]:
        return False
    if any(o.get(k) for k in SEARCH):
        return _matches(e, o)
    return True


def _place(e: dict):
    return (e["topic"], e["partition"]) if e.get("topic") is not None else e["file"]


def _expected(plain: list[dict], o: dict) -> list[dict]:
    chosen = [e for e in plain if e["type"] in ("record", "control") and _selected(e, o)]
    return chosen if o.get("limit") is None else chosen[: o["limit"]]


def _expected_counts(plain: list[dict], o: dict) -> list[tuple]:
    """(place, matches) in dump order, until --limit is spent."""
    places: dict = {}
    for e in plain:
        if e["type"] == "file" and e["kind"] in ("log", "bootstrap_checkpoint"):
            if not _selected_place(e, o):
                continue
            places.setdefault(_place(e), 0)
    taken = 0
    out = []
    chosen = {id(e) for e in _expected(plain, o)}
    for place in places:
        n = 0
        for e in plain:
            if id(e) in chosen and _place(e) == place:
                taken += 1
                n += e["type"] == "record"
        out.append((place, n))
        if o.get("limit") is not None and taken >= o["limit"]:
            break
    return out


def _a_selection(o: dict) -> bool:
    return o.get("topic") is not None or o.get("partition") is not None


def _selected_place(e: dict, o: dict) -> bool:
    """Is the event's place selected: a partition by --topic/--partition, a root's own file
    only without either."""
    if e.get("topic") is None:
        return not _a_selection(o)
    return (o.get("topic") is None or re.search(o["topic"], e["topic"]) is not None) and (
        o.get("partition") is None or e["partition"] == o["partition"]
    )


def _check_structure(got: list[dict], o: dict) -> None:
    """Each record after its batch and file lines; with a selector, no batch or record file
    shown without a selected record in it."""
    selecting = any(
        o.get(k) is not None for k in ("from_offset", "to_offset", "from_time", "to_time")
    ) or any(o.get(k) for k in SEARCH)
    file = batch = None
    empty: list = []  # the batch and record-file lines shown with no selected record yet
    for e in got:
        t = e["type"]
        if t == "error":
            raise AssertionError(e)
        if t == "file" and e["kind"] in ("log", "bootstrap_checkpoint"):
            assert not (selecting and empty), f"nothing selected from {empty[0]}"
            file, batch, empty = e["file"], None, [e]
        elif t == "batch":
            assert e["file"] == file, e
            assert not (selecting and batch is not None and batch in empty), batch
            batch = e
            empty.append(e)
        elif t in ("record", "control"):
            assert batch is not None and e["file"] == file, e
            assert batch["base_offset"] <= e["offset"] <= batch["last_offset"], e
            empty = []
    assert not (selecting and empty), f"nothing selected from {empty[0]}"


def _check(root, plain, o: dict, got: list[dict] | None = None) -> None:
    want = _expected(plain, o)
    if _a_selection(o) and not any(e["type"] == "file" and _selected_place(e, o) for e in plain):
        with pytest.raises(InputError, match="no partition matches"):
            _json_dump(root, **o)
        return
    if o.get("count"):
        got = _json_dump(root, **o) if got is None else got
        counts = [e for e in got if e["type"] == "match_count"]
        got_counts = [(_place(e), e["matches"]) for e in counts]
        assert got_counts == _expected_counts(plain, o), o
        total = got[-1]
        assert total["type"] == "match_total"
        assert total["matches"] == sum(e["type"] == "record" for e in want), o
        assert total["partitions"] == len(counts)
        return
    got = _json_dump(root, **o) if got is None else got
    shown = [e for e in got if e["type"] in ("record", "control")]
    assert shown == want, o
    _check_structure(got, o)


@st.composite
def _options(draw, plain):
    ts = sorted({e["timestamp"] for e in plain if e["type"] in ("record", "control")})
    offs = sorted({e["offset"] for e in plain if e["type"] in ("record", "control")})
    times = st.none() | st.sampled_from(ts).flatmap(lambda t: st.sampled_from([t - 1, t, t + 1]))
    offsets = st.none() | st.sampled_from(offs) | st.integers(-1, max(offs) + 2)

    def window(values):
        lo, hi = draw(values), draw(values)
        if lo is not None and hi is not None and lo > hi and draw(st.booleans()):
            lo, hi = hi, lo  # mostly a window that holds something; sometimes an empty one
        return lo, hi

    (from_offset, to_offset), (from_time, to_time) = window(offsets), window(times)
    o = {
        "topic": draw(st.sampled_from(TOPICS)),
        "partition": draw(st.none() | st.integers(0, 2)),
        "from_offset": from_offset,
        "to_offset": to_offset,
        "from_time": from_time,
        "to_time": to_time,
        "limit": draw(st.none() | st.integers(0, 40)),
        "count": draw(st.booleans()),
    }
    # at most two kinds of search option at once (all five together rarely match anything)
    for kind in draw(st.sets(st.sampled_from(SEARCH), max_size=2)):
        o[kind] = draw(st.lists(st.sampled_from(POOLS[kind]), min_size=1, max_size=2))
    if o["from_offset"] is not None and o["from_offset"] < 0:
        o["from_offset"] = None  # the CLI refuses a negative offset (exit 16)
    if o["to_offset"] is not None and o["to_offset"] < 0:
        o["to_offset"] = None
    return o


def test_every_combination_equals_filtering_the_plain_dump(tree_with_bootstrap, plain):
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(_options(plain))
    @example({"to_offset": 3})  # inside a magic-1 gzip wrapper (logappend-0 offsets 3-5)
    @example({"topic": "^txn$", "value_contains": ["txn"]})  # only bootstrap's TopicRecord has it
    @example({"limit": 3, "count": True})  # bootstrap.checkpoint's records come first
    def prop(o):
        _check(tree_with_bootstrap, plain, o)

    prop()


FIXED = [
    {"topic": "^orders$", "key": ["^key-1$"], "from_time": 1_700_000_000_050, "limit": 5},
    {"partition": 0, "value_contains": ["orders"], "count": True},  # 0: only bootstrap's
    {"partition": 1, "value": ["^order 1"], "limit": 4, "count": True},
    {"value_contains": ["orders"]},  # the bootstrap.checkpoint's TopicRecords
    {"topic": "^(txn|skewed)$", "from_offset": 10, "to_offset": 60, "header": ["source=web"]},
    {"key_eq": ["key-3"], "to_time": 1_700_000_000_090, "limit": 7, "count": True},
]


def _args(o: dict) -> list[str]:
    args = []
    for k, v in o.items():
        flag = "--" + k.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            args.append(flag)
        elif isinstance(v, list):
            for x in v:
                args += [flag, x]
        else:
            args += [flag, str(v)]
    return args


@pytest.mark.parametrize("o", FIXED, ids=lambda o: " ".join(_args(o)))
def test_the_real_kseg_agrees(tree_with_bootstrap, plain, o):
    proc = run_kseg("dump", tree_with_bootstrap, "-f", "json", "--payload", "base64", *_args(o))
    assert proc.returncode == 0, proc.stderr
    got = events(proc.stdout)
    _check(tree_with_bootstrap, plain, o, got)
    assert got == _json_dump(tree_with_bootstrap, **o)
    assert _expected(plain, o) or o == FIXED[1]  # each fixed case but one selects something
