"""The kseg Spark source's record search options (key, value, header, keyEq, valueContains) and
the pushed-down key == bytes: the same rows as `kseg dump` with the same filter."""

from __future__ import annotations

import orjson
import pytest

import kseg
from tests.helpers import run_kseg

pytestmark = pytest.mark.spark


def _dump_offsets(tree, *args) -> set[tuple]:
    proc = run_kseg("dump", tree, "-f", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return {
        (e["topic"], e["partition"], e["offset"])
        for e in map(orjson.loads, proc.stdout.splitlines())
        if e["type"] == "record"
    }


def _rows(df) -> set[tuple]:
    return {
        (r.topic, r.partition, r.offset)
        for r in df.select("topic", "partition", "offset").collect()
    }


@pytest.mark.parametrize(
    ("options", "args"),
    [
        ({"key": "key-1[0-9]$"}, ("--key", "key-1[0-9]$")),
        ({"value": "^order 2"}, ("--value", "^order 2")),
        ({"keyEq": "key-3"}, ("--key-eq", "key-3")),
        ({"valueContains": "5fece"}, ("--value-contains", "5fece")),
        ({"header": "trace-id=3$", "key": "key"}, ("--header", "trace-id=3$", "--key", "key")),
    ],
)
def test_source_options_match_dump(spark, tree, options, args):
    want = _dump_offsets(tree, *args)
    assert want
    got = _rows(kseg.spark.read(spark, [str(tree)], **options))
    assert got == want


def test_a_bad_regex_fails_on_the_driver(spark, tree):
    with pytest.raises(Exception, match="key"):
        kseg.spark.read(spark, [str(tree)], key="(").count()


@pytest.mark.parametrize("option", ["key", "value", "header", "topic"])
def test_a_regex_re2_cannot_match_in_linear_time_fails_on_the_driver(spark, tree, option):
    """The source compiles its patterns as `kseg dump` does (RE2, kseg.format.regex)."""
    pattern = "h=(a)\\1" if option == "header" else "(a)\\1"
    with pytest.raises(Exception, match=r"backreference \\1 is not supported"):
        kseg.spark.read(spark, [str(tree)], **{option: pattern}).count()


def test_key_equality_is_pushed_down(spark, tree):
    from pyspark.sql.datasource import EqualTo

    from kseg.spark.source import KsegPushdownReader

    reader = KsegPushdownReader({"path": str(tree), "filterPushdown": "true"})
    filters = [EqualTo(("key",), b"key-3")]
    assert list(reader.pushFilters(filters)) == filters  # Spark still applies it to the rows
    f = reader._record_filter()
    assert f is not None and f.key_eq == (b"key-3",)
    df = kseg.spark.read(spark, [str(tree)])
    got = _rows(df.where(df.key == b"key-3"))
    assert got == _dump_offsets(tree, "--key-eq", "key-3")
