"""kseg/dump as a library: the events dump builds, without the CLI."""

from __future__ import annotations

import orjson
import pytest

from kseg.dump.record_events import record_event_maker
from kseg.format.log import iter_entries
from kseg.render.dump_json import record_json_maker


@pytest.mark.parametrize("mode", ["auto", "utf8", "hex", "base64", "json", "redact"])
def test_direct_json_lines_equal_the_event_dicts(tree, mode):
    """record_json_maker is a fast path: it must print exactly what the dict path prints."""
    n = 0
    for log in sorted(tree.rglob("*.log")):
        as_dict = record_event_maker(str(log), mode)
        as_line = record_json_maker(str(log), mode)
        for entry in iter_entries(log.read_bytes()):
            for rec in entry.record_tuples():
                assert as_line(rec) == orjson.dumps(as_dict(rec), option=orjson.OPT_APPEND_NEWLINE)
                n += 1
    assert n > 500
