"""`kseg dump --jobs N`: a record search and --count walk the partitions in N worker processes;
stdout, stderr and the exit code are those of --jobs 1, in every format, with damage, selectors
and --limit (which runs in one process). A plain dump runs in one process whatever N."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from kseg.fixtures.tree import BASE_TS, FixedClock
from kseg.format.record import Record
from kseg.storage.tree import InputError
from kseg.storage.writer import LogWriter

from ..helpers import damaged_copy, same_with_jobs
from .test_search_combinations import _json_dump, _options, plain  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def damaged(tree, tmp_path_factory):
    return damaged_copy(tree, tmp_path_factory.mktemp("dump-jobs") / "logs")


@pytest.mark.parametrize(
    "opts",
    [
        ("--value-contains", "o"),
        ("-f", "json", "--key", "^key-[0-9]$", "--from-offset", "5", "--to-offset", "90"),
        ("-f", "table", "--value", ".", "--isolation", "read_committed"),
        ("--key", ".", "--format-string", "%t %p %o %k\\n", "--resync"),
        ("--count", "-f", "json", "--value", "order", "--topic", "^(orders|txn)$"),
        ("--count", "-f", "table", "--key", "1", "--resync"),
        ("-f", "json", "--key", ".", "--limit", "25"),  # a limit: one process, the same
        ("--count", "--limit", "30"),
    ],
)
def test_jobs_print_what_one_job_prints(damaged, tree, opts):
    r = same_with_jobs("dump", damaged, tree, *opts)
    assert r.returncode & 4 or "--limit" in opts  # the CRC error in orders-0 (past a limit)
    assert r.stdout


@pytest.fixture(scope="module")
def many_headers(tree, tmp_path_factory):
    """The fixture tree and a partition whose second batch holds records of many headers (made
    while written: they cannot leave a worker, kseg.dump.plan._in_order)."""
    import shutil

    root = tmp_path_factory.mktemp("dump-jobs-hdrs") / "logs"
    shutil.copytree(tree, root)
    with LogWriter(root / "hdrs-0", clock=FixedClock(), magic=2) as w:
        w.append([Record(key=b"key-%d" % i, value=b"v", timestamp=BASE_TS) for i in range(3)])
        for codec in ("none", "zstd"):
            hdrs = [("h", b"x%d" % (j % 3)) for j in range(5000)]
            w.append(
                [Record(key=b"key-9", value=b"v", timestamp=BASE_TS, headers=hdrs)],
                compression=codec,
            )
        w.append([Record(key=b"key-8", value=b"v", timestamp=BASE_TS)])
    return root


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_a_record_of_many_headers_is_shown_from_the_parent(many_headers, fmt):
    r = same_with_jobs("dump", many_headers, "--key", "^key-", "-f", fmt)
    assert r.returncode == 0 and r.stdout.count(b"key-9") >= 2
    assert fmt == "table" or r.stdout.count(b"x2") > 3000


def test_many_headers_with_a_format_string(many_headers):
    r = same_with_jobs("dump", many_headers, "--key", "^key-", "--format-string", "%k %h\\n")
    assert r.returncode == 0 and r.stdout.count(b"x1") > 3000


def test_every_search_and_count_with_jobs_equals_one_job(tree_with_bootstrap, plain):  # noqa: F811
    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(_options(plain))
    def prop(o):
        try:
            one = _json_dump(tree_with_bootstrap, **o, jobs=1)
        except InputError:
            with pytest.raises(InputError):
                _json_dump(tree_with_bootstrap, **o, jobs=3)
            return
        assert _json_dump(tree_with_bootstrap, **o, jobs=3) == one

    prop()
