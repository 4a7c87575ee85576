"""Settings: built once where a process starts (never at import time), from defaults, an optional TOML file
and CAROUSEL_* environment variables (weakest first: defaults, TOML file, environment, explicit arguments).

Every package's settings are declared here, the tables of auth and webhooks in this package's modules:
nearly every package reads its settings, so they sit low, below the packages that read them.

The TOML file is named by CAROUSEL_CONFIG; nested values use "__" in environment variable names, for example
CAROUSEL_LIMITS__MAX_BODY_BYTES=1048576 or CAROUSEL_ADAPTER_OPTIONS__DRIVES=4.

The service's local state lives under one directory, data_dir (CAROUSEL_DATA_DIR), whose default is the
user's data directory and never depends on the directory a command starts in; the embedded SQLite database
is carousel.sqlite3 there unless database_url names another database.

The simulated library's options are merged onto the embedded defaults key by key, so
CAROUSEL_ADAPTER_OPTIONS__SCALE=1000 changes the scale and keeps the default profile, drives and catalogue
(a plain dict field would be replaced whole). A catalogue given replaces the default one whole: it describes
another library, and the keys it leaves out take the generator's own defaults, not the demo library's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from carousel.config.auth import AuthSettings
from carousel.config.libraries import LibrarySettings, check_library_names, sole_library
from carousel.config.media import MediaSettings
from carousel.config.webhooks import WebhookSettings
from carousel.domain.buffer import BufferLimits
from carousel.domain.errors import ConfigError

CONFIG_FILE_ENV = "CAROUSEL_CONFIG"
DEFAULT_ADAPTER = "simulated"
DATABASE_FILE = "carousel.sqlite3"  # the embedded default database, in data_dir


def default_data_dir() -> Path:
    """The user's data directory for carousel, by the platform's convention (on Linux $XDG_DATA_HOME/carousel,
    else ~/.local/share/carousel): the same wherever a command is started."""
    return platformdirs.user_data_path("carousel", appauthor=False)


def absolute_dir(given: str | os.PathLike[str]) -> Path:
    """A directory as given, made absolute once (~ expanded), so that every message names it whole."""
    if not str(given).strip():
        raise ValueError("must name a directory")
    return Path(given).expanduser().absolute()


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def default_adapter_options() -> dict[str, Any]:
    """The embedded default (`make run`): a simulated LTO-8 library small enough that every file it holds
    can really be staged on a laptop: 4 drives, 20 tapes of 10 files, 0.2 to 94 MB each (log-normal, median
    4 MB), 1.26 GB in all, scattered over each cartridge as a full tape's requested files are. The physics is
    the real LTO-8 profile; the clock runs 100 times faster than the wall clock, so a mount and locate (about
    90 s of library time) take about a second."""
    return {
        "profile": "lto8",
        "drives": 4,
        "catalogue": {
            "generate": {
                "seed": 1,
                "cartridges": 20,
                "files_per_cartridge": 10,
                "size_model": "lognormal:4000000:1.1",
                "layout": "spread",
            }
        },
        "scale": 100.0,
    }


def deep_merge(base: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """`given` onto `base`: tables present in both merge key by key; any other value in `given` wins."""
    merged = dict(base)
    for key, value in given.items():
        below = merged.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(below, value)
        else:
            merged[key] = value
    return merged


def simulated_options_onto_defaults(given: Mapping[str, Any]) -> dict[str, Any]:
    """The simulated library's options as given, over the embedded defaults. A catalogue given (generated,
    CSV or directory) replaces the default one whole: a seed or a tape count of one's own, merged into the
    demo library's small-file size model, would make a library nobody described."""
    defaults = default_adapter_options()
    if "catalogue" in given:
        del defaults["catalogue"]
    return deep_merge(defaults, given)


