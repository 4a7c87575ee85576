"""A policy choice is valid when the policy builds from it: the registry's factory validates the options
(the very check a start makes). A refusal names the field at fault, as the API's problem+json shows it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from carousel.domain.errors import ConfigError, InvalidInput
from carousel.domain.policy_choice import PolicyChoice
from policies.base import Policy
from policies.registry import FAIR_SHARE_OPTION, available_policies, build_policy

MAX_OPTIONS_BYTES = 64 * 1024
BAD_OPTIONS = ": bad options: "  # how the registry says a factory refused the options
# the fair share layer names its option in the message ("fair_share.weights: ...")
_FAIR_SHARE_FIELD = re.compile(rf"^({FAIR_SHARE_OPTION}(?:\.[^\s:]+)?)[:\s]\s*(.*)$", re.DOTALL)


def built_policy(choice: PolicyChoice) -> Policy:
    """The policy the choice builds; InvalidInput naming `policy` or `options.<key>` when it does not."""
    _check_json(choice.options)
    if choice.policy not in available_policies():
        raise InvalidInput(
            f"unknown policy {choice.policy!r}: available are {', '.join(available_policies())}",
            field="policy",
        )
    try:
        return build_policy(choice.policy, choice.options)
    except ConfigError as exc:
        raise _refusal(choice, exc) from exc


def _check_json(options: Mapping[str, Any]) -> None:
    try:
        text = json.dumps(dict(options), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"options must be plain JSON values: {exc}", field="options") from exc
    if len(text) > MAX_OPTIONS_BYTES:
        raise InvalidInput(f"options take {len(text)} bytes, more than {MAX_OPTIONS_BYTES}", field="options")


def _refusal(choice: PolicyChoice, exc: ConfigError) -> InvalidInput:
    cause = exc.__cause__
    if BAD_OPTIONS not in str(exc):  # the plug-in itself failed to load or built no policy
        return InvalidInput(str(exc), field="policy")
    if isinstance(cause, ValidationError) and cause.errors():
        first = cause.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        field = f"options.{where}" if where else "options"
        given = f" (got {first['input']!r:.80})" if where and "input" in first else ""
        return InvalidInput(f"policy {choice.policy!r}: {field}: {first['msg']}{given}", field=field)
    if cause is not None:
        named = _FAIR_SHARE_FIELD.match(str(cause))
        if named is not None:
            field = f"options.{named.group(1)}"
            return InvalidInput(f"policy {choice.policy!r}: {field}: {named.group(2)}", field=field)
    return InvalidInput(str(exc), field="options")
