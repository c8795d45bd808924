"""`kseg schemas` as a library call: every subject's versions as the registry holds them
(replayed from ``_schemas``, or loaded from an export), each a ``schema`` event; the problems
met on the way (``schema_problem``: invalid data); a ``summary``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.outcome import Outcome
from kseg.schemas.registry import UNREADABLE, Version
from kseg.schemas.sources import TOPIC, listing


class SchemasRun:
    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.outcome = Outcome.OK

    def events(self) -> Iterator[dict]:
        reg = listing(self.paths)  # BadOption (usage) when there is nothing to list
        rows = [(ver, "deleted" if ver.deleted else "live") for ver in reg.versions.values()]
        rows += [(ver, "hard-deleted") for ver in reg.removed.values()]
        rows.sort(key=lambda r: (r[0].subject, r[0].version))
        for ver, state in rows:
            yield schema_event(ver, state)
        for p in reg.problems:
            self.outcome |= Outcome.UNREADABLE if p["kind"] == UNREADABLE else Outcome.INVALID_DATA
            yield {"type": "schema_problem", "file": p["file"], "offset": p["offset"],
                   "kind": p["kind"], "message": p["message"]}  # fmt: skip
        if not rows:
            self.outcome |= Outcome.USAGE  # nothing found to list is never "clean"
            yield {"type": "failure", "message": f"{reg.source}: no schema in it"}
        yield {
            "type": "summary",
            "schemas": reg.source,
            "subjects": len({ver.subject for ver, _s in rows}),
            "versions": len(rows),
            "ids": len(reg.by_id),
            "deleted": sum(1 for _v, s in rows if s == "deleted"),
            "hard_deleted": sum(1 for _v, s in rows if s == "hard-deleted"),
            "records": reg.records,
            "problems": len(reg.problems),
            "notes": list(reg.notes),
        }


def schema_event(ver: Version, state: str) -> dict:
    return {
        "type": "schema",
        "subject": ver.subject,
        "version": ver.version,
        "id": ver.id,
        "schema_type": ver.schema_type,
        "state": state,
        "references": [r._asdict() for r in ver.references],
        "offset": ver.offset,
        "schema": ver.schema,
    }


__all__ = ["SchemasRun", "TOPIC"]
