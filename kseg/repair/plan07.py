"""The repair plan of a Kafka 0.7 partition (its scan: kseg.verify.kafka07): 0.7's own recovery
cut, carried out by the same repair machinery as every other partition."""

from __future__ import annotations

from kseg.repair.actions import MOVE, TRUNCATE
from kseg.repair.manifest import Action, Plan
from kseg.repair.plan import whole_file
from kseg.storage.atomic import sha256_range
from kseg.verify import findings as K
from kseg.verify.kafka07 import Report07


def plan_repair07(report: Report07, *, keep_later_segments: bool = False) -> Plan:
    """Truncate the first corrupt segment at its first invalid entry (0.7's recovery cut) and
    move every later segment into the quarantine, so the log stays contiguous. With
    ``keep_later_segments`` only a corrupt LAST segment is truncated (exactly what 0.7 does);
    an older one is left as reported, since cutting it would break the name + size chain."""
    pdir = report.target.partition_dir.resolve()
    plan = Plan(pdir)
    first = report.first_corrupt
    if first is None:
        return plan
    scan = report.scans[first]
    if scan.first_error.kind == K.UNREADABLE:
        return plan
    is_last = first == len(report.scans) - 1
    if keep_later_segments and not is_last:
        return plan
    log = pdir / scan.log.name
    if scan.valid_bytes < scan.size:
        err = scan.first_error
        plan.actions.append(
            Action(
                TRUNCATE,
                str(log),
                f"{err.kind} at byte {scan.valid_bytes}: {err.message}",
                position=scan.valid_bytes,
                length=scan.size - scan.valid_bytes,
                sha256=sha256_range(log, scan.valid_bytes, scan.size),
                quarantine_file=f"{log.name}.tail-at-{scan.valid_bytes}",
            )
        )
    end = scan.base_offset + scan.valid_bytes
    for later in report.scans[first + 1 :]:
        why = (
            f"segment after the truncation point (new log end {end}): a 0.7 log must stay "
            "contiguous (name + size == next name)"
        )
        plan.actions.append(whole_file(MOVE, pdir / later.log.name, why))
    return plan
