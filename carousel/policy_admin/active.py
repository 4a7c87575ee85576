"""The policy a cycle plans with: the admins' choice, read each cycle (one row) and rebuilt only when its
version moves, so a change made through the API or `carousel policy set` takes effect at the next cycle
without a restart. Until the first change the settings' policy is active."""

from __future__ import annotations

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.engine import transaction
from carousel.domain.errors import ConfigError
from carousel.policy_admin.changes import active_settings
from carousel.policy_admin.model import ActivePolicySettings
from policies.base import Policy
from policies.registry import build_policy

log = structlog.get_logger(__name__)


class ActivePolicy:
    def __init__(self, settings: Settings, session_factory: sessionmaker[Session]) -> None:
        self.settings = settings
        self.session_factory = session_factory
        self._built: tuple[int, Policy] | None = None
        self._refused_version: int | None = None

    @property
    def version(self) -> int | None:
        """The version of the policy built last (None before the first read)."""
        return None if self._built is None else self._built[0]

    def read(self) -> ActivePolicySettings:
        with transaction(self.session_factory) as session:
            return active_settings(session, self.settings)

    def current(self) -> Policy:
        """The active policy, rebuilt when it changed. A choice that no longer builds (a plug-in removed
        since it was set) keeps the policy built before, with an error logged once; with none before it
        raises ConfigError, which stops the start."""
        active = self.read()
        if self._built is not None and self._built[0] == active.version:
            return self._built[1]
        try:
            policy = build_policy(active.choice.policy, active.choice.options)
        except ConfigError as exc:
            if self._built is None:
                raise
            if self._refused_version != active.version:
                self._refused_version = active.version
                log.error("the active policy does not build: planning with the one before", error=str(exc))
            return self._built[1]
        if self._built is not None or not active.from_settings:
            log.info(
                "policy in effect",
                policy=active.choice.policy,
                version=active.version,
                changed_by=active.changed_by,
            )
        self._built = (active.version, policy)
        return policy
