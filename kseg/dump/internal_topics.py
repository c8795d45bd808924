"""Decoders for the internal topics, selected with --decoder or by the partition's topic.

The decoders (and the schema tables behind them) are imported on first use: dumping an ordinary
topic never loads them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from kseg.storage import files as F

# --decoder name -> (module, function): function(key bytes | None, value bytes | None) -> dict
DECODERS = {
    "consumer-offsets": ("kseg.format.coordinator", "consumer_offsets"),
    "transaction-state": ("kseg.format.coordinator", "transaction_state"),
    "share-group-state": ("kseg.format.coordinator", "share_group_state"),
    "cluster-metadata": ("kseg.format.metadata", "decode_metadata"),
    "remote-log-metadata": ("kseg.format.metadata", "decode_remote_log_metadata"),
}
BY_TOPIC = {
    "__consumer_offsets": "consumer-offsets",
    "__transaction_state": "transaction-state",
    "__share_group_state": "share-group-state",
    "__cluster_metadata": "cluster-metadata",
    "__remote_log_metadata": "remote-log-metadata",
}


def decoder(name: str) -> Callable[[bytes | None, bytes | None], dict] | None:
    """The decoding function for a --decoder name (None for "none" or an unknown name)."""
    where = DECODERS.get(name)
    if where is None:
        return None
    return getattr(importlib.import_module(where[0]), where[1])


def decoder_for_path(path: Path) -> str | None:
    """The decoder a file gets without --decoder: KRaft snapshots and bootstrap.checkpoint hold
    metadata records; a segment gets its partition's topic's decoder."""
    if F.file_kind(path).kind in (F.KRAFT_CHECKPOINT, F.BOOTSTRAP_CHECKPOINT):
        return "cluster-metadata"
    parsed = F.parse_partition_dir(path.parent.name)
    return BY_TOPIC.get(parsed.topic) if parsed else None
