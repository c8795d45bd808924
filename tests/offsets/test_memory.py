"""Issue 35, item 3: `kseg offsets` keeps state by what it shows (a listing: a small summary per
distinct group; --group: that group only), and running out of memory is one line and exit 8
wherever the MemoryError is raised (a generator being closed, a finalizer, the shutdown).

The input: many distinct groups' offset commits in one `__consumer_offsets` segment (the
probe's 1.9 M groups in 15 MB cost 1.9 GB), written at run time with kseg's own writer; fewer
groups here, with the bound per group (README, "Consumer-group offsets")."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from kseg.format.coordinator import offset_commit_key, offset_commit_value
from kseg.format.record import Record
from kseg.storage.writer import LogWriter
from tests.helpers import events

GROUPS = 10_000
T0 = 1_700_000_000_000
PER_GROUP = 600  # bytes of peak RSS per distinct group a listing may take (README)
MIB = 1 << 20
KERNELS = ("rust", "python")


def _write(pdir: Path, groups: int, batches: int = 4) -> None:
    """``groups`` distinct groups, each committing one offset of topic t, in a few gzip batches
    (as a busy coordinator's segment holds them)."""
    value = offset_commit_value(42, T0)
    per = groups // batches
    with LogWriter(pdir, clock=lambda: T0, compression="gzip") as w:
        for b in range(batches):
            n = range(b * per, (b + 1) * per if b < batches - 1 else groups)
            w.append([Record(offset_commit_key(f"group-{i}", "t", i % 8), value, T0) for i in n])


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("many-groups")
    _write(root / "__consumer_offsets-0", GROUPS)
    return root


@pytest.fixture(scope="module")
def few(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("few-groups")
    _write(root / "__consumer_offsets-0", 8, batches=1)
    return root


def _run(*args, limit: int, kernel: str, env: dict | None = None, argv=None):
    """kseg under an address-space limit: (exit code, stderr lines, stdout, peak RSS in bytes,
    from wait4 in a fresh interpreter: tests.safety.limits.run_with_rss)."""
    from tests.safety.limits import run_with_rss

    code, out, err, rss = run_with_rss(
        *args,
        env={**os.environ, "KSEG_KERNEL": kernel, **(env or {})},
        limit=limit,
        argv=argv,
    )
    return code, err.decode(errors="replace").splitlines(), out.decode(), rss


def _clean(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert "Traceback" not in text and "Exception ignored" not in text, text[-2000:]
    assert "MemoryError" not in text and "internal error" not in text, text[-2000:]


OOM = "kseg: out of memory (see the memory bound in the README's safety section)"


@pytest.mark.parametrize("kernel", KERNELS)
def test_listing_holds_a_small_summary_per_group(many, few, kernel):
    """10,000 groups listed: peak RSS above a listing of 8 groups stays under PER_GROUP bytes per
    group (the replay kept ~1,400 before: a Committed, a dict and empty containers each)."""
    args = ("--list", "-f", "json", "--now", str(T0))
    code, err, out, base = _run("offsets", few, *args, limit=1 << 30, kernel=kernel)
    assert (code, err) == (0, [])
    code, err, out, peak = _run("offsets", many, *args, limit=1 << 30, kernel=kernel)
    assert (code, err) == (0, [])
    rows = [e for e in events(out) if e["type"] == "group"]
    assert len(rows) == GROUPS and {e["offsets"] for e in rows} == {1}
    assert rows[0]["group"] == "group-0" and rows[-1]["group"] == "group-9999"  # sorted
    assert peak - base < GROUPS * PER_GROUP, (peak - base) / GROUPS


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("extra", [("--at", str(T0)), ("-f", "reset-csv")])
def test_one_group_keeps_only_that_groups_state(many, few, kernel, extra):
    """--group: the other 9,999 groups' records are read, not kept: the peak is that of a
    partition of 8 groups, within a few MiB (and far under what the listing needs)."""
    args = ("--group", "group-777", "--now", str(T0), "-f", "json", *extra)
    code, _err, _out, base = _run("offsets", few, "--group", "group-7", *args[2:], limit=1 << 30,
                                  kernel=kernel)  # fmt: skip
    assert code == 0
    code, err, out, peak = _run("offsets", many, *args, limit=1 << 30, kernel=kernel)
    assert code == 0 and len(err) == 1 and "partition count" in err[0], err
    if extra == ("-f", "reset-csv"):
        assert out == "t,1,42\n"
    else:
        assert [(e["topic"], e["partition"], e["offset"]) for e in events(out)
                if e["type"] == "offset"] == [("t", 1, 42)]  # fmt: skip
    assert peak - base < 8 * MIB, (peak - base) / MIB


@pytest.mark.parametrize("kernel", KERNELS)
def test_listing_out_of_memory_is_one_line_and_exit_8(many, kernel):
    """The listing under a limit it cannot fit in: one line, exit 8, no traceback, also from the
    generators the MemoryError unwinds through."""
    code, err, _out, _peak = _run(
        "offsets", many, "--list", "-f", "json", limit=36 * MIB, kernel=kernel
    )
    _clean(err)
    assert (code, err) == (8, [OOM])


# a command that succeeds, with a MemoryError raised where Python cannot raise it (a generator
# closed by the garbage collector, a finalizer, the interpreter's shutdown): printed by Python
# as "Exception ignored in" with a traceback, unless the console script's hook takes it
_UNRAISABLE = """
import sys
import kseg.cli.entry as entry

def gen():
    try:
        yield 1
    finally:
        raise MemoryError

class Late:
    def __del__(self):
        raise MemoryError

if sys.argv[1] == "generator":
    import kseg.cli.startup as startup

    resume = startup.resume

    def resume_then_garbage():  # as the command begins (start-up ran without the collector)
        resume()
        g = gen(); next(g); cycle = [g]; cycle.append(cycle)
        del g, cycle  # a cycle: closed by the garbage collector, during the run

    startup.resume = resume_then_garbage
else:
    sys.modules["late"] = Late()  # finalized at shutdown, after the status is decided
sys.argv = ["kseg", "offsets", sys.argv[2], "--list", "-f", "json"]
entry.main()
"""


@pytest.mark.parametrize("where", ["generator", "shutdown"])
def test_memory_error_python_cannot_raise_is_one_line_and_exit_8(few, where):
    argv = [sys.executable, "-c", textwrap.dedent(_UNRAISABLE), where, str(few)]
    code, err, out, _peak = _run(limit=1 << 30, kernel="python", argv=argv)
    _clean(err)
    assert (code, err) == (8, [OOM])
    assert len([e for e in events(out) if e["type"] == "group"]) == 8  # the output is whole
