"""`kseg replicas`: the replicas of a partition under several broker roots compared offline, and
what Kafka's replication does to each when it rejoins the leader (KIP-101, KIP-279)."""
