"""Telling the model when a failed command may have met the sandbox's walls.

Without a word, a model that sees ``Read-only file system`` or a failed name lookup tries
workarounds in a loop. The note says what the sandbox refuses, and that running outside it is a
question for the user (``execute``'s ``outside_sandbox``).
"""

from __future__ import annotations

import re

from dcode.sandbox.modes import SandboxMode, SandboxSettings

_WRITE = re.compile(
    r"read-only file system|operation not permitted|permission denied|EROFS|EPERM|EACCES",
    re.IGNORECASE,
)
_NETWORK = re.compile(
    r"network is unreachable|temporary failure in name resolution|could not resolve|name or service not known"
    r"|connection refused|failed to establish a new connection|no address associated|ENETUNREACH|getaddrinfo",
    re.IGNORECASE,
)


def sandbox_note(
    output: str, exit_code: int, settings: SandboxSettings, *, argument: str
) -> str | None:
    """A line to add to a failed command's result, or None when the sandbox is not the likely cause."""
    if exit_code == 0 or not settings.on:
        return None
    causes: list[str] = []
    if _WRITE.search(output):
        where = (
            "outside the workspace"
            if settings.mode is SandboxMode.WORKSPACE_WRITE
            else "anywhere but /tmp"
        )
        causes.append(
            f"writes {where} (and to .git/hooks, .git/config, .dcode, .claude) are refused"
        )
    if not settings.network and _NETWORK.search(output):
        causes.append("the network is off")
    if not causes:
        return None
    return (
        f"[sandbox: this command runs in a sandbox ({settings.describe()}), where {' and '.join(causes)}. "
        f"If it must run outside the sandbox, call it again with {argument}=true: the user will be asked.]"
    )
