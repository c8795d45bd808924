"""run_kseg's fast path: the console script's entry point (kseg.cli.entry.main) in a process
forked from an interpreter that has already imported kseg and typer.

Why: the suite runs thousands of `kseg` processes on small fixtures, and each spent ~0.15 CPU
seconds starting (the interpreter, typer, kseg's modules) for ~0.01-0.05 s of work: a third of
a pass's CPU (BENCHMARKS.md, "Test suite (issue 33)"). A forked child skips the imports and
is otherwise the process the console script makes: its own pid, the caller's pipes as fds 0-2,
the caller's cwd, environment and argv, signals at the interpreter's defaults, kseg's handlers
installed by main(), and a normal interpreter exit (SystemExit -> status, atexit, flushes).

What it cannot be, and so runs as a real process (helpers.run_kseg falls back by itself): a
command line whose environment changes how the interpreter starts (PYTHON*, locale) or that
starts Spark (`kseg spark`), a call made while another is running (threads), and everything
when ``KSEG_TEST_FORK=0``. Tests of start-up, signals and the console script itself use
helpers.kseg_command() with subprocess directly and never come here.

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
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.env = dict(os.environ)
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

    def accepts(self, argv: list[str], env) -> bool:
        if argv[0] != self.script or "spark" in argv[1:2]:
            return False
        env = os.environ if env is None else env
        return _startup_env(env) == _startup_env(self.env) and self.proc.poll() is None

    def run(self, argv: list[str], input: bytes | None, timeout: float | None, cwd, env):
        """subprocess.run(argv, input=, capture_output=True, timeout=, cwd=, env=), forked."""
        import subprocess

        if not self.lock.acquire(blocking=False):
            return None  # a call from another thread is running: the caller runs a real one
        try:
            return self._run(argv, input, timeout, cwd, env, subprocess)
        finally:
            self.lock.release()

    def _run(self, argv, input, timeout, cwd, env, subprocess):
        import time

        request = pickle.dumps(
            {
                "argv": argv,
                "env": dict(os.environ if env is None else env),
                "cwd": os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd(),
            }
        )
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if input is not None:
            in_r, in_w = os.pipe()
            stdin = in_r
        else:
            in_r = in_w = None
            stdin = _inherited_stdin()
        try:
            socket.send_fds(self.sock, [LENGTH.pack(len(request)) + request], [stdin, out_w, err_w])
            (pid,) = PID.unpack(_recv_exact(self.sock, PID.size))
        finally:
            for fd in (out_w, err_w, in_r) if input is not None else (out_w, err_w):
                os.close(fd)
            if input is None and stdin != 0:
                os.close(stdin)
        deadline = None if timeout is None else time.monotonic() + timeout
        out, err, timed_out = _communicate(out_r, err_r, in_w, input, deadline)
        if timed_out:
            os.kill(pid, 9)  # as subprocess.run does: kill, collect, raise
        (status,) = PID.unpack(_recv_exact(self.sock, PID.size))
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
        return subprocess.CompletedProcess(argv, os.waitstatus_to_exitcode(status), out, err)


def _inherited_stdin() -> int:
    """fd 0, as a child of subprocess.run without ``input`` inherits it (/dev/null if closed)."""
    try:
        os.fstat(0)
        return 0
    except OSError:
        return os.open(os.devnull, os.O_RDONLY)


def _communicate(out_r: int, err_r: int, in_w: int | None, data: bytes | None, deadline):
    """Read both pipes to their end while writing ``data``; (out, err, timed_out)."""
    import selectors
    import time

    chunks = {out_r: [], err_r: []}
    sel = selectors.DefaultSelector()
    for fd in chunks:
        sel.register(fd, selectors.EVENT_READ)
    view = memoryview(data or b"")
    if in_w is not None:
        if view:
            os.set_blocking(in_w, False)
            sel.register(in_w, selectors.EVENT_WRITE)
        else:
            os.close(in_w)
    timed_out = False
    try:
        while sel.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                timed_out = True
                break
            for key, _ in sel.select(wait):
                fd = key.fd
                if fd == in_w:
                    try:
                        view = view[os.write(fd, view[:65536]) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        sel.unregister(fd)
                        os.close(fd)
                    continue
                block = os.read(fd, 1 << 16)
                if block:
                    chunks[fd].append(block)
                else:
                    sel.unregister(fd)
                    os.close(fd)
    finally:
        for key in list(sel.get_map().values()):
            os.close(key.fd)
        sel.close()
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), timed_out


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
    for name in ("kseg._kernel", "crc32c", "cramjam", "tabulate", "rich.console"):
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
