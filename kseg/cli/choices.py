"""The closed sets of values some options take (output formats, payload modes, decoders): what
a command line may say, as enums typer lists in --help and the fast parser checks."""

from __future__ import annotations

from enum import Enum


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"


class SeekFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"
    reset_csv = "reset-csv"


class StatsFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"
    csv = "csv"


class StatsBy(str, Enum):
    partition = "partition"
    hour = "hour"


class Payload(str, Enum):
    auto = "auto"
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"
    json = "json"
    none = "none"
    redact = "redact"
    schema = "schema"


class Decoder(str, Enum):
    auto = "auto"
    consumer_offsets = "consumer-offsets"
    transaction_state = "transaction-state"
    share_group_state = "share-group-state"
    cluster_metadata = "cluster-metadata"
    remote_log_metadata = "remote-log-metadata"
    none = "none"


class Isolation(str, Enum):
    read_uncommitted = "read_uncommitted"
    read_committed = "read_committed"
