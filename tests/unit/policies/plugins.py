"""Policy plug-ins as pip installs them: a distribution's metadata on sys.path declaring an entry point."""

from pathlib import Path


def declare_plugin(root: Path, group: str, name: str, target: str) -> None:
    """Installs a distribution's metadata on sys.path, as pip would, declaring one entry point."""
    info = root / "plugin_under_test-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-under-test\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")
