"""Schema Registry values decoded offline: the registry's ``_schemas`` topic replayed from the
data dir (or schemas exported from its REST API), and Avro, Protobuf and JSON Schema payloads
decoded by them. `kseg schemas` lists them; `kseg dump --payload schema` decodes with them."""
