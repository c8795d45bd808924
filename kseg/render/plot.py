"""`kseg stats --plot FILE`: the picture of what stats counted (matplotlib, Agg backend); and
`kseg salvage --plot FILE`: the cost of a salvage per partition (below).

Top: one timeline per partition, time (UTC) against offset: the (last offset, max timestamp) of
the batches (sampled, kseg.stats.stats.Timeline), segment boundaries, offset gaps, where
counting stopped at corruption, and the log start offset. Bottom: bytes on disk per topic,
stacked by codec, with the uncompressed bytes and the ratio when --uncompressed counted them.
matplotlib is imported only here, only for --plot (the `plot` extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.outcome import BadOption

SUFFIXES = (".png", ".svg")
MAX_TIMELINES = 24  # partitions drawn (the largest by bytes); the title says how many of all
_CODEC_COLOURS = {
    "none": "#9e9e9e",
    "gzip": "#1f77b4",
    "snappy": "#2ca02c",
    "lz4": "#ff7f0e",
    "zstd": "#9467bd",
}


def check_plot(path: Path) -> None:
    """Before any work: a FILE kseg can draw (.png or .svg: BadOption, exit 16), and matplotlib
    there to draw it (else OSError, one line, exit 8: the environment lacks the extra, as for
    `kseg spark` without its extra)."""
    if path.suffix.lower() not in SUFFIXES:
        raise BadOption(f"{path}: the picture's name must end in .png or .svg", "--plot")
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise OSError(f"--plot needs matplotlib: pip install 'kseg[plot]' ({exc})") from None


def write_plot(run, path: Path) -> None:
    """Draw ``run`` (a finished kseg.stats.stats.StatsRun with timelines) into ``path``."""
    import warnings

    with warnings.catch_warnings():
        # matplotlib's advice (a tick picker on a sub-second range) is nothing for an operator
        warnings.simplefilter("ignore")
        _draw(run, path)


def _draw(run, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    from kseg.format.timestamps import MAX_MS

    timelines = [t for t in run.timelines if t.segments]
    sizes = {
        id(t): run.partition_bytes.get((t.log_dir, t.topic, t.partition), 0) for t in timelines
    }
    shown = sorted(timelines, key=lambda t: -sizes[id(t)])[:MAX_TIMELINES]
    shown.sort(key=lambda t: (t.log_dir, t.topic or "", t.partition or 0))
    topics = run.topic_rows
    cols = 2 if len(shown) > 1 else 1
    rows = (len(shown) + cols - 1) // cols
    fig = plt.figure(figsize=(13, 2.6 * rows + 3.6), layout="constrained")
    grid = fig.add_gridspec(rows + 1, cols, height_ratios=[2.6] * rows + [3.2])
    several = len({t.log_dir for t in timelines}) > 1
    title = "kseg stats: offsets over time per partition"
    if len(shown) < len(timelines):
        title += f" ({len(shown)} largest of {len(timelines)} partitions)"
    fig.suptitle(title, fontsize=12)

    def when(ms: int):
        return mdates.num2date(ms / 86_400_000)  # days since 1970-01-01, matplotlib's epoch

    for i, tl in enumerate(shown):
        ax = fig.add_subplot(grid[i // cols, i % cols])
        name = f"{tl.topic}-{tl.partition}" if tl.topic is not None else tl.segments[0].file
        if several:
            name += f"  [{tl.log_dir}]"
        ax.set_title(name, fontsize=9, loc="left")
        pts = [(o, ts) for o, ts in tl.samples if 0 <= ts <= MAX_MS]
        if pts:
            ax.plot(
                [when(ts) for _, ts in pts],
                [o for o, _ in pts],
                ".",
                markersize=2.5,
                color="#1f77b4",
                label="batches (max timestamp)",
            )
            lo = min(ts for _, ts in pts)
            hi = max(ts for _, ts in pts)
        else:
            empty = "no batch" if not tl.untimed else "no timestamps (magic 0)"
            ax.text(0.5, 0.5, empty, transform=ax.transAxes, ha="center")
            lo = hi = 0
        if pts and tl.untimed:
            ax.text(
                0.99,
                0.07,
                f"{tl.untimed} batches without a timestamp are not drawn",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=7,
                color="#555555",
            )
        for k, seg in enumerate(tl.segments):
            ax.axhline(
                seg.base_offset,
                color="#777777",
                linewidth=0.7,
                linestyle=":",
                label="segment start" if k == 0 else None,
            )
        for k, (a, b) in enumerate(tl.gaps):
            ax.axhspan(a, b, color="#ffbb78", alpha=0.5, label="offset gap" if k == 0 else None)
        for k, (a, b) in enumerate(tl.uncounted):
            ax.axhspan(
                a,
                b,
                facecolor="none",
                edgecolor="#d62728",
                hatch="xx",
                linewidth=0,
                alpha=0.5,
                label="not counted (after corruption)" if k == 0 else None,
            )
        if tl.log_start_offset is not None:
            ax.axhline(
                tl.log_start_offset,
                color="#2ca02c",
                linewidth=1.2,
                linestyle="--",
                label=f"log start {tl.log_start_offset}",
            )
        bad = [s for s in tl.segments if s.error_position is not None]
        for k, seg in enumerate(bad):
            y = seg.error_offset if seg.error_offset is not None else seg.base_offset
            # where it stopped in time: the last batch counted before it (else the segment's own)
            before = [ts for o, ts in pts if o < y]
            x = max(before) if before else (seg.max_timestamp or hi)
            ax.plot(
                [when(x)] if pts or x else [0],
                [y],
                "X",
                color="#d62728",
                markersize=9,
                label="counting stopped (corrupt)" if k == 0 else None,
            )
            ax.annotate(
                f"{Path(seg.file).name} byte {seg.error_position}",
                (when(x) if pts or x else 0, y),
                textcoords="offset points",
                xytext=(8, -4),
                ha="left",
                va="top",
                fontsize=7,
                color="#d62728",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "#d62728", "alpha": 0.9},
            )
        if pts:
            pad = max((hi - lo) * 0.03, 500)
            ax.set_xlim(when(lo - pad), when(hi + pad))
            loc = mdates.AutoDateLocator(maxticks=6)
            ax.xaxis.set_major_locator(loc)
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))
        ax.set_ylabel("offset", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.grid(True, linewidth=0.3, alpha=0.5)
        ax.legend(fontsize=6, loc="upper left", framealpha=0.7)

    ax = fig.add_subplot(grid[rows, :])
    _topic_bars(ax, topics, several)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _topic_bars(ax, topics: list[dict], several: bool) -> None:
    """Bytes on disk per topic, stacked by codec share; uncompressed beside (with --uncompressed)."""
    names = [
        (t["topic"] if t["topic"] is not None else "(no topic)")
        + (f"\n[{_short(t['log_dir'])}]" if several and t.get("log_dir") else "")
        for t in topics
    ]
    xs = list(range(len(topics)))
    unc: list[float] = []
    both = any(t["uncompressed_bytes"] is not None for t in topics)
    width = 0.38 if both else 0.6
    shift = width / 2 if both else 0.0
    bottoms = [0.0] * len(topics)
    scale, unit = _unit(max((t["bytes"] for t in topics), default=0))
    codecs = sorted({c for t in topics for c in t["codecs"]}, key=list(_CODEC_COLOURS).index)
    for codec in codecs:
        heights = [t["bytes"] * (t["codec_shares"].get(codec) or 0) / scale for t in topics]
        ax.bar(
            [x - shift for x in xs],
            heights,
            width,
            bottom=bottoms,
            color=_CODEC_COLOURS.get(codec, "#444444"),
            label=f"on disk: {codec}",
        )
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    if both:
        unc = [(t["uncompressed_bytes"] or 0) / scale for t in topics]
        ax.bar(
            [x + width / 2 for x in xs],
            unc,
            width,
            color="white",
            edgecolor="#333333",
            hatch="//",
            label="uncompressed",
        )
        for x, t, h in zip(xs, topics, unc, strict=True):
            if t["compression_ratio"] is not None:
                ax.annotate(
                    f"{t['compression_ratio']:.2f}x",
                    (x + width / 2, h),
                    textcoords="offset points",
                    xytext=(0, 2),
                    ha="center",
                    fontsize=7,
                )
    ax.set_xticks(
        xs,
        names,
        fontsize=7,
        rotation=30 if len(topics) > 8 else 0,
        ha="right" if len(topics) > 8 else "center",
    )
    ax.set_xlim(-0.7, len(topics) - 0.3)
    top = max([*bottoms, *unc], default=0)
    ax.set_ylim(0, (top or 1) * 1.35)  # room for the legend and the ratios above the bars
    ax.set_ylabel(f"{unit}", fontsize=8)
    ax.set_title(
        "size per topic (on disk by codec; uncompressed and ratio with --uncompressed)",
        fontsize=9,
        loc="left",
    )
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(True, axis="y", linewidth=0.3, alpha=0.5)
    ax.legend(fontsize=7, ncols=6, loc="upper left")


def _unit(largest: int) -> tuple[float, str]:
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if largest >= scale:
            return float(scale), unit
    return 1.0, "bytes"


def _short(log_dir: str) -> str:
    """A log dir's last two path parts: enough to tell brokers' roots apart under a bar."""
    p = Path(log_dir)
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


# --- kseg salvage --plot FILE ------------------------------------------------------------------
SALVAGE_COLOURS = {"kafka": "#1f77b4", "salvage": "#2ca02c", "lost": "#d62728"}


class SalvageBands(NamedTuple):
    """What one partition's salvage picture draws, taken from its ``salvage`` event (the cost):
    [first, last] offset ranges per row and the numbers in their labels."""

    name: str
    kafka: list[tuple[int, int]]  # what Kafka's recovery keeps
    salvage: list[tuple[int, int]]  # what salvage keeps (every source, minus the lost ranges)
    lost: list[tuple[int, int]]  # lost for good
    kafka_records: int
    salvage_records: int
    lost_records: int  # at most
    lost_to_end: bool
    end: int  # the axis' right end (exclusive)


def _minus(ranges: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for a, b in sorted(ranges):
        for h0, h1 in sorted(holes):
            if h1 < a or h0 > b:
                continue
            if h0 > a:
                out.append((a, h0 - 1))
            a = max(a, h1 + 1)
            if a > b:
                break
        if a <= b:
            out.append((a, b))
    return out


def salvage_bands(ev: dict) -> SalvageBands:
    """The rows of one partition's picture from its ``salvage`` event (kseg.salvage.cost)."""
    k, s, lost = ev["kafka_keeps"], ev["salvage_keeps"], ev["lost"]
    kept = [
        (x["first_offset"], x["last_offset"])
        for x in ev["kept_from"]
        if x["first_offset"] is not None and x["last_offset"] is not None
    ]
    start = min((a for a, _ in kept), default=0)
    ends = [b + 1 for _, b in kept] + [s["log_end"] or 0, k["log_end"] or 0]
    ends += [(b if b is not None else a) + 1 for a, b in lost["offsets"]]
    end = max(ends + [start + 1])
    gone = [(a, end - 1 if b is None else b) for a, b in lost["offsets"]]
    kafka_end = k["log_end"] if k["starts"] and k["log_end"] is not None else start
    kafka = [(start, kafka_end - 1)] if kafka_end > start and k["records"] else []
    salvage = [] if s.get("reset_to") is not None else _minus(kept, gone)
    topic, partition = ev.get("topic"), ev.get("partition")
    name = f"{topic}-{partition}" if topic is not None else ev["partition_dir"]
    return SalvageBands(
        name, kafka, salvage, gone, k["records"], s["records"], lost["records_at_most"],
        lost["to_log_end"], end,
    )  # fmt: skip


