"""`kseg txn` on the real Kafka 4.1.0 broker's data dir (shared/real): its transactional
producers' partitions and its `__transaction_state` (2 partitions, KRaft metadata)."""

from __future__ import annotations

from tests.helpers import events, run_kseg


def test_real_41_nothing_hangs(real_root):
    data = real_root / "kafka-4.1.0-dev" / "data"
    proc = run_kseg("txn", data, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""  # every __transaction_state partition read: nothing to caveat
    parts = {e["topic"]: e for e in events(proc.stdout) if e["type"] == "partition"}
    py = parts["dev-txn-py"]
    assert (py["committed"], py["aborted"], py["open"]) == (6, 3, 0)  # PROVENANCE.md: 9, 3 aborted
    assert py["last_stable_offset"] == py["log_end_offset"]
    assert "__transaction_state" not in parts and "__cluster_metadata" not in parts


def test_real_41_mid_transaction_is_open_at_the_coordinator(real_root):
    """At 06:52:34.300 dev-jtx's first transaction was Ongoing with dev-txn-java-0: even with no
    timeout at all (every open transaction a candidate) it is not hanging."""
    data = real_root / "kafka-4.1.0-dev" / "data"
    proc = run_kseg("txn", data, "-f", "json", "--topic", "^dev-txn-java$",
                    "--at", "1795416754300", "--max-transaction-timeout", "0")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (o,) = [e for e in events(proc.stdout) if e["type"] == "open_transaction"]
    assert (o["transactional_id"], o["coordinator_state"], o["status"], o["candidate"]) == (
        "dev-jtx", "Ongoing", "open", True
    )  # fmt: skip
    assert (o["producer_id"], o["first_offset"]) == (6, 0)
