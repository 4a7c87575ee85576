"""Where the service lives and how to call it. XRootD's `-run` takes no arguments, so these come from a small
TOML file and the environment (weakest first: defaults, file, CAROUSEL_XROOTD_* variables).

The file is the one CAROUSEL_XROOTD_CONFIG names (it must exist), else /etc/carousel/xrootd.toml when it
exists. xrootd passes its own environment to the program, so variables set where xrootd starts reach it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from carousel.domain.errors import ConfigError

_ENV_PREFIX = "CAROUSEL_XROOTD_"
CONFIG_FILE_ENV = _ENV_PREFIX + "CONFIG"
DEFAULT_CONFIG_FILE = Path("/etc/carousel/xrootd.toml")
# XRootD 5.5.3 hands a query's answer to the client up to 2048 bytes less a 40-byte reserve, and cuts the
# rest with a note of its own; the program keeps its answer under that, ending it with a line of its own.
QUERY_ANSWER_BYTES = 2000

Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:@+-]+$")]


def config_file() -> Path | None:
    """The TOML file to read, if any."""
    named = os.environ.get(CONFIG_FILE_ENV)
    if named:
        return Path(named)
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


class ProgramSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=_ENV_PREFIX, extra="forbid", frozen=True)

    url: str = Field(default="http://127.0.0.1:8000", pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")
    token: SecretStr | None = None
    token_file: Path | None = None
    ca_file: Path | None = None  # for an https:// url with a private certificate authority
    timeout_s: float = Field(default=10.0, gt=0, le=300)
    group: Name | None = None  # fair-share group of the requests; None: the caller's default group
    activity: Name = "default"
    max_query_bytes: int = Field(default=QUERY_ANSWER_BYTES, ge=256, le=16 * 1024 * 1024)
    # XRootD runs prepare programs side by side: a cancel may overtake the stage it cancels.
    cancel_grace_s: float = Field(default=5.0, ge=0, le=60)

    @model_validator(mode="after")
    def _one_token_source(self) -> ProgramSettings:
        if self.token is not None and self.token_file is not None:
            raise ValueError("set token or token_file, not both")
        return self

    @property
    def base_url(self) -> str:
        return self.url.rstrip("/")

    def bearer_token(self) -> str | None:
        """The token to send, read from token_file at each start (so a renewed token is picked up)."""
        if self.token is not None:
            return self.token.get_secret_value()
        if self.token_file is None:
            return None
        try:
            token = self.token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"token_file {self.token_file}: {_reason(exc)}") from exc
        if not token:
            raise ConfigError(f"token_file {self.token_file}: empty")
        return token

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
        path = config_file()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def load_program_settings() -> ProgramSettings:
    """The settings, or a one-line ConfigError naming the file and the key at fault."""
    path = config_file()
    if path is not None:
        try:
            with path.open("rb"):
                pass
        except OSError as exc:
            raise ConfigError(f"{CONFIG_FILE_ENV} file {path}: {_reason(exc)}") from exc
    try:
        return ProgramSettings()
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "settings"
        sources = f"{path} or " if path is not None else ""
        raise ConfigError(f"setting {key} ({sources}{_ENV_PREFIX}{key.upper()}): {first['msg']}") from exc
    except ValueError as exc:  # a TOML file that does not parse
        raise ConfigError(f"{path}: {exc}") from exc
