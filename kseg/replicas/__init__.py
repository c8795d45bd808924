"""`kseg replicas`: where the replicas of a partition diverge, what Kafka truncates when they
rejoin, and the records an unclean election loses (issue #31)."""
