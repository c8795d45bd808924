"""The record files of ``kseg replicas --export-lost`` (kseg.replicas.export.RecordFiles): the
library writes the partition dir of the lost batches and is handed these writers, as dump is
handed its JSON maker (the library sits below render and spark).

- JSON Lines: the ``record`` lines ``kseg dump -f json`` prints for the exported dir, through
  dump's run and this layer's JSON renderer (byte for byte the command's lines; the other
  events are left out while they are written, in whatever pieces they come).
- Parquet: kseg.spark.parquet_out.write_records_file (the Spark export's records schema), when
  pyarrow is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from kseg.replicas.export import ExportError, RecordFiles


class _RecordLines:
    """A binary sink passing on only dump's ``record`` lines (written in any pieces)."""

    _MARK = b'{"type":"record",'

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.head = b""  # the start of the current line, until it is told apart
        self.keep: bool | None = None  # None: not decided yet
        self.lines = 0

    def write(self, data) -> None:
        data = bytes(data)
        while data:
            if self.keep is None:
                need = len(self._MARK) - len(self.head)
                self.head += data[:need]
                data = data[need:]
                nl = self.head.find(b"\n")
                if nl >= 0:  # a short line: never a record's
                    data, self.head = self.head[nl + 1 :] + data, b""
                    continue
                if len(self.head) < len(self._MARK):
                    return
                self.keep = self.head == self._MARK
                if self.keep:
                    self.out.write(self.head)
                self.head = b""
            nl = data.find(b"\n")
            piece = data if nl < 0 else data[: nl + 1]
            if self.keep:
                self.out.write(piece)
            if nl < 0:
                return
            if self.keep:
                self.lines += 1
            self.keep = None
            data = data[nl + 1 :]


def write_record_lines(pdir: Path, out: BinaryIO) -> int:
    """``kseg dump -f json`` of ``pdir``, its record lines only, into ``out``; returns how many.
    Anything dump finds wrong there raises ExportError (the export is not what it says)."""
    from kseg.dump.options import DumpOptions
    from kseg.dump.run import DumpRun
    from kseg.outcome import Outcome
    from kseg.render.dump_json import JSON_LINES
    from kseg.render.json import write_json_chunks

    run = DumpRun([pdir], DumpOptions(json_lines=JSON_LINES))
    problems: list[dict] = []

    def chunks():
        for chunk in run.chunks():
            problems.extend(
                ev for ev in chunk if type(ev) is dict and ev["type"] in ("error", "skipped")
            )
            yield chunk

    sink = _RecordLines(out)
    for _ in write_json_chunks(chunks(), sink):
        pass
    if run.outcome != Outcome.OK or problems:
        first = problems[0] if problems else {"file": str(pdir), "message": "not read whole"}
        raise ExportError(f"{first['file']}: dump of the exported dir: {first.get('message')}")
    return sink.lines


def record_files() -> RecordFiles:
    """JSON Lines always; Parquet when pyarrow is installed."""
    import importlib.util

    parquet = None
    if importlib.util.find_spec("pyarrow") is not None:
        from kseg.spark.parquet_out import write_records_file

        parquet = write_records_file
    return RecordFiles(write_record_lines, parquet)
