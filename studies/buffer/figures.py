"""The buffer-size study's figure: throughput and files per mount against buffer size, Little's law drawn."""

from __future__ import annotations

from pathlib import Path

from studies.buffer.analysis import COLLAPSE, ENOUGH, BufferAnalysis
from studies.figures import new_figure, save_png

RUN_COLOUR = "#2ca02c"
LITTLE_COLOUR = "#c0392b"
UNLIMITED_COLOUR = "#222222"


def buffer_figure(analysis: BufferAnalysis, path: Path) -> Path:
    figure = new_figure(11.0, 3.8)
    throughput, per_mount, little = figure.subplots(1, 3)
    hours = [r.buffer_hours or 0.0 for r in analysis.runs]
    unlimited = analysis.unlimited

    throughput.plot(hours, [r.throughput_bytes_per_s / 1e6 for r in analysis.runs], "o-", color=RUN_COLOUR)
    throughput.axhline(
        unlimited.throughput_bytes_per_s / 1e6, color=UNLIMITED_COLOUR, ls="--", label="no limit"
    )
    for share, style in ((ENOUGH, ":"), (COLLAPSE, "-.")):
        throughput.axhline(
            share * unlimited.throughput_bytes_per_s / 1e6,
            color="#999999",
            ls=style,
            lw=0.8,
            label=f"{share:.0%}",
        )
    throughput.axvline(analysis.little_hours, color=LITTLE_COLOUR, label="Little's law")
    throughput.set(xscale="log", xlabel="buffer (hours of streaming)", ylabel="throughput (MB/s)")
    throughput.legend(fontsize=7)

    per_mount.plot(hours, [r.files_per_mount for r in analysis.runs], "o-", color=RUN_COLOUR)
    per_mount.axhline(unlimited.files_per_mount, color=UNLIMITED_COLOUR, ls="--", label="no limit")
    per_mount.axvline(analysis.little_hours, color=LITTLE_COLOUR, label="Little's law")
    per_mount.set(xscale="log", xlabel="buffer (hours of streaming)", ylabel="files per mount")
    per_mount.legend(fontsize=7)

    limited = analysis.limited()
    size = [(r.buffer_bytes or 0) * analysis.settings.high_watermark for r in limited]
    held = [r.little_bytes(analysis.settings.hold_s) for r in limited]
    little.plot([analysis.hours(b) for b in size], [analysis.hours(b) for b in held], "o", color=RUN_COLOUR)
    top = max([analysis.hours(b) for b in size + held], default=1.0)
    little.plot([0, top], [0, top], color=LITTLE_COLOUR, lw=0.8, label="held = buffer")
    little.set(
        xlabel="buffer below its high watermark (h)",
        ylabel="throughput x (latency + hold) (h)",
        title="Little's law where the buffer limits",
    )
    little.title.set_fontsize(9)
    little.legend(fontsize=7)
    return save_png(figure, path)
