"""run_kseg's fast path: the console script's entry point (kseg.cli.entry.main) in a process
forked from an interpreter that has already imported kseg and typer.

Why: the suite runs thousands of `kseg` processes on small fixtures, and each spent ~0.15 CPU
seconds starting (the interpreter, typer, kseg's modules) for ~0.01-0.05 s of work: a third of
a pass's CPU (docs/benchmarks-history.md, "Test suite (issue 33)"). A forked child skips the imports and
is otherwise the process the console script makes: its own pid, the caller's pipes as fds 0-2,
the caller's cwd, environment and argv, signals at the interpreter's defaults, kseg's handlers
installed by main(), and a normal interpreter exit (SystemExit -> status, atexit, flushes).

What it cannot be, and so runs as a real process (helpers.run_kseg falls back by itself): a
command line whose environment changes how the interpreter starts (PYTHON*, locale) or that
starts Spark (`kseg spark`), a call made while the test process's umask, blocked signals or
resource limits differ from the server's start (a child inherits the server's), a call made
while another is running (threads), ``run_kseg(..., fork=False)``, and everything when
``KSEG_TEST_FORK=0``. Tests of start-up, signals and the console script itself use
helpers.kseg_command() with subprocess directly and never come here.

What stays the server's: the string-hash seed (every child of one server hashes alike, so a
test comparing two runs for order-dependence runs one of them fresh: helpers.same_with_jobs),
and the std streams' wrappers, built for the server's fds (e.g. ``sys.stdin.seekable()`` on a
pipe; kseg reads stdin only at a test's stall point). A call that ends half-way (an error, an
interrupt, a timeout) kills its child and reads its status before it returns, so the next call
reads its own; if even that fails, the server is dropped and the next call starts another.

This file is both sides: ``ForkServer`` (the test process's client) and, run as a script, the
server: ``python tests/forkserver.py FD`` serves requests on the Unix socket FD, one at a time.
The script imports nothing from tests (its sys.path is the console script's).
"""

from __future__ import annotations

import gc
import os
import pickle
import socket
import struct
import sys

ENV = "KSEG_TEST_FORK"  # "0": every run_kseg call is a real process
PID = struct.Struct("!q")
LENGTH = struct.Struct("!I")

# The environment the interpreter reads at start-up (or that kseg's imports could): a request
# that differs from the server's here runs as a real process.
STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG", "LANGUAGE")


def _startup_env(env) -> dict:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES)}


# ---------------------------------------------------------------------------------------------
# the client (the test process)


