"""The commands of `kseg`, one module per family; kseg.cli.app registers them.

No ``from __future__ import annotations`` in these modules: typer reads every command's
annotations on each start, and evaluating them from strings took 40% of building the app."""
