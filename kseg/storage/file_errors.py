"""The two ways a file read by kseg.storage is refused or fails under the reader: below both
kseg.storage.mapped (local files) and kseg.storage.uri (pyarrow.fs), which raise them alike.
kseg.storage.mapped still exposes both names."""

from __future__ import annotations

import errno


class NotRegularFileError(OSError):
    """A named pipe, device, socket or directory where a file is expected."""


class FileShrankError(OSError):
    """The file became shorter than it was when opened, while it was being read."""

    def __init__(self, path: str, position: int, size_at_open: int, size_now: int) -> None:
        super().__init__(
            errno.EIO,
            f"file shrank while reading: {size_at_open} bytes when opened, {size_now} now "
            f"(could not read byte {position}); was it truncated or deleted by retention?",
            path,
        )
        self.position = position
