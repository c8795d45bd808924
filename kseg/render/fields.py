"""How single values look in text and tables: shared by every text-like renderer."""

from __future__ import annotations

import orjson

from kseg.format.timestamps import with_iso
from kseg.render.streams import one_line  # noqa: F401 - text-like renderers take it from here

# fields holding epoch ms: text and tables show ISO-8601 UTC beside them (JSON keeps the number)
TIME_FIELDS = frozenset(
    (
        "timestamp",
        "max_timestamp",
        "base_timestamp",
        "min_base_timestamp",
        "delete_horizon_ms",
        "target_timestamp",
        "commit_timestamp",
        "expire_timestamp",
        "current_state_timestamp",
        "last_commit_timestamp",  # kseg offsets --list
        "write_timestamp",  # kseg offsets: a share-partition state's last write
        "target",  # seek's target: epoch ms, or a negative special target (-1 latest, ...)
        "first_timestamp",  # kseg txn
        "last_timestamp",
        "held_since",
        "judged_at",
        "lost_first_timestamp",  # kseg replicas
        "lost_last_timestamp",
    )
)

# fields holding a path: quoted in text when they hold a control character
PATH_FIELDS = ("file", "segment", "partition_dir", "quarantine", "partition")


def quoted(value: object) -> str:
    """A value shown unambiguously: JSON for strings/containers, bare for numbers and null."""
    return orjson.dumps(value).decode()


def safe_path(path: str) -> str:
    """A path as it is, or JSON-quoted when it holds a newline or another control character
    (one line of output stays one line)."""
    return path if path.isprintable() else orjson.dumps(path).decode()


def bool_text(b: bool) -> str:
    """A boolean as every text-like output writes it: ``true``/``false`` (as JSON and
    kafka-dump-log's ``isTransactional: true``), never Python's ``True``."""
    return "true" if b else "false"


def field_text(key: str, v: object) -> str:
    if type(v) is bool:
        return bool_text(v)
    if isinstance(v, (str, list, dict)):
        return quoted(v)
    if key in TIME_FIELDS and type(v) is int and v >= 0:  # negatives: -1 "none", -2 earliest...
        return with_iso(v)
    return str(v)


def epochs_text(epochs) -> str:
    """A leader-epoch history ``[[epoch, start_offset], ...]`` compactly: ``0@0 2@100 4@120``
    (empty: no entry)."""
    return " ".join(f"{epoch}@{start}" for epoch, start in epochs)
