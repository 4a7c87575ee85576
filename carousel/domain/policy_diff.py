"""What a change changed, key by key: `policy`, or dotted paths into the options
(`policy_options.fair_share.weights.atlas`), each with its value before and after."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from carousel.domain.policy_choice import PolicyChoice

ABSENT = "(unset)"


@dataclass(frozen=True, slots=True)
class Difference:
    path: str
    old: str  # compact JSON, or "(unset)"
    new: str


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _walk(prefix: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Difference]:
    found: list[Difference] = []
    for key in sorted(set(old) | set(new)):
        path = f"{prefix}.{key}"
        before, after = old.get(key, ABSENT), new.get(key, ABSENT)
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            found.extend(_walk(path, before, after))
        elif before != after:
            old_text = ABSENT if key not in old else _text(before)
            new_text = ABSENT if key not in new else _text(after)
            found.append(Difference(path, old_text, new_text))
    return found


def differences(old: PolicyChoice, new: PolicyChoice) -> list[Difference]:
    found = [Difference("policy", old.policy, new.policy)] if old.policy != new.policy else []
    return found + _walk("policy_options", old.options, new.options)
