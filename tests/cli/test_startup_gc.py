"""The console script pauses the cyclic collector for its start-up and every command resumes it
as it begins (kseg.cli.startup): a command never runs its whole walk without a collector."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest
import typer

from kseg.cli import startup
from kseg.cli.app import app
from kseg.cli.command import Command


def _leaves(command, path=()):
    if hasattr(command, "list_commands"):  # a group (typer may vendor its own click)
        for name in command.list_commands(None):
            yield from _leaves(command.get_command(None, name), (*path, name))
    else:
        yield path, command


def test_every_command_resumes_the_collector():
    """Every command the app can run is a Command, whose invoke resumes the collector."""
    leaves = dict(_leaves(typer.main.get_command(app)))
    assert len(leaves) >= 12 and ("index", "rebuild") in leaves and ("spark", "stats") in leaves
    assert [p for p, c in leaves.items() if not isinstance(c, Command)] == []


def test_pause_then_a_command_begins(monkeypatch):
    monkeypatch.setattr(startup, "_paused", False)
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        startup.pause()
        assert not gc.isenabled()
        cmd = Command("x", callback=lambda: gc.isenabled())
        ctx = cmd.make_context("x", [])
        assert ctx.command.invoke(ctx) is True  # the callback ran with the collector on
        assert gc.get_freeze_count() > frozen  # what was made before was set aside
        startup.resume()  # again: nothing more
        assert gc.isenabled()
    finally:
        gc.enable()
        if frozen == 0:  # (this process froze nothing before: leave it so)
            gc.unfreeze()


def test_a_host_program_keeps_its_collector(monkeypatch):
    """Without the console script's pause (tests, a program running commands), resume does
    nothing: a disabled collector stays disabled, an enabled one enabled, nothing is frozen."""
    monkeypatch.setattr(startup, "_paused", False)
    gc.disable()
    try:
        startup.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("args", [["--version"], ["verify", "--help"], ["demo", "--help"]])
def test_the_console_script_starts_and_ends_the_same(args):
    """A real process: paused start-up, a command or none (help), a clean exit."""
    code = (
        "import gc, sys; sys.argv = ['kseg', *sys.argv[1:]]\n"
        "from kseg.cli.entry import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == b"" and proc.stdout


def test_a_command_runs_with_the_collector_on(tmp_path):
    """The real console script: the command's function (a probe wrapped around it) runs with
    the collector enabled, though start-up ran without it."""
    code = (
        "import gc, sys, os\n"
        "sys.argv = ['kseg', 'seek', sys.argv[1], '--time', 'earliest']\n"
        "from kseg.cli import command\n"
        "real = command.Command.invoke\n"
        "def probe(self, ctx):\n"
        "    callback = self.callback\n"
        "    def seen(*args, **kwargs):\n"
        "        os.write(2, b'gc=%d\\n' % gc.isenabled())\n"
        "        return callback(*args, **kwargs)\n"
        "    self.callback = seen\n"
        "    return real(self, ctx)\n"
        "command.Command.invoke = probe\n"
        "from kseg.cli.entry import main\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, timeout=60
    )
    assert proc.returncode == 16 and b"gc=1\n" in proc.stderr, proc.stderr
