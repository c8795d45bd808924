"""The runbook "after an unclean leader election" (docs/runbooks/), run as written on copies of the
fixture's roots (the paths replaced, the console producer replaced by `cat`)."""

from __future__ import annotations

from kseg.fixtures.replicas import build, record
from tests.txn.test_runbook import _block, _run


def test_replicas_runbook_commands_run_as_written(tmp_path):
    build(tmp_path / "incident", "unclean")
    build(tmp_path / "after", "match")
    lines = [
        x
        for x in _block(
            "# Runbook: after an unclean leader election", "runbooks/unclean-election.md"
        ).splitlines()
    ]
    steps = [x for x in lines if x.strip() and not x.startswith("#")]
    assert len(steps) == 6

    def run(line: str):
        return _run(line.replace("/backup/", f"{tmp_path}/"), tmp_path)

    one, two, three, four, five, six = steps
    proc = run(one)
    assert proc.returncode == 4 and b"truncates to 20: loses 10 records" in proc.stdout
    proc = run(two)
    assert proc.returncode == 4 and proc.stdout.count(b"orders ") >= 3
    proc = run(three)  # broker-1 (the old leader) kept: the others lose nothing
    assert proc.returncode == 4 and b"(given: --leader" in proc.stdout
    proc = run(four)
    assert proc.returncode == 4 and b"exported 10 records" in proc.stdout
    producer = five.split(" | ", 1)[1]
    assert producer.startswith("kafka-console-producer.sh ")
    proc = run(five.replace(producer, "cat"))
    want = [record(o, "a") for o in range(20, 30)]
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines() == [
        f"{r.key.decode()}\t{r.value.decode()}" for r in want
    ]
    proc = run(six)
    assert proc.returncode == 0 and b"3 replicas, consistent" in proc.stdout
