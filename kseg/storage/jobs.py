"""Every core: a walk's per-partition work spread over worker processes, its events handed back in
the order of the inputs, so ``--jobs N`` prints exactly what ``--jobs 1`` prints.

``in_order(work, items, jobs, shared)`` yields, for each item in turn, a generator of its events
that returns what ``work(item)`` returns: the caller consumes it with ``yield from`` as it would
``work(item)`` itself. With one job (or one item) it *is* ``work(item)``, run in this process.
With more, ``work`` runs in forked workers (fork: nothing is pickled on the way in, the workers
start in milliseconds and share the parent's pages; no thread runs in kseg's process when it
forks: the progress bar redraws from the walk, kseg.render.progress; where one does, or where
pyarrow reads URIs, the walk stays in this process: ``forkable``), and:

- **Order**: events come back per item, items in input order; a worker that finishes early gets
  the next item while its results wait (the workers never idle behind a slow partition).
- **Bounded memory**: a worker sends its events in small pickled chunks over a socket. The parent
  reads ahead at most ``AHEAD_BYTES`` per worker for items other than the one being shown; past
  that it stops reading and the worker blocks on the full socket. So memory is the workers' own
  walks plus a constant, whatever an item emits.
- **Counters**: a run's counters (partitions, findings, outcome) live in the run object, which
  each worker has its own copy of. ``shared`` says how to move them: the worker zeroes them before
  an item (``fork_reset``) and sends them after it (``fork_state``); the parent adds them when that
  item's events have all been shown (``fork_absorb``), so the run's totals are those of --jobs 1.
- **Errors**: an exception raised by ``work`` in a worker is raised again in the parent at that
  item's place in the order (its type, args and attributes kept; a ``WorkerError`` with its text
  only where even those do not pickle).
- **Interrupts**: the workers ignore SIGINT (the terminal sends it to the whole process group);
  the parent's interrupt stops and reaps every worker before it propagates, so Ctrl-C is still one
  line and exit 32. A worker whose parent dies exits (the kernel's parent-death signal, and a
  closed socket on its next send).
- **Progress**: a worker reports how far it has read (kseg.storage.walked) to the parent, which
  hands it to its own watcher: the bar shows the sum of every worker's walk.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kseg.storage import walked

if TYPE_CHECKING:  # imported when a pool starts: --jobs 1 and one partition pay nothing
    import socket
    from multiprocessing.connection import Connection

AHEAD_BYTES = 4 << 20  # events read ahead per worker for an item not yet shown
CHUNK_EVENTS = 512  # events per message a worker sends
CHUNK_SECONDS = 0.05  # ... or sooner, when events trickle (a search's rare matches)
WALKED_EVERY = 0.1  # seconds between a worker's progress reports


class Shared(Protocol):
    """A run's counters, as they cross between the parent and its workers."""

    def fork_reset(self) -> None:
        """In a worker, before each item: the counters to zero."""

    def fork_state(self) -> Any:
        """In a worker, after each item: the counters (picklable)."""

    def fork_absorb(self, state: Any) -> None:
        """In the parent, after the item's events: add a worker's counters to the run's."""


class NoCounters:
    """Shared for a run whose workers move no counters: what a partition finds comes back in
    its events or its value (a base class, or NO_COUNTERS)."""

    def fork_reset(self) -> None:
        pass

    def fork_state(self) -> None:
        return None

    def fork_absorb(self, state: None) -> None:
        pass


NO_COUNTERS = NoCounters()


class WorkerError(RuntimeError):
    """An exception from a worker that could not cross to the parent as itself."""


CGROUP_V2_CPU_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"
CGROUP_V1_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


