"""dump's ``{"type": "error"}`` events: a problem in the input, reported where it was found, and
the kinds that tell a reader (dump's run) how bad it was. dump07 and the .log dump share them."""

from __future__ import annotations

from kseg.format.errors import CorruptionError

SKIPPED = "skipped"
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


def skipped_event(skipped, file: str | None) -> dict:
    """dump --resync's ``{"type": "skipped"}`` event: the byte range [start, end) of ``file``
    that a resync walk (kseg.format.resync.Skipped) could not read, the offsets it must have
    held (None: none, or unknown), the error at its first byte (kind, reason), and whether the
    entries after it were found inside the damaged entry's claimed extent (ambiguous)."""
    return {
        "type": SKIPPED,
        "file": file,
        "start": skipped.start,
        "end": skipped.end,
        "bytes": skipped.end - skipped.start,
        "first_offset": skipped.first_offset,
        "last_offset": skipped.last_offset,
        "kind": skipped.kind,
        "reason": skipped.reason,
        "ambiguous": skipped.ambiguous,
    }


def lost_offsets(ev: dict) -> str:
    """The offsets a ``skipped`` event's range held, in words: ``offsets 30..39``, ``offsets
    30.. (up to the end: unknown)``, or ``no offsets`` (a zero-filled tail, or none between the
    entries around it)."""
    first, last = ev["first_offset"], ev["last_offset"]
    if first is None:
        return "no offsets"
    if last is None:
        return f"offsets {first}.. (to the end: unknown)"
    return f"offsets {first}..{last}"


def skipped_message(ev: dict) -> str:
    """One line for a ``skipped`` event (text, table, stderr): what was skipped and why."""
    text = (
        f"bytes {ev['start']}..{ev['end']} ({ev['bytes']} bytes, {lost_offsets(ev)}):"
        f" {ev['kind']}: {ev['reason']}"
    )
    if ev["ambiguous"]:
        text += " (ambiguous: resumed inside the extent the damaged entry's size claims)"
    return text
