"""`kseg salvage --plot FILE`: per partition, along the offset axis, what Kafka keeps, what
salvage keeps and what is lost for good; the drawn ranges and numbers are the cost's."""

from __future__ import annotations

import struct

import pytest

from kseg.render.plot import salvage_bands
from tests.helpers import run_kseg
from tests.salvage.cases import damaged
from tests.salvage.test_salvage import salvage, the

pytest.importorskip("matplotlib", reason="--plot needs the plot extra (pip install 'kseg[plot]')")


def test_the_picture_is_a_png_drawn_from_the_cost(tmp_path):
    case = damaged(tmp_path, "middle_segment")
    before = sorted(p.name for p in case.pdir.iterdir())
    code, evs, proc = salvage(case.pdir, "--dry-run", "--plot", tmp_path / "cost.png")
    assert code == 4, proc.stderr
    assert proc.stderr.decode().endswith(f"kseg: wrote {tmp_path / 'cost.png'}\n")
    data = (tmp_path / "cost.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    assert w >= 1000 and h >= 200
    assert sorted(p.name for p in case.pdir.iterdir()) == before  # --dry-run: nothing written
    ev = the(evs)
    b = salvage_bands(ev)
    assert (b.kafka_records, b.salvage_records, b.lost_records) == (
        ev["kafka_keeps"]["records"], ev["salvage_keeps"]["records"],
        ev["lost"]["records_at_most"],
    )  # fmt: skip
    assert b.lost == [tuple(r) for r in ev["lost"]["offsets"]] == [(min(case.lost), max(case.lost))]
    assert b.kafka == [(0, ev["kafka_keeps"]["log_end"] - 1)]
    # salvage keeps everything from the first offset to the log end but the lost range
    end = ev["salvage_keeps"]["log_end"]
    kept = {o for a, z in b.salvage for o in range(a, z + 1)}
    assert kept == set(range(end)) - set(case.lost) and b.end == end
    code, _, proc = salvage(case.pdir, "--dry-run", "--plot", tmp_path / "cost.svg")
    svg = (tmp_path / "cost.svg").read_text()
    for label in (
        f"Kafka keeps {b.kafka_records} records",
        f"salvage keeps {b.salvage_records} records",
        f"lost for good: at most {b.lost_records} records",
    ):
        assert label in svg


def test_a_wrong_picture_name_is_16_before_any_work(tmp_path):
    case = damaged(tmp_path, "flip")
    proc = run_kseg("salvage", case.pdir, "--plot", tmp_path / "cost.gif")
    assert proc.returncode == 16 and b"png or .svg" in proc.stderr
    assert run_kseg("verify", case.pdir).returncode == 4  # untouched


def test_an_unwritable_picture_is_8_after_the_rows(tmp_path):
    case = damaged(tmp_path, "flip")
    code, evs, proc = salvage(case.pdir, "--dry-run", "--plot", tmp_path / "no" / "p.png")
    assert code == 4 | 8 and the(evs)["status"] == "damaged"
    assert b"cannot write the plot" in proc.stderr
