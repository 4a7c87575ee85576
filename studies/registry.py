"""The studies by name. Each names a module that exposes `run(out_dir, progress) -> StudyResult`.

Modules are imported when a study is asked for, so that listing the studies costs nothing; a study is added
with one line in `_STUDY_MODULES`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import cast

from carousel.domain.errors import ConfigError, InvalidInput
from studies.result import Progress, StudyResult, no_progress

StudyRunner = Callable[[Path, Progress], StudyResult]

# In the report's order: tape first, what a tape site needs most.
_STUDY_MODULES: dict[str, str] = {
    "tape-efficiency": "studies.tape.study",
    "policies": "studies.policies.study",
    "worker-disks": "studies.worker_disks.study",
    "buffer": "studies.buffer.study",
}


def study_names() -> tuple[str, ...]:
    return tuple(_STUDY_MODULES)


def get_study(name: str) -> StudyRunner:
    if name not in _STUDY_MODULES:
        raise InvalidInput(
            f"unknown study {name!r}; known studies: {', '.join(study_names())}", field="study"
        )
    module = importlib.import_module(_STUDY_MODULES[name])
    runner = getattr(module, "run", None)
    if not callable(runner):
        raise ConfigError(f"study {name!r}: module {module.__name__} has no run(out_dir, progress)")
    return cast(StudyRunner, runner)


def run_study(name: str, out_dir: Path, progress: Progress = no_progress) -> StudyResult:
    """Run one study, writing into `out_dir / name`."""
    return get_study(name)(out_dir / name, progress)
