"""Decoders for the internal topics, selected with --decoder or by the partition's topic."""

from __future__ import annotations

from pathlib import Path

from ..format.coordinator import consumer_offsets, share_group_state, transaction_state
from ..format.metadata import decode_metadata, decode_remote_log_metadata
from ..storage import files as F

DECODERS = {
    "consumer-offsets": consumer_offsets,
    "transaction-state": transaction_state,
    "share-group-state": share_group_state,
    "cluster-metadata": decode_metadata,
    "remote-log-metadata": decode_remote_log_metadata,
}
BY_TOPIC = {
    "__consumer_offsets": "consumer-offsets",
    "__transaction_state": "transaction-state",
    "__share_group_state": "share-group-state",
    "__cluster_metadata": "cluster-metadata",
    "__remote_log_metadata": "remote-log-metadata",
}


def decoder_for_path(path: Path) -> str | None:
    """The decoder a file gets without --decoder: KRaft snapshots and bootstrap.checkpoint hold
    metadata records; a segment gets its partition's topic's decoder."""
    if F.file_kind(path).kind in (F.KRAFT_CHECKPOINT, F.BOOTSTRAP_CHECKPOINT):
        return "cluster-metadata"
    parsed = F.parse_partition_dir(path.parent.name)
    return BY_TOPIC.get(parsed.topic) if parsed else None