class Limits(BaseModel):
    """What one call may ask for. Over a limit the caller gets 413 (body) or 400 (counts) naming the limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    max_files_per_request_tape_rest: int = Field(default=10_000, gt=0)
    max_files_per_request_native: int = Field(default=100_000, gt=0)
    max_archiveinfo_paths: int = Field(default=10_000, gt=0)
    max_path_length: int = Field(default=4096, gt=1, le=4096)
    max_page_size: int = Field(default=10_000, gt=0)  # native per-file status paging
    max_requests_listed: int = Field(default=1_000, gt=0)  # native request listing paging
    # files of the recorded requests an admin may replay in one call (docs/admin.md): a replay runs at
    # about 1,000 files a second per policy (docs/benchmarks.md), so 50,000 files answer within two minutes
    max_replay_files: int = Field(default=50_000, gt=0)


class HttpLimits(BaseModel):
    """How the HTTP server stands up to slow, idle, numerous and large clients (docs/operations.md, "HTTP
    limits"; docs/security.md). Over a limit a client gets a problem+json answer and its connection closed:
    408 (too slow), 431 (headers too large), 503 with Retry-After (too many connections, bodies too large
    together)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # A request's line and headers must have arrived this long after its connection opened, or after the
    # previous response on it.
    header_timeout_s: float = Field(default=10.0, gt=0)
    # A request's whole body must have arrived this long after its headers: 64 MiB at 1.1 MB/s.
    body_timeout_s: float = Field(default=60.0, gt=0)
    # An idle connection between requests is closed after this long.
    keep_alive_s: int = Field(default=5, gt=0)
    # Open client connections at once; the next ones are answered 503 and closed. With the process's
    # open-file limit above it by OPEN_FILES_RESERVE (carousel api raises its soft limit when it can).
    max_connections: int = Field(default=900, gt=0)
    max_header_bytes: int = Field(default=64 * 1024, ge=1024)  # a request's line and headers together
    # Request bodies read and held at once, across all requests (each one is read whole before its route
    # runs, and kept until it ends): a body that would pass it gets 503 with Retry-After.
    max_buffered_body_bytes: int = Field(default=128 * 1024 * 1024, gt=0)


class Quotas(BaseModel):
    """Back-pressure, so that one tenant cannot starve the others: over a quota the caller gets 429 with
    Retry-After. None: no quota. Calls are counted per caller and per the caller's first group, files
    queued (not yet ended for their requester) per caller and per request group. A caller without a group
    is bound by the per-caller limits only (docs/security.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_queued_files_per_caller: int | None = Field(default=None, gt=0)
    max_queued_files_per_group: int | None = Field(default=None, gt=0)
    queue_full_retry_after_s: int = Field(default=60, gt=0)  # no one knows when a queue drains: a hint
    caller_calls_per_s: float | None = Field(default=None, gt=0)  # sustained rate (a token bucket)
    caller_burst: int = Field(default=100, gt=0)  # calls a caller may make at once after a quiet spell
    group_calls_per_s: float | None = Field(default=None, gt=0)
    group_burst: int = Field(default=1000, gt=0)


GIB = 1024**3
DAY_S = 86_400
BUFFER_DIR = "buffer"  # the disk buffer's default directory, in data_dir


class BufferSettings(BaseModel):
    """The disk buffer staged files land on (docs/data-path.md). Admission fills it up to high_watermark of
    its capacity; eviction frees it down to low_watermark. Off: files are recalled without bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    # None: <data_dir>/buffer. Its sibling <directory>.incoming holds files being written.
    directory: Path | None = None
    capacity_bytes: int = Field(default=4 * GIB, gt=0)
    high_watermark: float = Field(default=0.95, gt=0, le=1)
    low_watermark: float = Field(default=0.85, ge=0, le=1)
    default_lifetime_s: int = Field(default=DAY_S, gt=0)  # a pin when the client names no lifetime
    max_lifetime_s: int = Field(default=7 * DAY_S, gt=0)  # longer lifetimes asked for are cut to this
    evict_on_release: bool = True  # a file no pin holds any more leaves the disk at once

    @field_validator("directory", mode="before")
    @classmethod
    def _directory_is_absolute(cls, value: Any) -> Any:
        return absolute_dir(value) if isinstance(value, str | os.PathLike) else value

    def limits(self) -> BufferLimits:
        """Capacity and watermarks, as admission reckons with them (carousel.domain.buffer)."""
        return BufferLimits(self.capacity_bytes, self.high_watermark, self.low_watermark)

    @model_validator(mode="after")
    def _watermarks_in_order(self) -> BufferSettings:
        if self.low_watermark > self.high_watermark:
            raise ValueError("low_watermark must not be above high_watermark")
        if self.default_lifetime_s > self.max_lifetime_s:
            raise ValueError("default_lifetime_s must not be above max_lifetime_s")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CAROUSEL_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    # The one root of the service's local state (docs/operations.md). Relative: to where the command starts.
    data_dir: Path = Field(default_factory=default_data_dir)
    # Empty: the SQLite file carousel.sqlite3 in data_dir. Out of the settings' repr: it may hold a password.
    database_url: str = Field(default="", repr=False)
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    # Processes of `carousel api` serving the one port (docs/operations.md, "Several API processes").
    api_workers: int = Field(default=1, ge=1, le=64)
    site_name: str = "carousel"
    site_description: str = "carousel tape staging service"
    # Base URL announced by the discovery document; None: the scheme, host and port the client used.
    public_url: str | None = None

    adapter: str = DEFAULT_ADAPTER
    adapter_options: dict[str, Any] = Field(default_factory=default_adapter_options)
    # several libraries behind one queue, by name (carousel.config.libraries); empty: adapter above is one
    # library named `default`. Not with adapter/adapter_options.
    libraries: dict[str, LibrarySettings] = Field(default_factory=dict)
    policy: str = "carousel"  # the cost model: the default and the best of the built-in policies
    policy_options: dict[str, Any] = Field(default_factory=dict)

    cycle_interval_s: float = Field(default=2.0, gt=0)
    # events are applied as they arrive, at most this long after (carousel.scheduler.live_events)
    event_apply_interval_s: float = Field(default=0.2, gt=0)
    max_files_per_cycle: int = Field(default=10_000, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    retry_backoff_s: float = Field(default=600.0, ge=0)
    claim_timeout_s: float = Field(default=300.0, gt=0)  # a CLAIMED file older than this is recovered
    # A SUBMITTED file with no news for this long is handed to the library again under its batch key (a
    # no-op where the library still holds it; docs/resilience.md). Hours: a file may wait long in a deep
    # queue.
    inflight_timeout_s: float = Field(default=6 * 3600.0, gt=0)
    # After an outage (or batches refused) the cycle's file budget starts at recovery_start_files and grows
    # linearly to max_files_per_cycle over recovery_ramp_s: the backlog is released at a measured pace.
    recovery_ramp_s: float = Field(default=600.0, ge=0)
    recovery_start_files: int = Field(default=50, gt=0)
    # Liveness (docs/resilience.md): with files in flight and no read started, finished or failed for longer
    # than liveness_factor x (unmount + mount + locate + read of the largest in-flight file, by the library's
    # cost figures), and never sooner than liveness_floor_s, the library counts as stalled: it is given only a
    # probe of liveness_probe_files files (at most once per that time) until it moves again.
    liveness_factor: float = Field(default=3.0, ge=1)
    liveness_floor_s: float = Field(default=900.0, gt=0)
    liveness_probe_files: int = Field(default=5, ge=0)
    # A read running longer than read_timeout_factor x its read time at the library's rate plus
    # read_timeout_margin_s is cancelled at the HSM and its attempt fails: "read timed out after N s".
    read_timeout_factor: float = Field(default=3.0, ge=1)
    read_timeout_margin_s: float = Field(default=600.0, gt=0)
    # Fair share (policies/fair_share.py) weighs each group's drive time over this window (the cycle, the dry
    # run and the outlook read the same window).
    fair_share_window_s: float = Field(default=86_400.0, gt=0)
    # Completion remembers each applied event (applied_events) so an event delivered again changes nothing.
    # An event comes again only moments after its first delivery; rows older than this are deleted, at most
    # once an hour (carousel.scheduler.event_pruning). At least an hour.
    applied_events_retention_s: float = Field(default=7 * 86_400.0, ge=3600)

    # Tape REST status documents of at least status_cache_min_files files are kept this long (0: never);
    # clients poll big requests, and the scheduler's progress may show up this much later.
    status_cache_s: float = Field(default=1.0, ge=0)
    status_cache_min_files: int = Field(default=1000, ge=0)
    # The API's outlook of the queue (positions, ETAs, waiting reasons; docs/api.md) is projected anew at
    # most this often, one projection shared by every caller.
    outlook_refresh_s: float = Field(default=10.0, gt=0)

    limits: Limits = Field(default_factory=Limits)
    buffer: BufferSettings = Field(default_factory=BufferSettings)  # see docs/data-path.md
    http: HttpLimits = Field(default_factory=HttpLimits)
    quotas: Quotas = Field(default_factory=Quotas)
    # Callers without credentials act as the user "anonymous". Off: every call needs authentication.
    anonymous: bool = True
    auth: AuthSettings = Field(default_factory=AuthSettings)  # see docs/security.md
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)  # see docs/api.md, docs/operations.md
    media: MediaSettings = Field(default_factory=MediaSettings)  # tapes and drives: see docs/admin.md

    # Logs (docs/operations.md): JSON lines in production, coloured text for people.
    log_format: Literal["console", "json"] = "console"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # `carousel scheduler` serves its own /metrics on this port when set (the API serves them on its own).
    scheduler_metrics_port: int | None = Field(default=None, ge=0, le=65535)

    @model_validator(mode="before")
    @classmethod
    def _adapter_options_onto_defaults(cls, data: Any) -> Any:
        """Runs on what the sources gathered (init, environment, TOML, already merged with one another)."""
        if not isinstance(data, dict):
            return data
        if data.get("libraries") and ("adapter" in data or "adapter_options" in data):
            raise ValueError("set either libraries or adapter and adapter_options, not both")
        given = data.get("adapter_options")
        if data.get("adapter", DEFAULT_ADAPTER) != DEFAULT_ADAPTER:
            # the embedded defaults describe the simulated library: another adapter starts from nothing
            return {**data, "adapter_options": {} if given is None else given}
        if isinstance(given, Mapping):
            return {**data, "adapter_options": simulated_options_onto_defaults(given)}
        return data

    @model_validator(mode="before")
    @classmethod
    def _database_in_data_dir(cls, data: Any) -> Any:
        """No database named: the embedded SQLite file in data_dir (the default's or the one given)."""
        if not isinstance(data, dict) or data.get("database_url"):
            return data
        given = data.get("data_dir")
        if given is None:
            data_dir = default_data_dir()
        elif isinstance(given, str | os.PathLike) and str(given).strip():
            data_dir = absolute_dir(given)
        else:
            return data  # not a directory: the field's own validation names it
        return {**data, "database_url": sqlite_url(data_dir / DATABASE_FILE)}

    @field_validator("libraries")
    @classmethod
    def _library_names(cls, value: dict[str, LibrarySettings]) -> dict[str, LibrarySettings]:
        return dict(check_library_names(value))

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_dir_is_absolute(cls, value: Any) -> Any:
        return absolute_dir(value) if isinstance(value, str | os.PathLike) else value

    @field_validator("public_url")
    @classmethod
    def _public_url_is_absolute(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("public_url must be an absolute http:// or https:// URL")
        return value.rstrip("/")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get(CONFIG_FILE_ENV)
        if config_file:
            path = Path(config_file)
            if not path.is_file():
                raise ConfigError(f"{CONFIG_FILE_ENV}={config_file}: no such file")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path, deep_merge=True))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (and CAROUSEL_CONFIG), with a one-line ConfigError naming a bad key."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "settings"
        raise ConfigError(f"setting {key}: {first['msg']}") from exc
    except ValueError as exc:  # a TOML file that does not parse
        raise ConfigError(f"settings: {exc}") from exc


def buffer_directory(settings: Settings) -> Path:
    """Where staged files land: the buffer's directory as set, else `buffer` in data_dir."""
    return settings.buffer.directory or settings.data_dir / BUFFER_DIR


def library_time_scale(settings: Settings) -> float:
    """Library seconds per clock second: the simulated library may run faster than the clock."""
    _, library = sole_library(settings)
    if library.adapter == "simulated":
        return float(library.adapter_options.get("scale", 1.0))
    return 1.0
