"""Bodies of the WLCG Tape REST API v1. Unknown fields are ignored, never refused, as the standard asks."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from carousel.domain.states import TapeRestState
from carousel.intake.model import Locality


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StageFileIn(_Lenient):
    path: str
    # how long to keep the file on disk once staged: seconds or an ISO 8601 duration (PT1H, P1D), checked
    # by the intake (carousel.intake.lifetimes) so a bad one is a 400 naming files[i].diskLifetime
    diskLifetime: Any = None  # noqa: N815 (the standard's spelling)
    # {"<sitename>": {"activity": "..."}}: the activity is taken (carousel.intake.activity); metadata for
    # other endpoints, and other keys, are ignored.
    targetedMetadata: Any = None  # noqa: N815


class StageIn(_Lenient):
    files: list[StageFileIn]


class PathsIn(_Lenient):
    paths: list[str]


class StageCreated(BaseModel):
    requestId: str  # noqa: N815


class StageFileOut(BaseModel):
    path: str
    state: TapeRestState | None = Field(
        default=None, description="absent when the credential's scopes do not cover the path (see error)"
    )
    error: str | None = None
    startedAt: int | None = Field(default=None, description="epoch seconds")  # noqa: N815
    finishedAt: int | None = Field(default=None, description="epoch seconds")  # noqa: N815


class StageStatusOut(BaseModel):
    id: str
    createdAt: int = Field(description="epoch seconds")  # noqa: N815
    startedAt: int = Field(description="epoch seconds")  # noqa: N815
    completedAt: int | None = Field(default=None, description="epoch seconds; only once every file ended")  # noqa: N815
    files: list[StageFileOut]


class ArchiveInfoOut(BaseModel):
    path: str
    locality: Locality | None = None
    error: str | None = None


class EndpointOut(BaseModel):
    uri: str
    version: str
    metadata: dict[str, Any]


class DiscoveryOut(BaseModel):
    sitename: str
    description: str
    endpoints: list[EndpointOut]
