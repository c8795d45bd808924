"""kseg.storage.jobs: a walk's items over forked workers, events back in input order."""

from __future__ import annotations

import os
import signal

import pytest

from kseg.outcome import Outcome
from kseg.storage import jobs, walked


@pytest.fixture(autouse=True)
def fork_anyway(request, monkeypatch):
    """The engine's mechanics fork even when a thread some earlier test left behind runs in
    this pytest worker (jobs.forkable would keep the walk here; its own tests are below)."""
    if "forkable" not in request.function.__name__ and "process" not in request.function.__name__:
        monkeypatch.setattr(jobs, "forkable", lambda: True)


class Tally:
    """A run's counters as the engine moves them (kseg.storage.jobs.Shared)."""

    def __init__(self) -> None:
        self.events = 0
        self.outcome = Outcome.OK
        self.pids: set[int] = set()

    def fork_reset(self) -> None:
        self.events, self.outcome, self.pids = 0, Outcome.OK, set()

    def fork_state(self):
        return self.events, self.outcome, self.pids

    def fork_absorb(self, state) -> None:
        events, outcome, pids = state
        self.events += events
        self.outcome |= outcome
        self.pids |= pids

    def work(self, item):
        """``item`` events (a skewed load: item 0 is the largest), then the item back."""
        self.pids.add(os.getpid())
        for k in range(item["n"]):
            self.events += 1
            yield {"item": item["name"], "k": k}
        if item.get("bad"):
            self.outcome |= Outcome.INVALID_DATA
        if item.get("raise"):
            raise item["raise"]
        if item.get("die"):
            os.kill(os.getpid(), signal.SIGKILL)
        return item["name"]


def run(tally: Tally, items, n: int):
    out, values = [], []
    for walk in jobs.in_order(tally.work, items, n, tally):
        value = yield_all(walk, out)
        values.append(value)
    return out, values


def yield_all(gen, out: list):
    while True:
        try:
            out.append(next(gen))
        except StopIteration as stop:
            return stop.value


ITEMS = [
    {"name": "big", "n": 20_000},
    {"name": "none", "n": 0},
    {"name": "bad", "n": 3, "bad": True},
    *({"name": f"p{i}", "n": i * 7} for i in range(12)),
]


@pytest.mark.parametrize("n", [2, 3, 8])
def test_events_values_and_counters_are_those_of_one_job(n):
    serial, parallel = Tally(), Tally()
    assert run(parallel, ITEMS, n) == run(serial, ITEMS, 1)
    assert (parallel.events, parallel.outcome) == (serial.events, serial.outcome)
    assert parallel.outcome == Outcome.INVALID_DATA
    assert serial.pids == {os.getpid()}  # one job: in this process, no fork
    assert os.getpid() not in parallel.pids and 2 <= len(parallel.pids) <= n


def test_one_item_runs_here():
    t = Tally()
    run(t, ITEMS[:1], 4)
    assert t.pids == {os.getpid()}


def test_an_exception_arrives_at_its_items_place_with_its_type():
    items = [*ITEMS[:3], {"name": "boom", "n": 2, "raise": KeyError("no such key")}, *ITEMS[3:]]
    out: list = []
    t = Tally()
    with pytest.raises(KeyError, match="no such key"):
        for walk in jobs.in_order(t.work, items, 3, t):
            yield_all(walk, out)
    # everything before it, in order, and the failing item's own events before its error
    expected: list = []
    for item in items[:4]:
        expected += [{"item": item["name"], "k": k} for k in range(item["n"])]
    assert out == expected


class Unpicklable(Exception):
    def __init__(self, a, b) -> None:  # pickling re-calls __init__ with args: it fails
        super().__init__(f"{a} and {b}")


def test_an_exception_whose_init_does_not_pickle_keeps_its_type_text_and_attributes():
    """Pickling calls ``__init__`` again with ``args``: kseg's errors with their own signatures
    (FileShrankError, ...) are rebuilt field by field instead, so the CLI says what it would
    with one job."""
    from kseg.storage.file_errors import FileShrankError

    t = Tally()
    with pytest.raises(Unpicklable, match="x and y"):
        run(t, [ITEMS[1], {"name": "u", "n": 1, "raise": Unpicklable("x", "y")}, ITEMS[1]], 2)
    shrank = FileShrankError("/d/00.log", 4096, 10_000, 100)
    with pytest.raises(FileShrankError) as got:
        run(t, [ITEMS[1], {"name": "s", "n": 1, "raise": shrank}, ITEMS[1]], 2)
    assert str(got.value) == str(shrank) and got.value.position == 4096
    assert (got.value.errno, got.value.filename) == (shrank.errno, "/d/00.log")


class Unshippable(Exception):
    def __init__(self, a) -> None:
        super().__init__(f"held {a!r}")
        self.held = a


def test_an_exception_holding_what_does_not_pickle_keeps_its_text():
    t = Tally()
    with pytest.raises(jobs.WorkerError, match="held <function"):
        run(t, [{"name": "u", "n": 1, "raise": Unshippable(lambda: 0)}, ITEMS[1]], 2)


