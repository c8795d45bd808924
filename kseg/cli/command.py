"""The click command class of every kseg command (typer's ``cls=``)."""

from __future__ import annotations

import typer
from typer.core import TyperCommand

from kseg.cli import startup
from kseg.outcome import BadOption


class Command(TyperCommand):
    """A command whose function may find a usage mistake (BadOption): shown as that option's
    usage error, exactly as click shows its own (exit 16)."""

    def invoke(self, ctx):
        startup.resume()  # start-up is over: the collector as it was (kseg.cli.startup)
        try:
            return super().invoke(ctx)
        except BadOption as exc:
            raise typer.BadParameter(str(exc), ctx=ctx, param_hint=exc.option) from None
