"""The sandbox as the processes dcode starts use it: one object per workspace, whose settings
``/sandbox`` changes while dcode runs.

A command is wrapped when the sandbox is on, and refused (``SandboxUnavailable``, one line with
the fix) when the sandbox is on but cannot start: it never runs unconfined instead.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from dcode.sandbox.layout import Layout
from dcode.sandbox.modes import SandboxMode, SandboxSettings


class SandboxUnavailable(RuntimeError):
    """The sandbox is on but cannot start here; the message names the fix."""


@dataclass
class Sandbox:
    settings: SandboxSettings
    workspace: Path
    dcode_home: Path
    add_dirs: tuple[Path, ...] = ()
    """Writable as the workspace is, in ``workspace-write`` (``--add-dir``)."""

    @property
    def on(self) -> bool:
        return self.settings.on

    def wrap(self, argv: Sequence[str], *, cwd: Path) -> list[str]:
        """``argv`` as it runs in the sandbox (unchanged when the sandbox is off). Blocking:
        the first call starts bubblewrap once to see that it works."""
        if not self.on:
            return list(argv)
        from dcode.sandbox.probe import availability

        found = availability()
        if found.problem is not None or found.program is None:
            raise SandboxUnavailable(found.problem or "no sandbox here")
        layout = Layout.plan(self.settings, self.workspace, self.dcode_home, add_dirs=self.add_dirs)
        if sys.platform == "darwin":
            from dcode.sandbox.seatbelt import seatbelt_argv

            return seatbelt_argv(layout, list(argv))
        from dcode.sandbox.bwrap import bwrap_argv

        return bwrap_argv(found.program, layout, argv, cwd=cwd)

    def always_on(self) -> Sandbox:
        """This sandbox for what asked to run confined (an MCP server with ``"sandbox": true``):
        its settings, or ``workspace-write`` while the shell's sandbox is off."""
        mode = self.settings.mode if self.on else SandboxMode.WORKSPACE_WRITE
        return replace(self, settings=replace(self.settings, mode=mode))

    async def wrap_async(self, argv: Sequence[str], *, cwd: Path) -> list[str]:
        """``wrap`` off the event loop when it has work to do."""
        if not self.on:
            return list(argv)
        return await asyncio.to_thread(self.wrap, argv, cwd=cwd)