@pytest.mark.parametrize(
    "v2, v1, expected",
    [
        ("200000 100000\n", None, 2),  # cgroup v2: 2 CPUs
        ("150000 100000\n", None, 2),  # 1.5 CPUs: rounded up
        ("max 100000\n", None, None),  # no quota: the affinity
        (None, ("300000", "100000"), 3),  # cgroup v1
        (None, ("-1", "100000"), None),
        (None, None, None),
    ],
)
def test_the_default_is_no_more_workers_than_the_cgroup_quota_allows(
    tmp_path, monkeypatch, v2, v1, expected
):
    for name, text in [
        ("CGROUP_V2_CPU_MAX", v2),
        *zip(("CGROUP_V1_QUOTA", "CGROUP_V1_PERIOD"), v1 or (None, None), strict=True),
    ]:
        f = tmp_path / name
        if text is not None:
            f.write_text(text)
        monkeypatch.setattr(jobs, name, str(f))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert jobs.cpu_quota() == expected
    assert jobs.cores() == (expected or 64)


def test_a_worker_killed_is_an_error_at_its_place_naming_the_item_and_signal():
    t = Tally()
    out: list = []
    items = [{"name": "a", "n": 5}, {"name": "dies", "n": 1, "die": True}, {"name": "c", "n": 5}]
    with pytest.raises(jobs.WorkerError, match=r"'dies'.*signal SIGKILL"):
        for walk in jobs.in_order(t.work, items, 2, t):
            yield_all(walk, out)
    names = [e["item"] for e in out]  # what the dead worker had not sent yet is gone
    assert names[:5] == ["a"] * 5 and set(names[5:]) <= {"dies"}


def test_a_worker_dead_after_its_item_is_no_closed_pipe_and_its_next_item_goes_on():
    """A worker that dies once its item is done (the OOM killer, a kill) before it is handed
    the next one: that item goes to another worker; it is not a BrokenPipeError raised in
    the parent (which the CLI takes for `| head` closing stdout: output cut short, silently)."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    t = Tally()

    def work(item):
        if item["name"] == "dies after":
            os.write(ready_w, os.getpid().to_bytes(4, "little"))
            os.read(go_r, 1)  # its end waits until the parent has stopped reading
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, 0.01)  # dies waiting for its next item
            yield {"item": item["name"], "k": 0}
            return item["name"]
        return (yield from t.work(item))

    items = [{"name": "a", "n": 3000}, {"name": "dies after"}, *ITEMS[3:6]]
    out: list = []
    values = []
    try:
        for i, walk in enumerate(jobs.in_order(work, items, 2, t)):
            if i == 0:
                out.append(next(walk))  # the pool is up; the parent stops reading here
                pid = int.from_bytes(os.read(ready_r, 4), "little")
                os.write(go_w, b"x")
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped
            values.append(yield_all(walk, out))
    finally:
        for fd in (ready_r, ready_w, go_r, go_w):
            os.close(fd)
    assert values == [item["name"] for item in items]
    expected = [{"item": "a", "k": k} for k in range(3000)] + [{"item": "dies after", "k": 0}]
    for item in items[2:]:
        expected += [{"item": item["name"], "k": k} for k in range(item["n"])]
    assert out == expected
    assert _children() == []


def test_no_worker_outlives_the_walk():
    t = Tally()
    gen = jobs.in_order(t.work, ITEMS, 3, t)
    first = next(gen)
    next(first)  # the pool is up, item 0 under way
    assert len(_children()) == 3
    first.close()
    gen.close()  # the consumer stops early (an error, an interrupt, a --limit)
    assert _children() == []  # killed and reaped: not even a zombie


def _children() -> list[int]:
    try:
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
            mine = [int(p) for p in f.read().split()]
    except OSError:
        pytest.skip("needs /proc")
    # only forks of this process (same command line) are the engine's workers
    return [p for p in mine if _is_fork_of_this_test(p)]


def _is_fork_of_this_test(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as f:
            return cmd == f.read()  # a fork has its parent's command line
    except OSError:
        return False


def test_read_ahead_is_bounded(monkeypatch):
    """Items after the one being shown are read ahead at most AHEAD_BYTES each (plus one
    message): the rest waits in the worker, blocked on its socket."""
    monkeypatch.setattr(jobs, "AHEAD_BYTES", 64 << 10)
    seen = []
    real_pump = jobs._Pool._pump

    def pump(self, head):
        real_pump(self, head)
        seen.append(max((w.ahead for w in self.workers if w.item != head), default=0))

    monkeypatch.setattr(jobs._Pool, "_pump", pump)
    items = [{"name": "slow", "n": 200_000}, {"name": "chatty", "n": 200_000}]
    serial, parallel = Tally(), Tally()
    assert run(parallel, items, 2) == run(serial, items, 1)
    one_message = 600 << 10  # CHUNK_EVENTS small dicts, pickled
    assert max(seen) < (64 << 10) + one_message


def test_progress_reaches_the_parents_watcher(monkeypatch):
    monkeypatch.setattr(jobs, "WALKED_EVERY", 0.0)
    got: list = []
    previous = walked.watch(lambda log, pos: got.append((log, pos)))
    try:

        class Walker(Tally):
            def work(self, item):
                for pos in (10, 20, 30):
                    walked._watcher(item["name"], pos)
                yield {"item": item["name"]}
                return None

        t = Walker()
        run(t, [{"name": "a"}, {"name": "b"}, {"name": "c"}], 2)
    finally:
        walked.watch(previous)
    assert sorted(got) == [(n, p) for n in "abc" for p in (10, 20, 30)]


def test_jobs_none_is_every_core():
    assert jobs.jobs_for(None) == jobs.cores() >= 1
    assert jobs.jobs_for(3) == 3


def test_a_running_thread_keeps_the_walk_in_this_process():
    """A fork copies only the forking thread: with another one running, no worker is forked."""
    import threading

    stop = threading.Event()
    th = threading.Thread(target=stop.wait)
    th.start()
    try:
        t = Tally()
        run(t, ITEMS, 3)
    finally:
        stop.set()
        th.join()
    assert t.pids == {os.getpid()}


def test_uris_keep_the_walk_in_this_process(monkeypatch):
    """pyarrow's file systems (S3, HDFS) own native threads a fork would not carry."""
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow.fs", object())
    t = Tally()
    run(t, ITEMS, 3)
    assert t.pids == {os.getpid()}