class ForkServer:
    """One server per test process, started on first use and stopped with the process."""

    def __init__(self, script: str) -> None:
        import atexit
        import subprocess
        import threading

        self.script = script
        self.lock = threading.Lock()
        self.broken = False  # a call failed half-way: the server is not used again
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.env = _effective_env(None)  # what a real process started now would get
        self.process_state = _process_state()
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=self.env,
        )
        theirs.close()
        self.sock = ours
        atexit.register(self.close)

    def close(self) -> None:
        self.sock.close()  # the server reads EOF and exits
        try:
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a stuck server must not hang the test process's exit
            self.proc.kill()

    def usable(self) -> bool:
        return not self.broken and self.proc.poll() is None

    def _accepts(self, argv: list[str], env: dict[str, str], cwd) -> bool:
        """Whether the child would be the process subprocess.run makes: the same interpreter
        start-up (environment), and the same per-process state the server took at its start
        (umask, blocked signals, resource limits), which a child inherits from the server. A
        missing cwd: subprocess.run raises its own error for it, so a real process does."""
        if argv[0] != self.script or "spark" in argv[1:2] or not self.usable():
            return False
        if cwd is not None and not os.path.isdir(cwd):
            return False
        if _startup_env(env) != _startup_env(self.env):
            return False
        return _process_state() == self.process_state

    def run(self, argv: list[str], input: bytes | None, timeout: float | None, cwd, env):
        """subprocess.run(argv, input=, capture_output=True, timeout=, cwd=, env=), forked; None
        when the caller must run a real process instead (``_accepts``, or a call from another
        thread is on)."""
        import subprocess

        env = _effective_env(env)
        if not self._accepts(argv, env, cwd) or not self.lock.acquire(blocking=False):
            return None
        try:
            return self._run(argv, input, timeout, cwd, env, subprocess)
        finally:
            self.lock.release()

    def _run(self, argv, input, timeout, cwd, env, subprocess):
        import time

        request = pickle.dumps(
            {
                "argv": argv,
                "env": env,
                "cwd": os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd(),
            }
        )
        if input is not None:
            input = memoryview(input).cast("B")  # bytes-like only, as subprocess.run wants
        mine: list[int] = []  # every fd opened here, closed whatever happens
        theirs: list[int] = []  # the ends the child gets, closed here once sent
        pid = None
        try:
            out_r, out_w = _pipe(mine, theirs)
            err_r, err_w = _pipe(mine, theirs)
            if input is not None:
                stdin, in_w = os.pipe()  # the read end is the child's, the write end ours
                theirs.append(stdin)
                mine.append(in_w)
            else:
                in_w, stdin = None, _inherited_stdin(theirs)
            socket.send_fds(self.sock, [LENGTH.pack(len(request)) + request], [stdin, out_w, err_w])
            (pid,) = PID.unpack(_recv_exact(self.sock, PID.size))
            if pid <= 0:
                raise OSError(f"the kseg fork server answered pid {pid}")
            _close(theirs)
            deadline = None if timeout is None else time.monotonic() + timeout
            out, err, timed_out = _communicate(out_r, err_r, in_w, input, deadline, mine)
            if timed_out:
                os.kill(pid, 9)  # as subprocess.run does: kill, collect, raise
            (status,) = PID.unpack(_recv_exact(self.sock, PID.size))
            pid = None
        except BaseException:
            # the call ends here (an error, an interrupt): the child is killed and its status
            # read, so the next call reads its own; if that fails the server is not used again
            self._abandon(pid)
            raise
        finally:
            _close(theirs)
            _close(mine)
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
        return subprocess.CompletedProcess(argv, os.waitstatus_to_exitcode(status), out, err)

    def _abandon(self, pid: int | None) -> None:
        if pid is None:
            self.broken = True  # the request may be half sent or the pid unread
            return
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass  # exited already: the server has (or will have) its status
        try:
            self.sock.settimeout(30)
            _recv_exact(self.sock, PID.size)
            self.sock.settimeout(None)
        except BaseException:  # noqa: BLE001 - out of step: start another server next time
            self.broken = True


def _effective_env(env) -> dict[str, str]:
    """The environment the child of subprocess.run(env=env) gets, as str."""
    items = _c_environ() if env is None else env
    return {os.fsdecode(k): os.fsdecode(v) for k, v in items.items()}


def _c_environ() -> dict[bytes, bytes]:
    """The environment a child of subprocess.run(env=None) gets: the C library's ``environ``,
    which can hold what os.environ does not (a library's putenv: in the suite, COLUMNS=80
    appears there and not in os.environ, and `-f table` is narrower for it)."""
    import ctypes

    environ = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    out: dict[bytes, bytes] = {}
    i = 0
    while environ[i] is not None:
        key, _, value = environ[i].partition(b"=")
        out.setdefault(key, value)
        i += 1
    return out


def _process_state() -> tuple:
    """What a child inherits from the process that forks it besides fds and the environment."""
    import resource
    import signal

    mask = os.umask(0)
    os.umask(mask)
    limits = tuple(
        resource.getrlimit(getattr(resource, name))
        for name in ("RLIMIT_NOFILE", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_CPU")
    )
    return mask, frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, [])), limits


def _pipe(mine: list[int], theirs: list[int]) -> tuple[int, int]:
    """A pipe (read end, write end): the read end is ours, the write end the child's."""
    r, w = os.pipe()
    mine.append(r)
    theirs.append(w)
    return r, w


def _close(fds: list[int]) -> None:
    while fds:
        try:
            os.close(fds.pop())
        except OSError:
            pass


