"""The `kseg` process: signal handlers first, then the typer app (kseg.cli.app); whatever ends a
command (its run, a usage error, an exception) becomes one line on stderr at most and the exit
status from kseg.cli.exit.exit_status. Never a traceback.

The console script's ``main`` installs the signal handlers before anything heavy is imported
(typer, rich and the commands take tens of milliseconds to import): an interrupt at any moment
after that exits 32 with one line on stderr. Importing this module changes nothing (``run_app``
runs inside other programs: tests)."""

from __future__ import annotations

import os
import sys

from kseg.cli import signals, startup
from kseg.cli.signals import Interrupted


def main() -> None:
    """The console script."""
    startup.pause()  # the collector resumes as the command begins (kseg.cli.startup)
    signals.install()
    install_memory_hook()
    try:
        import kseg.cli.app  # noqa: F401 - the app, before any command runs
    except Interrupted as exc:
        from kseg.cli.exit import exit_status

        signals.exit_now(exit_status(exc))
    try:
        run_app()
    except SystemExit as exc:
        exc.code = memory_status(exc.code)
        # The outcome is decided, reported and flushed. A signal from here on would land in the
        # interpreter's shutdown, which puts the OS default handlers back (the process would die
        # of SIGINT, status -2, after a complete run): it stays pending and the status stays
        # the outcome's. Only the console script does this; a host program keeps its signals.
        signals.block()
        raise


def run_app() -> None:
    """Run the command on sys.argv and exit with the outcome's status."""
    from kseg.cli.exit import exit_status, track
    from kseg.render import streams

    previous = signals.install()  # again: the console script did it before this import
    streams.reset()
    track(None)
    try:
        code = _run()
    except Interrupted as exc:  # while flushing or reporting
        code = exit_status(exc)
        signals.defer()
        _say_interrupted()
    finally:
        signals.restore(previous)  # the console script's own (a host program's, in tests)
    sys.exit(int(code))


def _call_app() -> int:
    from kseg.cli.exit import outcome_of_code
    from kseg.render import streams

    try:
        rv = _call_typer()
        streams.flush()
        if signals.received():
            # an Interrupted was swallowed on its way up (a cleanup's error replaced it and was
            # reported as a finding): the run was still interrupted
            raise Interrupted(outcome=outcome_of_code(rv if isinstance(rv, int) else 0))
    except Exception as exc:
        if signals.received():
            # cleanup code (a writer's close, a flush) failed while the interrupt unwound and
            # replaced it: still an interrupt, and that error is only its consequence
            raise Interrupted() from exc
        raise
    return rv if isinstance(rv, int) else 0


def _call_typer():
    import typer

    from kseg.cli.app import app

    try:
        # the command is invoked directly, not through Click's main(): that one turns a
        # closed pipe (EPIPE) into exit 1, losing what the command had found, and a
        # KeyboardInterrupt into a silent exit 130
        command = typer.main.get_command(app)
        # _KSEG_COMPLETE=... (shell completion, as --install-completion sets up): answer, exit
        command._main_shell_completion({}, "kseg", None)
        with command.make_context("kseg", sys.argv[1:]) as ctx:
            return command.invoke(ctx)
    except typer.Exit as exc:
        return exc.exit_code


def _run() -> int:
    from kseg.cli.exit import ended_status

    try:
        return _call_app()
    except SystemExit:
        raise
    except BaseException as exc:  # noqa: BLE001 - every outcome is reported, never a traceback
        _report(exc)
        return ended_status(exc)


