"""The policy study's rows of the "published vs reproduced" table, and its findings.

Seed 003 (STAR's "HPSS Performance study", 2006) gives three figures a policy replay can check:
- the daemon's queue depth moved throughput "within 10 %" (with a large effect on response time);
- grouping by tape (most-requested tape first, files ordered by tape) gave a 20 % improvement in realistic use
  (bulk restores, XRootD and other users together);
- its random, XRootD-dominated traffic read at best about 1.2 files per cartridge mount.

Tolerances: the depth figure is an upper bound and is met or not (tolerance 0); the 20 % is one round figure
from one site's mix, so it is met within 5 points; 1.2 files per mount within 0.1. A row that disagrees says
why in its note: the tolerance is not widened to make it agree.
"""

from __future__ import annotations

from studies.policies.analysis import PolicyAnalysis
from studies.policies.runs import LTO_MODERN, POLICIES, STAR_BATCH, STAR_DEPTH, STAR_STREAM
from studies.result import Comparison

SOURCE = "003_867e2db8593b7725.txt"
DEPTH_SOURCE = f"{SOURCE} (DataCarousel: the daemon's queue depth)"
GROUPING_SOURCE = f"{SOURCE} (DataCarousel: grouping by tape ID)"
FILES_PER_MOUNT_SOURCE = f"{SOURCE} (file size effects: files per cartridge)"
DEPTH_THROUGHPUT_LIMIT_PERCENT = 10.0
GROUPING_GAIN_PERCENT = 20.0
GROUPING_TOLERANCE_POINTS = 5.0
RANDOM_FILES_PER_MOUNT = 1.2
FILES_PER_MOUNT_TOLERANCE = 0.1


def _depths(analysis: PolicyAnalysis) -> str:
    claim = [d for d in analysis.settings.depths if d >= analysis.settings.depth_claim_from]
    return f"{min(claim)}-{max(claim)}"


def policy_comparisons(analysis: PolicyAnalysis) -> tuple[Comparison, ...]:
    depths = _depths(analysis)
    stream_depth = analysis.depth_effect(STAR_STREAM)
    batch_depth = analysis.depth_effect(STAR_BATCH)
    stream_gain = analysis.grouping_gain(STAR_STREAM)
    batch_gain = analysis.grouping_gain(STAR_BATCH)
    smallest = min(analysis.settings.depths)
    crossing = analysis.share_for_gain(GROUPING_GAIN_PERCENT)
    mix = (
        f"in this model a mix with {100 * crossing:.0f} % of the files in bulk restores gives 20 %"
        if crossing is not None
        else "no mix studied here gives 20 %"
    )
    return (
        Comparison(
            quantity=f"throughput change with the HSM queue depth ({depths} files), STAR stream, star2006",
            source=DEPTH_SOURCE,
            published_low=0.0,
            published_high=DEPTH_THROUGHPUT_LIMIT_PERCENT,
            reproduced=stream_depth.throughput_change_percent,
            unit="%",
            tolerance=0.0,
            basis="simulated",
            note=(
                f"largest change from depth {STAR_DEPTH} over depths {depths} (from about the 9 drives up); "
                f"depth {smallest}, fewer slots than drives, changes it "
                f"{stream_depth.throughput_change_all_percent:.1f} %"
            ),
        ),
        Comparison(
            quantity=f"throughput change with the HSM queue depth ({depths} files), STAR batch, star2006",
            source=DEPTH_SOURCE,
            published_low=0.0,
            published_high=DEPTH_THROUGHPUT_LIMIT_PERCENT,
            reproduced=batch_depth.throughput_change_percent,
            unit="%",
            tolerance=0.0,
            basis="simulated",
            note=(
                "disagrees, for a reason: on an all-bulk batch star2006 hands over whole cartridges "
                f"(~{batch_gain.grouped.files_per_mount:.0f} files each), so a FIFO queue of {STAR_DEPTH} "
                "files holds one or two cartridges and the depth decides how many of the 9 drives work; "
                "STAR's figure holds for random traffic (row above)"
            ),
        ),
        Comparison(
            quantity="throughput gain from grouping by tape (star2006 over fifo), STAR stream",
            source=GROUPING_SOURCE,
            published_low=GROUPING_GAIN_PERCENT,
            published_high=GROUPING_GAIN_PERCENT,
            reproduced=stream_gain.gain_percent,
            unit="%",
            tolerance=GROUPING_TOLERANCE_POINTS,
            basis="simulated",
            note=(
                "random single-file requests only: files per mount "
                f"{stream_gain.without.files_per_mount:.2f} -> {stream_gain.grouped.files_per_mount:.2f}; "
                "the DataCarousel groups only what waits beyond its K·N = 750 files in flight, and this "
                "stream's backlog barely exceeds that. STAR's 20 % came from a mix with bulk restores: "
                f"{mix}"
            ),
        ),
        Comparison(
            quantity="throughput gain from grouping by tape (star2006 over fifo), STAR batch",
            source=GROUPING_SOURCE,
            published_low=GROUPING_GAIN_PERCENT,
            published_high=GROUPING_GAIN_PERCENT,
            reproduced=batch_gain.gain_percent,
            unit="%",
            tolerance=GROUPING_TOLERANCE_POINTS,
            basis="simulated",
            note=(
                "disagrees, for a reason: an all-bulk batch is where grouping pays most; fifo, the same "
                "requests one file at a time in arrival order, mounts a cartridge per file "
                f"({batch_gain.without.files_per_mount:.2f} files per mount against "
                f"{batch_gain.grouped.files_per_mount:.1f} grouped); STAR measured its 20 % on a mix "
                "dominated by XRootD's random requests (at best 1.2 files per cartridge), where there is "
                "little to group"
            ),
        ),
        Comparison(
            quantity="files per mount under random traffic, STAR stream, star2006",
            source=FILES_PER_MOUNT_SOURCE,
            published_low=RANDOM_FILES_PER_MOUNT,
            published_high=RANDOM_FILES_PER_MOUNT,
            reproduced=stream_gain.grouped.files_per_mount,
            unit="files",
            tolerance=FILES_PER_MOUNT_TOLERANCE,
            basis="simulated",
            note=(
                "checks that the stream is in STAR's random regime; its arrival rate was set near what fifo "
                "reads, not fitted to this figure"
            ),
        ),
    )


