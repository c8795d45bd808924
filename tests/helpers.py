"""Shared test helpers: run the CLI in-process, parse JSON Lines, copy fixture partitions."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest

from kseg.cli import main


def run_cli(monkeypatch, capsysbinary, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["kseg", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    out, err = capsysbinary.readouterr()
    return exc.value.code, out.decode(), err.decode()


def events(text: str) -> list[dict]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def copy_partition(src: Path, dest_root: Path) -> Path:
    dest = dest_root / src.name
    shutil.copytree(src, dest)
    return dest
