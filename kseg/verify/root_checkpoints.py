"""A log.dirs root's checkpoint files against what is on disk."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.format import checkpoint as cp
from kseg.format.errors import CorruptionError
from kseg.storage import files as F
from kseg.storage.side_files import read_side_file
from kseg.storage.tree import Target
from kseg.verify import findings as K
from kseg.verify.findings import Finding, from_error
from kseg.verify.partition import PartitionReport


class RootFacts(NamedTuple):
    """What the root's checkpoint files are checked against, of one partition's report."""

    target: Target
    kafka_log_end: int | None
    below_log_start: bool

    @classmethod
    def of(cls, report: PartitionReport) -> RootFacts:
        return cls(report.target, report.kafka_log_end, report.below_log_start)


def verify_root_checkpoints(
    root: Path, reports: list[PartitionReport] | list[RootFacts]
) -> list[tuple[Finding, dict]]:
    """log.dirs checkpoint files against what is on disk: each finding with the ``topic`` and
    ``partition`` of the checkpoint entry it is about (None for the file as a whole)."""
    out: list[tuple[Finding, dict]] = []
    whole = {"topic": None, "partition": None}
    ends = {}
    below_start = set()  # reported per partition already (below_log_start)
    for r in reports:
        name = F.parse_partition_dir(r.target.partition_dir.name)
        if name and not name.state:
            ends[(name.topic, name.partition)] = r.kafka_log_end
            if r.below_log_start:
                below_start.add((name.topic, name.partition))
    for cname in F.ROOT_CHECKPOINTS:
        path = root / cname
        if not path.exists():
            continue
        try:
            data = read_side_file(path, F.OFFSET_CHECKPOINT)
            entries = cp.read_offset_checkpoint(data) if data.strip() else []
        except CorruptionError as exc:
            # read through CheckpointFileWithFailureHandler: its IOException marks the log dir
            # offline (LogDirFailureChannel), even where LogManager then resets the values
            finding = from_error(
                exc.in_file(path),
                str(path),
                severity=K.ERROR,
                repairable=False,
                note=" (Kafka's checkpoint reader fails on it and takes the log dir offline: a"
                " broker with no other log dir shuts down at start, 'Shutdown broker because all"
                " log dirs ... have failed', seen on 4.1.0)",
            )
            out.append((finding, whole))
            continue
        except OSError as exc:
            finding = Finding(
                K.ERROR, K.UNREADABLE, str(path), None, None, exc.strerror or str(exc)
            )
            out.append((finding, whole))
            continue
        for e in entries:
            end = ends.get((e.topic, e.partition))
            if end is None or e.offset <= end:
                continue
            if cname == "log-start-offset-checkpoint":
                if (e.topic, e.partition) in below_start:
                    continue
                # LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd: every segment goes
                sev, why = K.ERROR, "the log start offset is past the log end"
            else:
                sev, why = K.INFO, "Kafka resets it to the log end at startup"
            message = f"{e.topic}-{e.partition}: {e.offset} > log end {end} ({why})"
            finding = Finding(sev, K.CHECKPOINT, str(path), None, e.offset, message)
            out.append((finding, {"topic": e.topic, "partition": e.partition}))
    return out
