"""Log07Writer: segments named by byte offset, rolled past a size, read back by the format core."""

from __future__ import annotations

import pytest

from kseg.format import kafka07 as k7
from kseg.format.errors import KsegError
from kseg.storage.writer07 import Log07Writer, mark_clean_shutdown


def test_segments_roll_and_are_named_by_byte_offset(tmp_path):
    pdir = tmp_path / "logs" / "events-0"
    payloads = []
    with Log07Writer(pdir, segment_bytes=300) as w:
        for i, codec in enumerate(["none", "gzip", "snappy"] * 6):
            batch = [b"event %d.%d" % (i, j) * 3 for j in range(3)]
            payloads += batch
            w.append(batch, compression=codec, magic=0 if (i % 3 == 0 and i % 2) else None)
        end = w.end
    names = sorted(p.name for p in pdir.iterdir())
    assert all(n.endswith(".kafka") and len(n) == 26 for n in names)
    assert len(names) > 2
    pos = 0
    read = []
    for name in names:
        start = int(name[:20])
        assert start == pos  # name + size == next name
        data = (pdir / name).read_bytes()
        for e in k7.entries(data, base=start):
            if e.is_compressed:
                read += [m.payload for m in k7.inner_messages(e)]
            else:
                with e.payload() as p:
                    read.append(bytes(p))
        if name != names[-1]:
            assert len(data) > 300  # rolled only once past the size
        pos += len(data)
    assert pos == end and read == payloads
    assert mark_clean_shutdown(tmp_path / "logs").read_bytes() == b""


def test_writer_starts_only_new_logs(tmp_path):
    Log07Writer(tmp_path / "t-0").close()
    with pytest.raises(KsegError, match="already holds segments"):
        Log07Writer(tmp_path / "t-0")
    with pytest.raises(ValueError, match="0.7 knows"):
        Log07Writer(tmp_path / "u-0", compression="zstd").append([b"x"])