def _ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.2f}×" if denominator else "n/a"


def policy_headlines(analysis: PolicyAnalysis) -> tuple[str, ...]:
    """For a storage admin: what scheduling by tape gives on bulk restores and on a random stream."""
    headlines = []
    for name, what in ((STAR_BATCH, "bulk restores"), (STAR_STREAM, "a stream of single-file requests")):
        if name not in analysis.workloads:
            continue
        rows = {row.policy: row for row in analysis.side_by_side(name)}
        carousel, fifo = rows["carousel"], rows["fifo"]
        headlines.append(
            f"On {what} ({name}: {analysis.workloads[name].description}), the carousel policy reads "
            f"{carousel.throughput_mb_s:.1f} MB/s, {_ratio(carousel.throughput_mb_s, fifo.throughput_mb_s)} "
            f"what arrival order (fifo) reads, within {carousel.makespan_over_bound:.2f}× of the physical "
            f"bound; half the files are staged within {carousel.latency_p50_s:,.0f} s against "
            f"{fifo.latency_p50_s:,.0f} s."
        )
    return tuple(headlines)


def policy_findings(analysis: PolicyAnalysis) -> tuple[str, ...]:
    findings = [
        "Workloads: " + "; ".join(f"{w.name}: {w.description}" for w in analysis.workloads.values()) + "."
    ]
    for name in analysis.workloads:
        rows = {row.policy: row for row in analysis.side_by_side(name)}
        carousel = rows["carousel"]
        findings.append(
            f"{name}: throughput "
            + ", ".join(f"{p} {rows[p].throughput_mb_s:.1f}" for p in POLICIES)
            + f" MB/s (bound {carousel.bound_throughput_mb_s:.1f}); carousel at "
            f"{carousel.makespan_over_bound:.3f}× the bound, "
            f"{_ratio(carousel.throughput_mb_s, rows['fifo'].throughput_mb_s)} fifo and "
            f"{_ratio(carousel.throughput_mb_s, rows['star2006'].throughput_mb_s)} star2006; median latency "
            + ", ".join(f"{p} {rows[p].latency_p50_s:,.0f} s" for p in POLICIES)
            + "."
        )
    stream = analysis.depth_effect(STAR_STREAM)
    batch = analysis.depth_effect(STAR_BATCH)
    depths = _depths(analysis)
    findings.append(
        f"Queue depth ({depths} files) on the STAR stream moves throughput by at most "
        f"{stream.throughput_change_percent:.1f} % and median latency by "
        f"{stream.latency_p50_change_percent:.1f} % (STAR: within 10 %, agreed), but it does not reproduce "
        "STAR's large effect on response time: here the files beyond the depth wait in line in arrival "
        "order, so the depth moves where a file waits, not how long, and latency follows throughput. Only a "
        f"depth below the drive count ({min(analysis.settings.depths)}) costs throughput "
        f"({stream.throughput_change_all_percent:.1f} %) and latency "
        f"({stream.latency_p50_change_all_percent:.1f} %)."
    )
    findings.append(
        f"On the STAR batch the depth moves throughput by up to {batch.throughput_change_percent:.0f} % and "
        f"median latency by up to {batch.latency_p50_change_percent:.0f} %, both for the better as the depth "
        "grows: grouped submissions put whole cartridges in the FIFO queue, and a deeper queue keeps more "
        "drives at work. This is what sinks star2006 against carousel and cta on bulk work."
    )
    stream_gain = analysis.grouping_gain(STAR_STREAM)
    batch_gain = analysis.grouping_gain(STAR_BATCH)
    crossing = analysis.share_for_gain(GROUPING_GAIN_PERCENT)
    by_share = ", ".join(
        f"{100 * share:g} % bulk {gain.gain_percent:+.1f} %" for share, gain in analysis.grouping_by_share()
    )
    findings.append(
        f"Grouping by tape (star2006 over fifo) gains {stream_gain.gain_percent:+.1f} % on the random stream "
        f"and {batch_gain.gain_percent:+.0f} % on the bulk batch; STAR's 20 % from a realistic mix lies "
        f"between. Moving a share of the stream's files into bulk restores: {by_share}"
        + (
            f"; STAR's 20 % is reached with about {100 * crossing:.0f} % of the files in bulk restores. "
            if crossing is not None
            else ". "
        )
        + "Our fifo baseline hands over one file at a time in arrival order, so on bulk work it mounts a "
        "cartridge per file: the batch's gain is large because the baseline is the worst case."
    )
    lto = {row.policy: row for row in analysis.side_by_side(LTO_MODERN)}
    findings.append(
        f"LTO modern: bulk requests arrive grouped by dataset, so every policy reads about "
        f"{lto['fifo'].files_per_mount:.0f} files a mount and is within "
        f"{max(r.makespan_over_bound for r in lto.values()):.2f}× the bound; the policies differ in latency "
        f"(median carousel {lto['carousel'].latency_p50_s:,.0f} s, cta {lto['cta'].latency_p50_s:,.0f} s)."
    )
    return tuple(findings)
