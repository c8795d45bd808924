"""How much of each segment Kafka's recovery keeps (from verify's report, which predicts it:
kseg.verify.kafka_outcome), so that salvage can say what it gives back beyond that."""

from __future__ import annotations

from kseg.verify.partition import PartitionReport


def kafka_limits(report: PartitionReport) -> tuple[list[int], bool]:
    """Per segment (in scans' order), the byte up to which Kafka's recovery keeps it, and
    whether Kafka starts at all (False: it keeps nothing usable; see kafka_recovery). A segment
    cut while loading keeps the segments after it; the segment its recovery truncates (or
    empties) drops every later one."""
    scans = report.scans
    limits = [s.size for s in scans]
    if report.kafka_tail_fatal is not None:
        return [0] * len(scans), False
    first = report.first_recovered()
    for i, s in enumerate(scans):
        if s.kafka_fatal is not None and (
            s.kafka_stop is None or s.kafka_fatal.position < s.kafka_stop
        ):
            return [0] * len(scans), False
        if s.log in report.recovered_at_load:
            limits[i] = s.size if s.kafka_stop is None else s.kafka_stop
            continue
        cut = None
        if s.kafka_refused is not None and i >= first:
            cut = 0
        elif s.kafka_stop is not None and i >= first:
            cut = s.kafka_stop
        if cut is not None:
            limits[i] = cut
            for j in range(i + 1, len(scans)):
                limits[j] = 0
            break
    return limits, True
