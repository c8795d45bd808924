"""Hanging transactions by KIP-664's rules, as Kafka's `kafka-transactions.sh find-hanging`
(tools' TransactionsCommand.FindHangingTransactionsCommand) applies them to a partition's
producers (describe-producers' view; kseg.storage.txn_replay gives it offline):

1. a candidate is a producer with an open transaction (CurrentTransactionStartOffset) whose last
   write is older than the max transaction timeout: ``now - LastTimestamp > timeout`` (the tool's
   ``--max-transaction-timeout``, in minutes, default 15: the broker's default
   transaction.max.timeout.ms; a transaction still in its timeout is "open", never hanging);
2. ``no_transactional_id``: no transactional id at the coordinator has the candidate's producer
   id (ListTransactions filtered by producer id; ids in state Dead are being expired and are not
   listed);
3. ``partition_not_in_transaction``: the transactional id's coordinator state does not list the
   partition (DescribeTransactions' topicPartitions: the partitions of an Ongoing transaction,
   and those still waiting for their marker in PrepareCommit/PrepareAbort; none in Empty,
   CompleteCommit, CompleteAbort): the coordinator will never write its marker.

Kafka's tool checks nothing else (not the producer epoch): neither does kseg. The coordinator
state missing entirely (no `__transaction_state` under the roots, or the partition the id maps
to not there) leaves a candidate ``unjudged``: it is not called hanging on a guess.

The abort command is the form TransactionsCommand.AbortTransactionCommand takes for every broker
version, with nothing looked up at run time: ``--topic --partition --producer-id
--producer-epoch --coordinator-epoch`` (the producer's epoch and the coordinator epoch of its
last marker, as describe-producers shows them; a producer that never had a marker shows -1, for
which the tool itself uses 0, "less than or equal to any possible leader epoch": printed as 0).
"""

from __future__ import annotations

import shlex
from typing import NamedTuple

from kseg.txn.coordinator import TxnMeta

DEFAULT_MAX_TIMEOUT_MINUTES = 15  # find-hanging's --max-transaction-timeout default
BOOTSTRAP = "<BOOTSTRAP>"  # the abort command's --bootstrap-server when none is given

RULES = {
    "no_transactional_id": "no transactional id at the coordinator",
    "partition_not_in_transaction": "the coordinator's transaction does not include this partition",
}

OPEN, HANGING, UNJUDGED = "open", "hanging", "unjudged"


class Verdict(NamedTuple):
    status: str  # OPEN, HANGING, or UNJUDGED (a candidate the coordinator state cannot judge)
    rule: str | None  # a key of RULES when hanging
    meta: TxnMeta | None  # the producer id's transactional id at the coordinator
    candidate: bool  # idle longer than the max transaction timeout
    why: str  # one phrase: what decided


def judge(
    topic: str,
    partition: int,
    producer_id: int,
    last_timestamp: int,
    now: int,
    max_timeout_ms: int,
    by_producer: dict[int, TxnMeta] | None,
    complete: bool,
) -> Verdict:
    """find-hanging's verdict on one open transaction of ``topic``-``partition``.
    ``by_producer``: the coordinator's transactional ids by producer id (None: no coordinator
    state read); ``complete``: every `__transaction_state` partition was read."""
    meta = by_producer.get(producer_id) if by_producer is not None else None
    idle = now - last_timestamp
    if not idle > max_timeout_ms:
        return Verdict(OPEN, None, meta, False, "within the max transaction timeout")
    if meta is None:
        if by_producer is None or not complete:
            why = "no coordinator state read" if by_producer is None else (
                "its transactional id may be in a __transaction_state partition not read")  # fmt: skip
            return Verdict(UNJUDGED, None, None, True, why)
        return Verdict(HANGING, "no_transactional_id", None, True, RULES["no_transactional_id"])
    if (topic, partition) not in meta.partitions:
        rule = "partition_not_in_transaction"
        return Verdict(HANGING, rule, meta, True, RULES[rule])
    return Verdict(OPEN, None, meta, True, "the coordinator's transaction includes this partition")


def abort_command(
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    bootstrap: str | None = None,
) -> str:
    """The `kafka-transactions.sh abort` command line for the transaction (see the module);
    the values quoted for a shell (a plain host:port list and topic stay as typed)."""
    server = shlex.quote(bootstrap) if bootstrap else BOOTSTRAP
    return (
        f"kafka-transactions.sh --bootstrap-server {server} abort --topic "
        f"{shlex.quote(topic)} --partition {partition} --producer-id {producer_id} "
        f"--producer-epoch {producer_epoch} --coordinator-epoch {max(coordinator_epoch, 0)}"
    )
