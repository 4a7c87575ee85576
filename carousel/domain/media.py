"""Tapes and drives as operators set them: the states, which changes make sense, and what a held tape does
to a plan. Pure values (docs/admin.md, "Tapes and drives").

A tape is `active` (planned as usual), `disabled` (its files wait, nothing mounts it) or `broken` (its queued
files fail with the reason given, unless another copy can be read). A drive is `up` or `down`; taking it down
either lets its current mount finish (`after_mount`) or stops it at once (`now`: the file being read goes
back to the library's queue and is read again on another drive).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.planning import Plan

MAX_MEDIA_REASON_LENGTH = 1000
MAX_MEDIA_NAME_LENGTH = 64  # files.tape's width; drive names fit it too
SERVICE_WHO = "service"  # who an automatic change is recorded as (the library's reports, not a person)


class TapeState(StrEnum):
    ACTIVE = "active"
    DISABLED = "disabled"
    BROKEN = "broken"


class DriveState(StrEnum):
    UP = "up"
    DOWN = "down"


class DownMode(StrEnum):
    AFTER_MOUNT = "after_mount"  # the drive finishes what its cartridge holds for it, unmounts, stays down
    NOW = "now"  # the drive stops at once: its read goes back to the library's queue


class MediaKind(StrEnum):
    TAPE = "tape"
    DRIVE = "drive"


# tapes the plan leaves out and no claim takes files of (their values, for SQL)
HELD_STATES = (TapeState.DISABLED.value, TapeState.BROKEN.value)

# The words a waiting tape gives (carousel.outlook.reasons sorts them into codes by these phrases).
TAPE_DISABLED_WORDS = "tape disabled by an admin"
TAPE_BROKEN_WORDS = "tape broken"


@dataclass(frozen=True, slots=True)
class TapeStatus:
    tape: str
    state: TapeState
    reason: str | None
    changed_at: datetime | None
    changed_by: str | None
    failed_mounts: int = 0  # consecutive mounts the library reported failed (a mount that works resets it)
    library: str = DEFAULT_LIBRARY  # the library holding it: a tape is (library, tape)


@dataclass(frozen=True, slots=True)
class DriveStatus:
    drive: str
    state: DriveState
    mode: DownMode | None  # how it was taken down; None while up
    reason: str | None
    changed_at: datetime | None
    changed_by: str | None
    library: str = DEFAULT_LIBRARY  # the library holding it: a drive is (library, drive)


@dataclass(frozen=True, slots=True)
class MediaAuditEntry:
    id: int
    at: datetime
    who: str
    kind: MediaKind
    name: str
    old_state: str
    new_state: str
    reason: str
    library: str = DEFAULT_LIBRARY  # the tape's or drive's library


ACTIVE_TAPE_STATE = TapeState.ACTIVE


def tape_change_fault(old: TapeState, new: TapeState) -> str | None:
    """Why a tape cannot go from `old` to `new`, or None. Setting the state it is in is a contradiction
    (the admin believes it is in another)."""
    if old is new:
        return f"the tape is {old.value} already"
    return None


def drive_change_fault(old: DriveState, new: DriveState) -> str | None:
    if old is new:
        return f"the drive is {old.value} already"
    return None


def held_words(state: TapeState, reason: str | None) -> str:
    """What a tape held back by its state says in a plan's waiting reasons."""
    words = TAPE_DISABLED_WORDS if state is TapeState.DISABLED else TAPE_BROKEN_WORDS
    return f"{words}: {reason}" if reason else words


def hold_back(plan: Plan, held: Mapping[str, str]) -> Plan:
    """The plan with every held tape waiting, for its reason (the snapshot the policy planned on left them
    out, so no selection names them)."""
    if not held:
        return plan
    return replace(plan, waiting={**plan.waiting, **held})
