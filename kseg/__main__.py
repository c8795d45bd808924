"""`python -m kseg`: the same entry point as the `kseg` console script."""

from kseg.entry import main

main()
