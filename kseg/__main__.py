"""`python -m kseg`: the same entry point as the `kseg` console script."""

from kseg.cli.entry import main

main()
