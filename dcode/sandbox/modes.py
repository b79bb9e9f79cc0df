"""What the user asked of the sandbox: a mode and whether the network is on.

Kept free of anything heavy: ``dcode.settings.config`` (which ``dcode --help`` imports) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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


class BadSetting(ValueError):
    """A ``[sandbox]`` value that is wrong; ``key`` is the one to point at."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def parse_mode(value: object) -> SandboxMode:
    try:
        return SandboxMode(str(value))
    except ValueError:
        choices = ", ".join(repr(mode.value) for mode in SandboxMode)
        raise BadSetting(
            "mode", f"sandbox mode {value!r} is not valid; expected one of {choices}"
        ) from None


def apply_table(current: SandboxSettings, table: dict[str, object]) -> SandboxSettings:
    """``current`` with a ``[sandbox]`` table applied."""
    for key, value in table.items():
        match key:
            case "mode":
                current = replace(current, mode=parse_mode(value))
            case "network" if isinstance(value, bool):
                current = replace(current, network=value)
            case "network":
                raise BadSetting(key, "[sandbox] network must be true or false")
            case _:
                raise BadSetting(key, f"unknown [sandbox] setting {key!r}")
    return current
