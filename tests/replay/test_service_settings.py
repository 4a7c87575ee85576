"""A replay plans as the configured service plans when asked: `carousel simulate --service-settings`, and the
admins' history replay always (carousel.policy_admin.history_replay)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from typer.testing import CliRunner, Result

from carousel.cli.app import app
from carousel.config import BufferSettings, Settings
from carousel.domain.buffer import BufferLimits
from carousel.replay.driver import ReplayConfig, replay, with_service_settings
from carousel.replay.outputs import scheduling_of
from carousel.replay.workloads import star_batch
from carousel.scheduler.feed import FeedSettings

SERVICE = {
    "CAROUSEL_CYCLE_INTERVAL_S": "5",
    "CAROUSEL_MAX_FILES_PER_CYCLE": "7",
    "CAROUSEL_MAX_ATTEMPTS": "4",
    "CAROUSEL_RETRY_BACKOFF_S": "120",
    "CAROUSEL_RECOVERY_START_FILES": "3",
    "CAROUSEL_RECOVERY_RAMP_S": "90",
    "CAROUSEL_LIVENESS_FACTOR": "2",
    "CAROUSEL_LIVENESS_FLOOR_S": "1200",
    "CAROUSEL_LIVENESS_PROBE_FILES": "1",
    "CAROUSEL_FAIR_SHARE_WINDOW_S": "3600",
    "CAROUSEL_READ_TIMEOUT_FACTOR": "2",
    "CAROUSEL_READ_TIMEOUT_MARGIN_S": "300",
}
EXPECTED_SCHEDULING = {
    "max_files_per_cycle": 7,
    "max_attempts": 4,
    "retry_backoff_s": 120.0,
    "fair_share_window_s": 3600.0,
    "read_timeout_factor": 2.0,
    "read_timeout_margin_s": 300.0,
    "recovery_start_files": 3,
    "recovery_ramp_s": 90.0,
    "liveness_factor": 2.0,
    "liveness_floor_s": 1200.0,
    "liveness_probe_files": 1,
}


def service_settings() -> Settings:
    """SERVICE, as the service reads it from its environment."""
    return Settings(**{name.removeprefix("CAROUSEL_").lower(): value for name, value in SERVICE.items()})


def test_every_planning_setting_of_the_service_reaches_the_replay() -> None:
    config = with_service_settings(ReplayConfig(profile="lto8", drives=2, policy="fifo"), service_settings())
    assert config.cycle_interval_s == 5
    scheduling = scheduling_of(config)
    assert scheduling == EXPECTED_SCHEDULING
    assert (config.profile, config.drives, config.policy) == ("lto8", 2, "fifo"), "the run's own choices stay"


def test_the_feed_settings_name_every_field_of_the_settings() -> None:
    assert set(asdict(FeedSettings())) <= set(Settings.model_fields)
    assert FeedSettings.of(Settings()) == FeedSettings(), "the same defaults in both places"


def test_the_service_budget_per_cycle_holds_in_the_replay() -> None:
    trace = star_batch(scale=0.004)  # 200 files over 8 cartridges
    config = with_service_settings(
        ReplayConfig(profile="t9940b", drives=3, policy="carousel"), service_settings()
    )
    result = replay(trace, config)
    handed = [files for _, files in result.handovers]
    assert max(handed) == 7 and sum(handed) == trace.paths  # all read, never more than 7 a pass
    assert all(t % 5 == 0 for t, _ in result.handovers), "passes every 5 s"


def invoke(out: Path, *extra: str, env: dict[str, str] | None = None) -> Result:
    arguments = ["simulate", "--workload", "star_batch", "--scale", "0.002", "--policy", "fifo", *extra]
    return CliRunner().invoke(app, [*arguments, "--out", str(out)], env=env)


def simulate(out: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, object]:
    result = invoke(out, *extra, env=env)
    assert result.exit_code == 0, result.output
    summary: dict[str, object] = json.loads((out / "summary.json").read_text())
    return summary


def test_the_command_line_plans_with_the_service_settings_only_when_asked(tmp_path: Path) -> None:
    asked = simulate(tmp_path / "asked", "--service-settings", env=SERVICE)
    assert asked["cycle_interval_s"] == 5.0
    assert asked["scheduling"] == EXPECTED_SCHEDULING

    explicit = simulate(tmp_path / "explicit", "--service-settings", "--cycle-interval", "1", env=SERVICE)
    assert explicit["cycle_interval_s"] == 1.0, "the command line wins"

    default = simulate(tmp_path / "default", env=SERVICE)
    assert default["cycle_interval_s"] == 2.0
    assert default["scheduling"] == {
        "max_files_per_cycle": 10_000,
        "max_attempts": 3,
        "retry_backoff_s": 600.0,
        "fair_share_window_s": 86_400.0,
        "read_timeout_factor": 3.0,
        "read_timeout_margin_s": 600.0,
        **asdict(FeedSettings()),
    }


def test_a_bad_service_setting_is_one_line_naming_it(tmp_path: Path) -> None:
    result = invoke(tmp_path, "--service-settings", env={"CAROUSEL_MAX_FILES_PER_CYCLE": "0"})
    assert result.exit_code == 2
    assert "setting max_files_per_cycle" in result.output
    assert not (tmp_path / "summary.json").exists()


def test_the_service_buffer_reaches_the_replay() -> None:
    buffer = BufferSettings(enabled=True, capacity_bytes=10**9, high_watermark=0.9, low_watermark=0.6)
    settings = Settings(buffer=buffer.model_copy(update={"default_lifetime_s": 600}))
    config = with_service_settings(ReplayConfig(profile="lto8", drives=2, policy="fifo"), settings)
    assert config.buffer == BufferLimits(10**9, 0.9, 0.6)
    assert config.release_after_s == 600
    off = with_service_settings(ReplayConfig(profile="lto8", drives=2, policy="fifo"), Settings())
    assert off.buffer is None  # the suite runs with the buffer off
