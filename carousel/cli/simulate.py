"""`carousel simulate`: replay a trace (or one of the repository's workloads) against the simulated library
with one policy, or with several side by side (`--compare`). Registered on the main command line by
carousel.cli.app; docs/replay.md describes the inputs and outputs.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from carousel.domain.errors import ConfigError

if TYPE_CHECKING:
    from carousel.replay.library_setup import LibraryFile
    from carousel.replay.site import LibrarySpec
    from carousel.replay.trace import Trace

# The simulator (numpy, the library, the planning code) is imported inside the command, when it runs:
# `carousel` loads this module for every command.


def simulate(
    *,
    out: Annotated[Path, typer.Option("--out", help="Directory for files.csv, mounts.csv and summary.json.")],
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Trace CSV: arrival_s,request,path,size_bytes,tape,...")
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload",
            help="Instead of --trace: star_batch, light_load, lto_modern, zipf_batch or two_libraries.",
        ),
    ] = None,
    scale: Annotated[float, typer.Option("--scale", help="Shrink the workload (0 < scale <= 1).")] = 1.0,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Drive profile name or file (a workload has its own).")
    ] = None,
    drives: Annotated[int | None, typer.Option("--drives", help="Drives (a workload has its own).")] = None,
    libraries: Annotated[
        str | None,
        typer.Option(
            "--libraries",
            help="With --trace: a site of several libraries, NAME=PROFILE:DRIVES,... (the trace's library"
            " column names them); instead of --profile and --drives.",
        ),
    ] = None,
    policy: Annotated[str, typer.Option("--policy", help="The policy to replay.")] = "carousel",
    compare: Annotated[
        str | None,
        typer.Option("--compare", help="Several policies side by side, e.g. fifo,star2006,cta,carousel."),
    ] = None,
    policy_options: Annotated[
        Path | None,
        typer.Option("--policy-options", help="TOML file: one table of options per policy name."),
    ] = None,
    library: Annotated[Path | None, typer.Option("--library", help="TOML file changing the library.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the library's random faults.")] = 0,
    cycle_interval: Annotated[
        float | None,
        typer.Option(
            "--cycle-interval", min=0.001, help="Seconds between cycles (default 2, as the service)."
        ),
    ] = None,
    service_settings: Annotated[
        bool,
        typer.Option(
            "--service-settings",
            help="Plan as the configured service plans (CAROUSEL_CONFIG, CAROUSEL_*): its cycle interval,"
            " files per cycle, retries, recovery pace, liveness watch, fair-share window and read timeouts.",
        ),
    ] = False,
    buffer_bytes: Annotated[
        int | None,
        typer.Option(
            "--buffer-bytes",
            min=1,
            help="Model a disk buffer of this many bytes (accounting only: the replay writes no bytes).",
        ),
    ] = None,
    release_after: Annotated[
        float,
        typer.Option(
            "--release-after",
            min=0.0,
            help="With --buffer-bytes: seconds after staging that clients release each file (a trace's"
            " release_after_s column wins).",
        ),
    ] = 0.0,
) -> None:
    """Replay a trace on the simulated library's virtual clock with the service's own planning code."""
    from carousel.config import load_settings  # noqa: PLC0415
    from carousel.domain.buffer import BufferLimits  # noqa: PLC0415
    from carousel.replay.driver import ReplayConfig, replay, with_service_settings  # noqa: PLC0415
    from carousel.replay.library_setup import load_library_file  # noqa: PLC0415
    from carousel.replay.outputs import (  # noqa: PLC0415
        compare_row,
        library_rows,
        write_compare,
        write_library_compare,
        write_outputs,
    )
    from carousel.replay.trace import write_trace  # noqa: PLC0415

    loaded, profile_name, drive_count, site = _inputs(
        trace, workload, scale, profile, drives, libraries=libraries
    )
    options = _policy_options(policy_options)
    library_file: LibraryFile | None = load_library_file(library) if library is not None else None
    policies = [p.strip() for p in compare.split(",") if p.strip()] if compare is not None else [policy]
    if not policies:
        raise ConfigError("--compare names no policy")
    out.mkdir(parents=True, exist_ok=True)
    if workload is not None:
        write_trace(loaded, out / "trace.csv")
    settings = load_settings() if service_settings else None  # a bad setting stops before any replay
    rows = []
    per_library: list[dict[str, Any]] = []
    for name in policies:
        config = ReplayConfig(
            profile=profile_name,
            drives=drive_count,
            policy=name,
            policy_options=options.get(name, {}),
            seed=seed,
            library=library_file,
            library_source=str(library) if library else "library",
            libraries=site,
        )
        if settings is not None:
            config = with_service_settings(config, settings)
        if cycle_interval is not None:  # given on the command line: it wins
            config = replace(config, cycle_interval_s=cycle_interval)
        if buffer_bytes is not None:
            config = replace(config, buffer=BufferLimits(buffer_bytes), release_after_s=release_after)
        result = replay(loaded, config)
        summary = write_outputs(result, out / name if compare is not None else out)
        rows.append(compare_row(summary))
        per_library.extend(library_rows(summary))
    if compare is not None:
        write_compare(rows, out / "compare.csv")
        if site:
            write_library_compare(per_library, out / "compare_libraries.csv")
    _show(rows, out)
    if site:
        _show_libraries(per_library)
    if buffer_bytes is not None:
        Console(highlight=False).print(f"buffer: accounting only ({buffer_bytes} bytes, no bytes written)")


def _inputs(
    trace: Path | None,
    workload: str | None,
    scale: float,
    profile: str | None,
    drives: int | None,
    *,
    libraries: str | None,
) -> tuple[Trace, str, int, tuple[LibrarySpec, ...]]:
    from carousel.replay.site import parse_libraries  # noqa: PLC0415
    from carousel.replay.trace import load_trace  # noqa: PLC0415
    from carousel.replay.workloads import workload as find_workload  # noqa: PLC0415

    if (trace is None) == (workload is None):
        raise ConfigError("give exactly one of --trace and --workload")
    if workload is not None:
        if libraries is not None:
            raise ConfigError("--libraries goes with --trace: a workload brings its own libraries")
        chosen = find_workload(workload)
        if chosen.libraries and (profile is not None or drives is not None):
            raise ConfigError(
                f"workload {chosen.name} is a site of several libraries with their own profiles and drives:"
                " --profile and --drives do not apply"
            )
        return chosen.generate(scale), profile or chosen.profile, drives or chosen.drives, chosen.libraries
    assert trace is not None
    if libraries is not None:
        if profile is not None or drives is not None:
            raise ConfigError(
                "--libraries names each library's profile and drives: leave out --profile and --drives"
            )
        site = parse_libraries(libraries)
        return load_trace(trace), site[0].profile, site[0].drives, site
    if profile is None or drives is None:
        raise ConfigError("--trace needs --profile and --drives (or --libraries)")
    return load_trace(trace), profile, drives, ()


def _policy_options(path: Path | None) -> Mapping[str, Mapping[str, Any]]:
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read policy options: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc.reason}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    for name, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: key {name!r} must be a table of options for policy {name!r}")
    return data


def _show_libraries(rows: list[dict[str, Any]]) -> None:
    table = Table(title="per library")
    columns = (
        ("policy", "policy"),
        ("library", "library_name"),
        ("drives", "drives"),
        ("makespan s", "makespan_s"),
        ("bound s", "bound_s"),
        ("× bound", "makespan_over_bound"),
        ("MB/s", "throughput_mb_s"),
        ("mounts", "mounts"),
        ("files/mount", "files_per_mount"),
        ("efficiency", "efficiency"),
    )
    for title, _ in columns:
        table.add_column(title, justify="left" if title in ("policy", "library") else "right")
    for row in rows:
        table.add_row(
            *(
                str(row[key]) if key != "drives" else f"{row['profile']} × {row['drives']}"
                for _, key in columns
            )
        )
    Console(highlight=False, width=200).print(table)


def _show(rows: list[dict[str, Any]], out: Path) -> None:
    table = Table(title=f"replay ({out})")
    columns = (
        ("policy", "policy"),
        ("makespan s", "makespan_s"),
        ("bound s", "bound_s"),
        ("× bound", "makespan_over_bound"),
        ("binds", "binding"),
        ("MB/s", "throughput_mb_s"),
        ("mounts", "mounts"),
        ("files/mount", "files_per_mount"),
        ("efficiency", "efficiency"),
        ("p50 s", "latency_p50_s"),
        ("p95 s", "latency_p95_s"),
        ("p99 s", "latency_p99_s"),
    )
    for title, _ in columns:
        table.add_column(title, justify="left" if title == "policy" else "right")
    for row in rows:
        table.add_row(*(str(row[key]) for _, key in columns))
    Console(highlight=False, width=200).print(table)
