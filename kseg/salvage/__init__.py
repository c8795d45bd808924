"""`kseg salvage`: give back every intact record Kafka's recovery throws away.

walk (which bytes of each segment are kept: kseg.format.resync over every segment, offsets
checked across the partition), kafka (what Kafka's recovery keeps, for the cost), cost (the
per-partition ``salvage`` event), plan (a repair manifest: kseg.repair applies, resumes and
restores it), copy_to (``--to DIR``: the same result in a new tree), run (the command).
"""
