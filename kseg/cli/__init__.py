"""kseg's command line: the typer app (kseg.cli.app), one module per command family
(kseg.cli.commands), the shared options, the process entry (kseg.cli.entry: signals,
interrupts) and the one table from outcomes to exit codes (kseg.cli.exit). The only package that
prints to the terminal or exits; nothing outside it imports it."""
