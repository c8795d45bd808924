"""The click command class of every kseg command (typer's ``cls=``)."""

from __future__ import annotations

import typer
from typer.core import TyperCommand

from kseg.cli import startup
from kseg.outcome import BadOption


class Command(TyperCommand):
    """A command whose function may find a usage mistake (BadOption): shown as that option's
    usage error, exactly as click shows its own (exit 16)."""

    def collect_usage_pieces(self, ctx):
        """The usage line's arguments as man pages write them (``PATH...``, ``[DIRECTORY]``),
        the same under every typer release (0.27.3 wrote ``{paths}...``)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                pieces.extend(param.get_usage_pieces(ctx))
                continue
            name = param.metavar or (param.name or "").upper()
            name += "..." if param.nargs != 1 else ""
            pieces.append(name if param.required else f"[{name}]")
        return pieces

    def invoke(self, ctx):
        startup.resume()  # start-up is over: the collector as it was (kseg.cli.startup)
        try:
            return super().invoke(ctx)
        except BadOption as exc:
            raise typer.BadParameter(str(exc), ctx=ctx, param_hint=exc.option) from None
