"""Tape and drive settings (`media.*`, CAROUSEL_MEDIA__*), read by the scheduler (docs/admin.md, "Tapes and
drives")."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MediaSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # a tape the library reports failing to mount this many times in a row is set broken by the service
    # (audited as `service`); 0: never automatically
    break_after_failed_mounts: int = Field(default=3, ge=0)
