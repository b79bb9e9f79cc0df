"""What the user asked of the sandbox: a mode and whether the network is on.

Kept free of anything heavy: ``dcode.config`` (which ``dcode --help`` imports) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SandboxMode(StrEnum):
    OFF = "off"
    WORKSPACE_WRITE = "workspace-write"
    """The root is read-only, the workspace writable."""
    READ_ONLY = "read-only"
    """Nothing is writable but a private ``/tmp``."""


STRICTNESS = (SandboxMode.OFF, SandboxMode.WORKSPACE_WRITE, SandboxMode.READ_ONLY)
"""The modes, loosest first."""


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """``[sandbox]`` in config.toml, ``--sandbox``, ``/sandbox``."""

    mode: SandboxMode = SandboxMode.OFF
    network: bool = False
    """Whether a sandboxed command may use the network (ignored when the mode is ``off``)."""

    @property
    def on(self) -> bool:
        return self.mode is not SandboxMode.OFF

    def describe(self) -> str:
        """``off``, ``workspace-write``, ``read-only, network on``: as the status bar says it."""
        if not self.on:
            return self.mode.value
        return f"{self.mode.value}{', network on' if self.network else ''}"


def at_least_as_strict(theirs: SandboxMode, own: SandboxMode) -> bool:
    return STRICTNESS.index(theirs) >= STRICTNESS.index(own)
