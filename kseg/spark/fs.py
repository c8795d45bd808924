"""Where segment files live: local paths or URIs, both read through kseg.storage's Segment
(a URI through pyarrow.fs: kseg.storage.uri, kseg.storage.mapped.RemoteMap).

`hdfs://` needs a Hadoop client (libhdfs) on the executors, `s3://` credentials from the usual AWS
chain (environment, profile, instance role), `gs://` from Google's default credentials. Local
paths (including NFS/FUSE mounts) need nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kseg.storage.segment import Segment
from kseg.storage.uri import is_uri

__all__ = ["is_uri", "open_range"]


@contextmanager
def open_range(path: str, start: int, end: int) -> Iterator[tuple[object, int]]:
    """(buffer, offset of buffer[0] in the file) to read [start, end) of the segment ``path``
    from: the segment's on-demand reader (kseg.storage.mapped), which reads only the window the
    walk reaches (a local file by pread, a URI's by ranged reads), at absolute positions (the
    offset is always 0)."""
    with Segment(path).mapped() as buf:
        yield buf, 0
