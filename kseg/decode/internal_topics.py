"""Decoders for the internal topics, selected with --decoder or by the partition's topic."""

from __future__ import annotations

from ..format.coordinator import consumer_offsets, transaction_state

DECODERS = {"consumer-offsets": consumer_offsets, "transaction-state": transaction_state}