def cores() -> int:
    """The cores this process may run on: its affinity (taskset, a cgroup's cpuset), and no
    more than its cgroup's CPU quota allows (a container given 2 CPUs of a 64-core host sees
    64 in its affinity: 64 workers there would only share 2 CPUs, with 64 walks' memory)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(n, quota) if quota else n)


def cpu_quota() -> int | None:
    """CPUs the cgroup's CFS quota allows, rounded up (cgroup v2 cpu.max "QUOTA PERIOD", v1
    cfs_quota_us / cfs_period_us); None where none is set or readable."""
    try:
        with open(CGROUP_V2_CPU_MAX) as f:
            quota, period = f.read().split()[:2]
        if quota != "max" and int(period) > 0:
            return -(-int(quota) // int(period))
        return None
    except (OSError, ValueError):
        pass
    try:
        with open(CGROUP_V1_QUOTA) as f:
            quota = int(f.read())
        with open(CGROUP_V1_PERIOD) as f:
            period = int(f.read())
    except (OSError, ValueError):
        return None
    return -(-quota // period) if quota > 0 and period > 0 else None


def jobs_for(jobs: int | None) -> int:
    """``--jobs``: None means every core."""
    return cores() if jobs is None else jobs


# Without --jobs, a worker per this much input at least: below it a worker costs more than it
# saves (its fork, its socket and the events it pickles against 10-30 ms of walk; a verify of a
# 1.5 MB root took 40-70 ms more CPU with 2 workers than with one). docs/benchmarks-history.md.
MIN_WORKER_BYTES = 32 << 20


def workers_for(jobs: int | None, items: Sequence[Any]) -> int:
    """How many workers walk ``items``: ``--jobs N`` as given (at most one per item); without
    it, every core, but no more than one per MIN_WORKER_BYTES of the items' segments (so a
    small input is walked in this process)."""
    n = min(jobs_for(jobs), len(items))
    if jobs is not None or n <= 1:
        return n
    total, enough = 0, n * MIN_WORKER_BYTES
    for item in items:
        total += input_bytes(item)
        if total >= enough:
            return n
    return max(1, total // MIN_WORKER_BYTES)


def input_bytes(item: Any) -> int:
    """The bytes of segments an item of a walk reads, by stat: a Target (its ``logs``), an Item
    (a partition dir's ``.log`` files, or a file), a list of them, or a tuple holding them or
    such lists (a replica group: (key, targets)). Anything else, or an Item named by a URI,
    counts as MIN_WORKER_BYTES (not known to be small). Unreadable files count nothing here
    (the walk says what is wrong with them)."""
    logs = getattr(item, "logs", None)
    if logs is not None:
        return sum(_size(p) for p in logs)
    kind = getattr(item, "kind", None)
    if kind is not None:
        if not isinstance(getattr(item, "path", None), os.PathLike):
            return MIN_WORKER_BYTES
        if kind == "file":
            return _size(item.path)
        try:
            with os.scandir(item.path) as found:
                return sum(_size(e) for e in found if e.name.endswith((".log", ".kafka")))
        except OSError:
            return 0
    if isinstance(item, (tuple, list)):  # its lists, Targets and Items (not a key's numbers)
        return sum(input_bytes(x) for x in item
                   if isinstance(x, list) or hasattr(x, "logs") or hasattr(x, "kind"))  # fmt: skip
    return MIN_WORKER_BYTES


def _size(path: Any) -> int:
    try:
        return path.stat().st_size if isinstance(path, os.DirEntry) else os.stat(path).st_size
    except OSError:
        return 0


def in_order(
    work: Callable[[Any], Generator[dict, None, Any]],
    items: Sequence[Any],
    jobs: int | None,
    shared: Shared,
) -> Iterator[Generator[dict, None, Any]]:
    """For each item in order, a generator of ``work(item)``'s events returning its value (see the
    module). The pool starts when the first item's generator is first advanced. ``jobs``: as
    ``--jobs`` (None: workers_for decides from the cores and the input's size)."""
    n = workers_for(jobs, items)
    if n <= 1 or not forkable():
        for item in items:
            yield work(item)
        return
    pool = _Pool(work, items, n, shared)
    try:
        for i in range(len(items)):
            yield pool.stream(i)
    finally:
        pool.close()


def forkable() -> bool:
    """Can this process fork workers safely? Not without fork (Windows), nor with a thread
    running (the worker would lack it, and might need a lock it held), nor once pyarrow's file
    systems are loaded (a URI input: S3's and HDFS's clients own native threads). Then the walk
    runs in this one process: the same output, one core."""
    if not hasattr(os, "fork") or "pyarrow.fs" in sys.modules:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


# ---- the parent's side --------------------------------------------------------------------------


class _Worker:
    __slots__ = ("pid", "conn", "item", "ahead", "alive")

    def __init__(self, pid: int, conn: Connection) -> None:
        self.pid = pid
        self.conn = conn
        self.item: int | None = None  # the item it works on (None: idle)
        self.ahead = 0  # bytes read from it and not yet shown
        self.alive = True


class _Pool:
    def __init__(self, work, items: Sequence[Any], n: int, shared: Shared) -> None:
        self.items = items
        self.shared = shared
        self.next_item = 0
        self.buffers: dict[int, deque[bytes]] = {}  # item -> its messages read, not yet shown
        self.owner: dict[int, _Worker] = {}  # item -> the worker on it (until it is done)
        self.workers: list[_Worker] = []
        self._work = work
        self._n = n
        self._started = False

    def _start(self) -> None:
        import socket
        from multiprocessing.connection import Connection

        self._started = True
        watch = walked.watching()
        for _ in range(self._n):
            mine, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:  # the worker: never returns
                mine.close()
                for w in self.workers:  # the parent's ends of the other workers' sockets
                    w.conn.close()
                _worker_main(theirs, self._work, self.items, self.shared, watch)
            theirs.close()
            self.workers.append(_Worker(pid, Connection(mine.detach())))
        for w in self.workers:
            self._assign(w)

    def _assign(self, w: _Worker) -> None:
        w.item = None
        if self.next_item < len(self.items):
            i = self.next_item
            try:
                w.conn.send_bytes(i.to_bytes(8, "little"))
            except OSError:  # it died after its last item: the item waits for another worker
                # (a BrokenPipeError here would end the command as if stdout had been closed)
                w.alive = False
                os.waitpid(w.pid, 0)
                w.pid = 0
                return
            self.next_item += 1
            w.item, w.ahead = i, 0
            self.owner[i] = w
            self.buffers[i] = deque()

    def stream(self, i: int) -> Generator[dict, None, Any]:
        """Item ``i``'s events, then its value (the generator in_order hands out)."""
        import pickle

        if not self._started:
            self._start()
        while True:
            buf = self.buffers[i]
            while not buf:
                self._pump(i)
            raw = buf.popleft()
            w = self.owner.get(i)
            if w is not None:
                w.ahead -= len(raw)
            kind, payload = pickle.loads(raw)
            if kind == "events":
                yield from payload
            elif kind == "done":
                del self.buffers[i]
                state, value = payload
                self.shared.fork_absorb(state)
                return value
            else:  # "raise"
                del self.buffers[i]
                raise payload.exception() if isinstance(payload, _Rebuild) else payload

    def _pump(self, head: int) -> None:
        """Read what the workers have sent; block until something comes. The workers on items
        after ``head`` are read only while their read-ahead is under AHEAD_BYTES."""
        import pickle

        ready_from = {
            w.conn.fileno(): w
            for w in self.workers
            if w.alive and w.item is not None and (w.item == head or w.ahead < AHEAD_BYTES)
        }
        from multiprocessing.connection import wait

        if not ready_from:  # every worker died (each death was reported in its item's place)
            raise WorkerError(f"kseg: no worker left to walk {self.items[head]}")
        for conn in wait([w.conn for w in ready_from.values()]):
            w = ready_from[conn.fileno()]
            try:
                raw = w.conn.recv_bytes()
            except (EOFError, OSError):
                self._lost(w)
                continue
            if raw[:1] == b"W":  # progress: straight to the parent's watcher
                watcher = walked._watcher
                if watcher is not None:
                    log, pos = pickle.loads(raw[1:])
                    watcher(log, pos)
                continue
            item = w.item
            self.buffers[item].append(raw)
            w.ahead += len(raw)
            if raw[-6:] != _MORE_MARK:  # its last message for this item: on to the next
                self.owner.pop(item, None)
                self._assign(w)

    def _lost(self, w: _Worker) -> None:
        """A worker died (killed by the OOM killer, a signal): its item fails, in order."""
        import pickle

        w.alive = False
        item = w.item
        if item is not None:
            _, status = os.waitpid(w.pid, 0)
            w.pid = 0
            why = _death(status)
            err = WorkerError(f"kseg: the worker walking {self.items[item]} died ({why})")
            self.buffers[item].append(pickle.dumps(("raise", err)) + _LAST_MARK)
            self.owner.pop(item, None)
            w.item = None

    def close(self) -> None:
        """Stop every worker and reap it (normal end, an error or an interrupt alike)."""
        for w in self.workers:
            try:
                w.conn.close()  # an idle worker reads EOF and exits
            except OSError:
                pass
            if w.pid and w.item is not None:  # still busy: no need to finish
                try:
                    os.kill(w.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for w in self.workers:
            if w.pid:
                try:
                    os.waitpid(w.pid, 0)
                except ChildProcessError:
                    pass
                w.pid = 0
        self.workers = []


def _death(status: int) -> str:
    """How a worker ended, for the error that names it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"signal {signal.Signals(sig).name}"
        except ValueError:
            return f"signal {sig}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


# A message's last six bytes say whether more messages of its item follow (pickles end in b".",
# so the mark is appended after the pickle and stripped by pickle.loads, which stops at ".").
_MORE_MARK = b"\x00more!"
_LAST_MARK = b"\x00last!"


# ---- the worker's side --------------------------------------------------------------------------


def _worker_main(sock: socket.socket, work, items, shared: Shared, watch: bool) -> None:
    """A forked worker: take item numbers, send back their events; exit without running anything
    of the parent's (no atexit, no flush of stdout buffers inherited from the parent)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _die_with_parent()
        from multiprocessing.connection import Connection

        conn = Connection(sock.detach())
        if watch:
            walked.watch(_ProgressSender(conn))
        else:
            walked.watch(None)
        while True:
            try:
                raw = conn.recv_bytes()
            except EOFError:
                break
            _run_item(conn, work, items[int.from_bytes(raw, "little")], shared)
    except BaseException:  # the parent went away (a broken socket): nothing to tell anyone
        code = 1
    finally:
        os._exit(code)


def _run_item(conn: Connection, work, item, shared: Shared) -> None:
    import pickle

    shared.fork_reset()
    chunk: list[dict] = []
    since = time.monotonic()
    try:
        gen = work(item)
        while True:
            try:
                ev = next(gen)
            except StopIteration as stop:
                value = stop.value
                break
            chunk.append(ev)
            if len(chunk) >= CHUNK_EVENTS or time.monotonic() - since > CHUNK_SECONDS:
                conn.send_bytes(pickle.dumps(("events", chunk), 5) + _MORE_MARK)
                chunk = []
                since = time.monotonic()
        if chunk:
            conn.send_bytes(pickle.dumps(("events", chunk), 5) + _MORE_MARK)
        state = shared.fork_state()
        conn.send_bytes(pickle.dumps(("done", (state, value)), 5) + _LAST_MARK)
    except (BrokenPipeError, ConnectionResetError):
        raise
    except BaseException as exc:  # noqa: BLE001 - every error goes to the parent, in order
        try:  # the events before it are shown first, as in one process
            before = pickle.dumps(("events", chunk), 5) if chunk else None
        except Exception:  # noqa: BLE001 - the error was in them: it is what goes
            before = None
        if before is not None:
            conn.send_bytes(before + _MORE_MARK)
        conn.send_bytes(pickle.dumps(("raise", _portable(exc)), 5) + _LAST_MARK)


def _portable(exc: BaseException):
    """What crosses to the parent for ``exc``: itself if it survives pickling (its type and
    message kept); else its class, args and attributes, rebuilt in the parent without calling
    its ``__init__`` (kseg's errors with their own signatures: FileShrankError, InputError...);
    else a WorkerError with its text."""
    import pickle

    try:
        back = pickle.loads(pickle.dumps(exc, 5))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:  # noqa: BLE001 - then field by field
        pass
    try:
        made = exc.args
        if isinstance(exc, OSError) and exc.filename is not None:  # not in its args
            made = (exc.errno, exc.strerror, exc.filename, None, exc.filename2)
        rebuild = _Rebuild(type(exc), made, exc.args, dict(getattr(exc, "__dict__", {})))
        back = pickle.loads(pickle.dumps(rebuild, 5)).exception()
        if type(back) is type(exc) and str(back) == str(exc):
            return rebuild
    except Exception:  # noqa: BLE001 - whatever fails, the text still crosses
        pass
    return WorkerError(str(exc) or type(exc).__name__)


class _Rebuild(NamedTuple):
    """An exception as its class, args and attributes (see _portable)."""

    cls: type
    made: tuple  # what __new__ takes (an OSError's errno, strerror, filename, ...)
    args: tuple
    state: dict

    def exception(self) -> BaseException:
        exc = self.cls.__new__(self.cls, *self.made)
        # the builtin base's __init__, not the class's own (whose signature differs): it sets
        # args (an OSError's errno, strerror and filename)
        builtin = next(c for c in self.cls.__mro__ if c.__module__ == "builtins")
        builtin.__init__(exc, *self.made)
        if not isinstance(exc, OSError):
            exc.args = self.args
        exc.__dict__.update(self.state)
        return exc


class _ProgressSender:
    """A worker's kseg.storage.walked watcher: at most every WALKED_EVERY seconds, tell the
    parent how far a segment has been read."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.next = 0.0

    def __call__(self, log: str, position: int) -> None:
        import pickle

        now = time.monotonic()
        if now >= self.next:
            self.next = now + WALKED_EVERY
            self.conn.send_bytes(b"W" + pickle.dumps((log, position), 5))


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when the parent dies (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
