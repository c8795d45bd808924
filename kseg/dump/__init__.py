"""`kseg dump`: every file of a data directory as a stream of events (kseg.dump.plan is where
a dump starts; kseg.dump.run is the command's run)."""
