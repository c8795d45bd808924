"""dump's ``{"type": "error"}`` events: a problem in the input, reported where it was found, and
the kinds that tell a reader (dump's run) how bad it was. dump07 and the .log dump share them."""

from __future__ import annotations

from kseg.format.errors import CorruptionError

UNREADABLE = "unreadable"
BAD_MAGIC = "bad_magic"
USAGE = "usage"


def error_event(
    exc: CorruptionError | OSError | str, file: str | None = None, kind: str | None = None
) -> dict:
    if isinstance(exc, CorruptionError):
        return {
            "type": "error",
            "file": exc.file or file,
            "position": exc.position,
            "offset": exc.offset,
            "kind": exc.kind,
            "field": exc.field,
            "message": exc.message,
            "stored": exc.stored,
            "computed": exc.computed,
        }
    message = exc if isinstance(exc, str) else f"{exc.strerror or exc}"
    return {
        "type": "error",
        "file": file,
        "position": getattr(exc, "position", None),  # e.g. where a file shrank
        "offset": None,
        "kind": kind or UNREADABLE,
        "field": None,
        "message": message,
    }