def _inherited_stdin(theirs: list[int]) -> int:
    """fd 0, as a child of subprocess.run without ``input`` inherits it (/dev/null if closed)."""
    try:
        os.fstat(0)
        return 0
    except OSError:
        fd = os.open(os.devnull, os.O_RDONLY)
        theirs.append(fd)
        return fd


def _communicate(out_r, err_r, in_w, data, deadline, mine: list[int]):
    """Read both pipes to their end while writing ``data``; (out, err, timed_out). A pipe's fd
    leaves ``mine`` when it is closed here; the caller closes what is left."""
    import selectors
    import time

    def done(fd: int) -> None:
        sel.unregister(fd)
        mine.remove(fd)
        os.close(fd)

    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    view = data if data is not None else memoryview(b"")
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        if in_w is not None:
            sel.register(in_w, selectors.EVENT_WRITE)
            if len(view):
                os.set_blocking(in_w, False)
            else:
                done(in_w)
        while sel.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return b"".join(chunks[out_r]), b"".join(chunks[err_r]), True
            for key, _ in sel.select(wait):
                fd = key.fd
                if fd == in_w:
                    try:
                        view = view[os.write(fd, view[:65536]) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not len(view):
                        done(fd)
                    continue
                block = os.read(fd, 1 << 16)
                if block:
                    chunks[fd].append(block)
                else:
                    done(fd)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), False


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        block = sock.recv(n - len(data))
        if not block:
            raise EOFError("the kseg fork server is gone")
        data += block
    return data


# ---------------------------------------------------------------------------------------------
# the server


def _preimport() -> None:
    """What a `kseg` command imports, before any request: the app and kseg's modules (Spark's
    and the plot's excepted: a command imports them when it needs them, as it would anyway).
    Nothing here runs a command or decides anything from the environment."""
    import importlib
    import pkgutil

    import kseg

    skip = ("kseg.__main__", "kseg.spark", "kseg.cli.commands.spark", "kseg.render.plot")
    for info in pkgutil.walk_packages(kseg.__path__, "kseg."):
        if not info.name.startswith(skip):
            importlib.import_module(info.name)
    # ctypes: every child calls clearenv through it (_become), ~3 ms to import each time
    for name in ("kseg._kernel", "crc32c", "cramjam", "tabulate", "rich.console", "ctypes"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _serve(sock: socket.socket):
    """Requests until EOF; returns (request, fds) in each forked child, None in the server at
    the end."""
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 3)
        except OSError:
            return None
        if not msg:
            return None
        (length,) = LENGTH.unpack(msg[: LENGTH.size])
        body = msg[LENGTH.size :]
        if len(body) < length:
            body += _recv_exact(sock, length - len(body))
        request = pickle.loads(body)
        pid = os.fork()
        if pid == 0:
            sock.close()
            return request, fds
        for fd in fds:
            os.close(fd)
        sock.sendall(PID.pack(pid))
        _, status = os.waitpid(pid, 0)
        sock.sendall(PID.pack(status))


def _become(request: dict, fds: list[int]) -> None:
    """The forked child turns into the process the console script would have been."""
    for src, dst in zip(fds, (0, 1, 2), strict=True):
        os.dup2(src, dst)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    import ctypes

    ctypes.CDLL(None).clearenv()  # the C environment too: a library's putenv is not in os.environ
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(sys.argv[0])

    import kseg.kernel

    kseg.kernel.reset()  # decided from this environment, on first need


if __name__ == "__main__":
    server = socket.socket(fileno=int(sys.argv[1]))
    # the console script's sys.path[0] is its own directory (the venv's bin), not tests/
    sys.path[0] = os.path.dirname(sys.executable)
    _preimport()
    # Out of the collector's sight: a child's exit (and any collection in it) then does not
    # walk, and so copy, every page of the imported modules (78 -> 39 ms an exit, measured)
    gc.collect()
    gc.freeze()
    job = _serve(server)
    if job is None:
        sys.exit(0)
    _become(*job)
    from kseg.cli.entry import main

    main()
