"""The command adapter: a real HSM attached through external programs (docs/command-adapter.md)."""

from hsm_adapters.command.adapter import NAME, CommandAdapter, build_command_adapter
from hsm_adapters.command.protocol import EXIT_NOT_ON_TAPE, EXIT_OK, EXIT_RETRY_LATER, PROTOCOL_VERSION

__all__ = [
    "EXIT_NOT_ON_TAPE",
    "EXIT_OK",
    "EXIT_RETRY_LATER",
    "NAME",
    "PROTOCOL_VERSION",
    "CommandAdapter",
    "build_command_adapter",
]
