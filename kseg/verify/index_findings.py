"""The findings a segment's index statuses (kseg.verify.index_compare) give: a wrong index,
a missing one (how much that matters depends on the segment being active), preallocation."""

from __future__ import annotations

from kseg.format import offset_index as oi
from kseg.format import time_index as ti
from kseg.verify import findings as K
from kseg.verify.findings import Finding
from kseg.verify.index_check import MISSING, WRONG
from kseg.verify.segment import SegmentScan


def index_findings(scan: SegmentScan, active: bool) -> None:
    """Add to ``scan.findings`` what its index statuses say (``active``: the last segment)."""
    for suffix, st in ((".index", scan.offset_index), (".timeindex", scan.time_index)):
        if st is None:
            continue
        path = str(scan.log.with_suffix(suffix))
        if st.status == WRONG:
            d = st.first_difference or {}
            scan.findings.append(
                Finding(
                    K.ERROR,
                    K.INDEX_MISMATCH,
                    path,
                    d.get("position"),
                    None,
                    f"entry {d.get('entry')}: {d.get('message')}",
                    True,
                )
            )
        elif st.status == MISSING:
            sev = K.INFO if active else K.WARNING
            if active:
                why = "Kafka rebuilds it at startup"
            elif suffix == ".index":  # LogLoader.loadSegmentFiles: NoSuchFileException
                why = "Kafka recovers the segment at startup to rebuild it"
            else:  # LogSegment.sanityCheck(timeIndexFileNewlyCreated): resize(0)
                why = (
                    "Kafka creates it empty and time lookups fall back to the .log's mtime; "
                    "`kseg index rebuild` writes it"
                )
            scan.findings.append(
                Finding(
                    sev,
                    K.MISSING_INDEX,
                    path,
                    None,
                    None,
                    f"{suffix} file is missing ({why})",
                    True,
                )
            )
        if st.padded_bytes:
            note = (
                "preallocated active index"
                if active
                else "preallocated index on an inactive segment (unclean shutdown?)"
            )
            scan.findings.append(
                Finding(
                    K.INFO,
                    K.INDEX_PADDING,
                    path,
                    st.entries * (oi.ENTRY_SIZE if suffix == ".index" else ti.ENTRY_SIZE),
                    None,
                    f"{note}: {st.entries} entries, then {st.padded_bytes} zero bytes",
                )
            )