def write_salvage_plot(evs: list[dict], path: Path) -> None:
    """Draw the cost of each partition's salvage (its ``salvage`` events) into ``path``: per
    partition, along the offset axis, what Kafka keeps, what salvage keeps, what is lost."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _draw_salvage([salvage_bands(e) for e in evs][:MAX_TIMELINES], len(evs), path)


def _draw_salvage(bands: list[SalvageBands], total: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(1, len(bands))
    fig = plt.figure(figsize=(13, 1.9 * rows + 1.2), layout="constrained")
    title = "kseg salvage: what Kafka keeps, what salvage keeps, what is lost for good"
    if len(bands) < total:
        title += f" ({len(bands)} of {total} partitions)"
    fig.suptitle(title, fontsize=12)
    if not bands:
        fig.add_subplot(1, 1, 1).text(0.5, 0.5, "no partition", ha="center")
    for i, b in enumerate(bands):
        ax = fig.add_subplot(rows, 1, i + 1)
        lost_label = f"lost for good: at most {b.lost_records} records" + (
            " and more to the log end" if b.lost_to_end else ""
        )
        for y, (key, ranges, label) in enumerate(
            (
                ("lost", b.lost, lost_label),
                ("salvage", b.salvage, f"salvage keeps {b.salvage_records} records"),
                ("kafka", b.kafka, f"Kafka keeps {b.kafka_records} records"),
            )
        ):
            spans = [(a, max(z - a + 1, 1)) for a, z in ranges]
            ax.broken_barh(spans, (y - 0.35, 0.7), color=SALVAGE_COLOURS[key])
            ax.text(b.end, y, f"  {label}", va="center", fontsize=8)
        ax.set_yticks([0, 1, 2], ["lost", "salvage", "Kafka"])
        ax.set_xlim(min([a for a, _ in b.salvage + b.kafka + b.lost] or [0]), b.end * 1.0)
        ax.set_title(b.name, fontsize=9, loc="left")
        ax.set_xlabel("offset", fontsize=8)
        ax.tick_params(labelsize=8)
    fig.savefig(path)
    plt.close(fig)
