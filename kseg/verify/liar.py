"""Which batch to blame when a batch's offsets go back: baseOffset lies outside the CRC, so
the batch whose offsets do not fit between two agreeing neighbours is the liar."""

from __future__ import annotations

from kseg.format.errors import CorruptionError
from kseg.storage.segment import Segment
from kseg.verify import findings as K
from kseg.verify.findings import Finding


def find_liar(seg: Segment, buf, position: int, name: str) -> Finding | None:
    """The batch to blame when the batch at ``position`` (B) starts at or below the previous
    batch's (A) last offset. baseOffset lies outside the CRC (the broker rewrites it), so a CRC
    that matches proves everything but it. The liar is the batch whose offsets do not fit
    between two neighbours that agree with each other: A when B follows A's predecessor (A's
    base offset was raised), else B when the batch after B follows A (B's was lowered); A
    when both fit (a small shift: cutting earlier keeps only what is proven). None when
    neither does (e.g. a run of batches that go back): B stays the first problem."""
    window: list[tuple] = []  # (position, first, last), up to the batch after B
    try:
        for t in seg.walk_headers(buf):
            if not t[9]:  # a batch whose CRC fails proves nothing
                break
            window.append((t[0], t[3], t[4]))
            if len(window) > 4:
                window.pop(0)
            if t[0] > position:
                break
    except CorruptionError:
        pass
    at = next((i for i, w in enumerate(window) if w[0] == position), None)
    if at is None or at == 0:
        return None
    a, b = window[at - 1], window[at]
    before_a = window[at - 2][2] if at >= 2 else seg.base_offset - 1
    after_b = window[at + 1][1] if at + 1 < len(window) else None
    if at < 2 and a[0] != 0:  # A's predecessor fell out of the window: not known
        return None
    if b[1] > before_a:  # B follows A's predecessor: A was raised
        liar, prev_last, next_first = a, before_a, b[1]
    elif after_b is None or after_b > a[2]:  # the batch after B follows A: B was lowered
        liar, prev_last, next_first = b, a[2], after_b
    else:
        return None
    pos, first, last = liar
    after = "" if next_first is None else f", the batch after it starts at {next_first}"
    message = (
        f"base_offset {first} (outside the CRC) is wrong: this batch's offsets {first}..{last}"
        f" do not fit between its neighbours', which agree with each other (the batch before it"
        f" ends at {prev_last}{after})"
    )
    return Finding(K.ERROR, K.BAD_BASE_OFFSET, name, pos, first, message, True)
