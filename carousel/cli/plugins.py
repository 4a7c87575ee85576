"""Commands that other packages add to `carousel`, named in the entry point group "carousel.commands"
(`name = "module:function"`, a Typer command function). The studies add `carousel study` this way, so that
nothing of the service, the command line included, imports them.

A plug-in is loaded when the command line is, so its module should import little until the command runs.
One that fails to load still appears under its name, and running it fails in one line naming the plug-in:
the other commands keep working."""

from __future__ import annotations

from importlib.metadata import entry_points

import typer

from carousel.domain.errors import ConfigError

ENTRY_POINT_GROUP = "carousel.commands"
# a broken plug-in's stand-in takes whatever the command was given, to fail on the plug-in, not on usage
_ANY_ARGUMENTS = {"allow_extra_args": True, "ignore_unknown_options": True}


def add_plugin_commands(app: typer.Typer) -> None:
    for plugin in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda found: found.name):
        named = f"command plug-in {plugin.name!r} ({plugin.value})"
        try:
            command = plugin.load()
        except Exception as exc:
            _add_broken(app, plugin.name, f"{named} failed to load: {exc}")
            continue
        if not callable(command):
            _add_broken(app, plugin.name, f"{named} is not callable")
            continue
        app.command(plugin.name)(command)


def _add_broken(app: typer.Typer, name: str, failure: str) -> None:
    def broken() -> None:
        raise ConfigError(failure)

    app.command(name, help=f"(broken: {failure})", context_settings=_ANY_ARGUMENTS)(broken)