def test_a_worker_never_holds_the_parents_log_dir_locks(tmp_path):
    """An OFD lock lasts while any copy of its descriptor is open: a forked worker's copy would
    keep the log dir locked after the parent released it. Forked children close theirs."""
    from kseg.storage.lock import LogDirLocks

    held = LogDirLocks()
    assert held.acquire(tmp_path)
    r, w = os.pipe()
    up_r, up_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a worker (the fork's handlers have run): says so, alive until told
        os.close(w)
        os.write(up_w, b"!")
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    os.close(up_w)
    try:
        assert os.read(up_r, 1) == b"!"
        held.release()
        other = LogDirLocks()
        assert other.acquire(tmp_path), "the worker's copy kept the log dir locked"
        other.release()
    finally:
        os.close(w)
        os.close(up_r)
        os.waitpid(pid, 0)


def test_default_jobs_walk_a_small_input_in_one_process(tmp_path, monkeypatch):
    """Without --jobs: every core, but no more workers than 32 MiB of segments each (a fork
    costs more than it saves on less); --jobs N as given, whatever the size."""
    from kseg.storage.tree import Item, Target

    monkeypatch.setattr(jobs, "cores", lambda: 8)
    mib = 1 << 20

    def target(name: str, *sizes: int) -> Target:
        pdir = tmp_path / name
        pdir.mkdir()
        logs = []
        for i, size in enumerate(sizes):
            log = pdir / f"{i:020d}.log"
            with open(log, "wb") as f:
                f.truncate(size)  # sparse: the size is what counts
            logs.append(log)
        return Target(pdir, logs)

    small = [target(f"s-{i}", 10 * mib) for i in range(3)]  # 30 MiB in 3 partitions
    assert jobs.workers_for(None, small) == 1
    assert jobs.workers_for(2, small) == 2  # asked for: as given
    big = [target(f"b-{i}", 20 * mib, 20 * mib) for i in range(3)]  # 120 MiB: 3 workers
    assert jobs.workers_for(None, big) == 3
    assert jobs.workers_for(None, big + small) == 4  # 150 MiB
    many = [target(f"m-{i}", 40 * mib) for i in range(20)]
    assert jobs.workers_for(None, many) == 8  # the cores, at most
    # a dump's items (a partition dir's .log files), a replica group, salvage's tuples
    items = [Item("partition", t.partition_dir, tmp_path) for t in big]
    assert jobs.workers_for(None, items) == 3
    assert jobs.workers_for(None, [(("b", 0), big[:2]), (("b", 1), big[2:])]) == 2
    assert jobs.workers_for(None, [(t, False, None) for t in small]) == 1
    # a segment gone or unreadable counts nothing (the walk reports it), never an error here
    gone = Target(tmp_path / "gone-0", [tmp_path / "gone-0" / f"{0:020d}.log"])
    assert jobs.input_bytes(gone) == 0 and jobs.workers_for(None, [gone, gone]) == 1
    # what the engine cannot size counts as enough for a worker
    assert jobs.workers_for(None, [{"n": 1}, {"n": 2}]) == 2

    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    tally = Tally()
    assert _values(tally, small) == [str(t.partition_dir) for t in small]
    assert forks == [] and tally.pids == {os.getpid()}


def _values(tally: Tally, targets) -> list:
    """Walk ``targets`` with --jobs left to the default: each item's value."""

    def work(t):
        tally.pids.add(os.getpid())
        yield {"target": str(t.partition_dir)}
        return str(t.partition_dir)

    values = []
    for walk in jobs.in_order(work, targets, None, tally):
        try:
            while True:
                next(walk)
        except StopIteration as done:
            values.append(done.value)
    return values
