"""A library built from a directory of real files standing for the tapes' contents.

Each subdirectory of the root is a tape, named as the subdirectory; the files below it (at any depth) are the
tape's files, with the catalogue path "/" + their path relative to the tape's directory, laid end to end from
the load point in sorted order of that path. Names starting with "." are skipped, and so is anything that is
not a regular file (symbolic links are not followed). Staging copies the real bytes; the checksum is the
adler32 of the file (content.DirectoryContent).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from carousel.domain.errors import ConfigError
from hsm_adapters.simulated.catalogue import Catalogue, CatalogueInvalid
from hsm_adapters.simulated.content import DirectoryContent


def _tape_files(tape_dir: Path) -> list[tuple[str, Path, int]]:
    """(catalogue path, file, size) of the regular files below a tape's directory, sorted by path."""
    found: list[tuple[str, Path, int]] = []
    for directory, subdirectories, names in os.walk(tape_dir):
        subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
        for name in names:
            if name.startswith("."):
                continue
            file = Path(directory, name)
            info = file.lstat()
            if stat.S_ISREG(info.st_mode):
                relative = PurePosixPath(file.relative_to(tape_dir).as_posix())
                found.append((f"/{relative}", file, info.st_size))
    return sorted(found)


def directory_catalogue(
    root: str | Path, *, capacity_bytes: int | None = None
) -> tuple[Catalogue, DirectoryContent]:
    """The catalogue of a directory of tapes and the content that copies its files. ConfigError names the
    directory when it cannot be read, holds no file, a path is on two tapes, or a tape overflows."""
    base = Path(root).expanduser()
    try:
        tape_dirs = sorted(
            entry for entry in base.iterdir() if entry.is_dir() and not entry.name.startswith(".")
        )
        rows = [(tape_dir.name, _tape_files(tape_dir)) for tape_dir in tape_dirs]
    except OSError as exc:
        raise ConfigError(f"catalogue directory {base}: cannot read: {exc.strerror or exc}") from exc
    paths: list[str] = []
    sizes: list[int] = []
    tapes: list[str] = []
    positions: list[int] = []
    sources: dict[str, Path] = {}
    for tape, files in rows:
        position = 0
        for path, file, size in files:
            paths.append(path)
            sizes.append(size)
            tapes.append(tape)
            positions.append(position)
            position += size
            sources.setdefault(path, file)
    if not paths:
        raise ConfigError(f"catalogue directory {base}: no files (each subdirectory is a tape holding files)")
    try:
        catalogue = Catalogue(paths, sizes, tapes, positions, capacity_bytes=capacity_bytes)
    except CatalogueInvalid as exc:
        row = exc.problem.row
        problem = exc.problem.describe(lambda other: f"{tapes[other]}{paths[other]}")
        where = f"catalogue directory {base}: tape {tapes[row]}, file {paths[row]}"
        raise ConfigError(f"{where}: {exc.problem.column}: {problem}") from exc
    return catalogue, DirectoryContent(sources)
