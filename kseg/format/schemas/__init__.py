"""Schema tables, one module per record family, transcribed from Kafka's JSON message files."""
