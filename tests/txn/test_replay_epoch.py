"""The producer state the replay keeps across epochs, as Kafka's ProducerStateEntry keeps it: a
batch or marker of a new epoch drops the old epoch's batches, so the last sequence is -1 after an
epoch-bumping marker (the coordinator's timeout abort, every Transaction V2 end) and the new
epoch's own after its first batch; a marker of the same epoch keeps it. A real 4.1.0 broker's
describe-producers says the same (tests/txn/test_broker_txn.py)."""

from __future__ import annotations

from kseg.format.record import Record
from kseg.storage.txn_replay import replay_transactions
from kseg.storage.writer import LogWriter


def _txn(w: LogWriter, pid: int, epoch: int, seq: int, n: int) -> None:
    w.append([Record(b"k", b"v") for _ in range(n)], producer_id=pid, producer_epoch=epoch,
             base_sequence=seq, transactional=True)  # fmt: skip


def test_a_new_epoch_forgets_the_last_sequence(tmp_path):
    pdir = tmp_path / "t-0"
    with LogWriter(pdir, clock=lambda: 1_000) as w:
        _txn(w, 1, 0, 0, 3)  # Transaction V1: a COMMIT of the same epoch
        w.append_control(commit=True, producer_id=1, producer_epoch=0)
        _txn(w, 2, 0, 0, 2)  # timed out: the coordinator's ABORT bumps the epoch
        w.append_control(commit=False, producer_id=2, producer_epoch=1)
        _txn(w, 3, 0, 0, 2)  # Transaction V2: every end bumps the epoch, sequences start again
        w.append_control(commit=True, producer_id=3, producer_epoch=1)
        _txn(w, 3, 1, 0, 4)
    states = {
        p.producer_id: (p.producer_epoch, p.last_sequence)
        for p in replay_transactions(pdir).producers
    }
    assert states == {1: (0, 2), 2: (1, -1), 3: (1, 3)}