def _report(exc: BaseException) -> None:
    """What the operator sees of an exception that ended the command: one line on stderr."""
    from kseg.cli.exit import EXIT_FOR, output_full
    from kseg.render import streams

    names = {c.__name__ for c in type(exc).__mro__}  # click may be vendored by typer
    if isinstance(exc, (Interrupted, KeyboardInterrupt)):
        # KeyboardInterrupt: raised by a library's own handler (kseg's were replaced)
        signals.defer()  # cleanup below must not be cut short by a second signal
        _stop_spark()
        _say_interrupted()
    elif "NoArgsIsHelpError" in names:
        exc.show()  # a group given no subcommand: its help
    elif "UsageError" in names:
        # one line, as the README promises: what is wrong, and where the help is
        where = exc.ctx.command_path if exc.ctx is not None else "kseg"
        streams.say(f"{exc.format_message()} (see '{where} --help')")
    elif "Abort" in names:  # EOF on a prompt (kseg has none); Ctrl-C is Interrupted
        pass
    elif isinstance(exc, BrokenPipeError):
        # `kseg dump ... | head`: the reader is gone; say nothing
        streams.silence_stdout()
    elif isinstance(exc, OSError):
        if output_full(exc):
            streams.silence_stdout()
            streams.say(f"cannot write output: {exc.strerror}")
        else:
            streams.say(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
    elif isinstance(exc, MemoryError):
        say_out_of_memory()
    elif getattr(exc, "kind", None) in EXIT_FOR:  # InputError, NoInput: the input's fault
        streams.say(str(exc))
    else:  # a bug
        if os.environ.get("KSEG_DEBUG"):
            raise exc
        streams.say(
            f"internal error: {type(exc).__name__}: {exc} (set KSEG_DEBUG=1 for a traceback)"
        )


def _stop_spark() -> None:
    """A Spark command interrupted: the JVM it started must not run on after kseg exits."""
    if "kseg.spark.jobs" in sys.modules:
        sys.modules["kseg.spark.jobs"].stop_gateway()


def _say_interrupted() -> None:
    from kseg.render import streams

    try:
        streams.flush()  # keep what was produced so far (exit 32 says it is incomplete)
    except (OSError, ValueError, Interrupted):
        pass
    sys.stderr.write("kseg: interrupted\n")
    sys.stderr.flush()


# --- out of memory: one line, exit 8, wherever the MemoryError is raised ----------------------

_OUT_OF_MEMORY = "kseg: out of memory (see the memory bound in the README's safety section)\n"
_OUT_OF_MEMORY_BYTES = _OUT_OF_MEMORY.encode()
# the console script's hook is installed; the line was written; the status sys.exit carries
_memory: dict = {"hooked": False, "said": False, "exit": None, "exit_out_of_memory": None}


def say_out_of_memory() -> None:
    """The out-of-memory line; once per process in the console script (a MemoryError that
    unwinds through generators can be seen twice: by the hook as each is closed, then by
    ``_report``). Saying it needs no memory to speak of: the line is made beforehand, and goes
    out with one os.write when stderr itself cannot allocate."""
    if _memory["said"]:
        return
    _memory["said"] = _memory["hooked"]  # a host program (tests) runs commands again
    try:
        sys.stdout.flush()  # what was printed before it goes out first
    except (OSError, ValueError, MemoryError):
        pass
    try:
        sys.stderr.write(_OUT_OF_MEMORY)
        sys.stderr.flush()
    except MemoryError:
        try:
            os.write(2, _OUT_OF_MEMORY_BYTES)
        except OSError:
            pass
    except (OSError, ValueError):
        pass


def install_memory_hook() -> None:
    """The console script's ``sys.unraisablehook``: Python cannot raise a MemoryError from a
    generator being closed, a finalizer or the interpreter's shutdown, and prints it as
    "Exception ignored in" with a traceback; here it becomes the out-of-memory line and the
    status gets 8 (``memory_status``; kseg.cli.exit.out_of_memory_status), or, once the status
    is handed to the interpreter, the process exits with that. An ``Interrupted`` that the
    signal handler raised inside such a place is raised again shortly, in ordinary code
    (signals.redeliver): the interrupt is not lost and prints no traceback. Other exceptions go
    to the hook there was."""
    previous = sys.unraisablehook
    _memory["hooked"] = True

    def hook(args) -> None:
        if isinstance(args.exc_value, Interrupted):
            signals.redeliver(args.exc_value.signum)
            return
        if not isinstance(args.exc_type, type) or not issubclass(args.exc_type, MemoryError):
            previous(args)
            return
        say_out_of_memory()
        if _memory["exit"] is not None:  # shutting down: the status is decided, OR 8 into it
            try:
                sys.stdout.flush()  # os._exit flushes nothing
            except (OSError, ValueError, MemoryError):
                pass
            os._exit(_memory["exit_out_of_memory"])

    sys.unraisablehook = hook


def memory_status(code):
    """The status the console script exits with: ``code``, with 8 when memory ran out where
    nothing could catch it (the hook said so). Kept for the shutdown: a MemoryError in a
    finalizer then still exits 8."""
    from kseg.cli.exit import out_of_memory_status

    if not isinstance(code, int) or isinstance(code, bool):
        return code
    if _memory["said"]:
        code = out_of_memory_status(code)
    _memory["exit"] = code
    _memory["exit_out_of_memory"] = out_of_memory_status(code)  # made now: no memory later
    return code
