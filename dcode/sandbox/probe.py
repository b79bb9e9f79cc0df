"""Whether a sandbox can start on this machine, and if not, the one line that says how to fix it.

On Linux the answer comes from starting bubblewrap once, exactly as a command would be started
(user namespace, dropped capabilities, PID and network namespaces): a kernel or a container that
forbids one of them fails here, before any command could run unconfined. The answer is kept for
the life of the process.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dcode.sandbox.bwrap import bwrap_argv
from dcode.sandbox.layout import Layout
from dcode.sandbox.seatbelt import SANDBOX_EXEC

PROBE_TIMEOUT_S = 10.0
TURN_OFF = 'or turn the sandbox off (/sandbox off, --sandbox off, [sandbox] mode = "off")'


@dataclass(frozen=True, slots=True)
class Availability:
    kind: str
    """``bubblewrap``, ``sandbox-exec`` or ``none``."""
    program: str | None
    problem: str | None = None
    """None when it works; otherwise why not, and the fix, in one line."""

    @property
    def works(self) -> bool:
        return self.problem is None


def availability() -> Availability:
    if sys.platform == "darwin":
        return _macos()
    if sys.platform.startswith("linux"):
        return _linux()
    return Availability("none", None, f"dcode has no sandbox on {sys.platform}: {TURN_OFF}")


def _macos() -> Availability:
    if os.access(SANDBOX_EXEC, os.X_OK):
        return Availability("sandbox-exec", SANDBOX_EXEC)
    return Availability("sandbox-exec", None, f"{SANDBOX_EXEC} is missing: {TURN_OFF}")


def _linux() -> Availability:
    from dcode.agent.backends.procs import find_program

    bwrap = find_program("bwrap")
    if bwrap is None:
        return Availability(
            "bubblewrap",
            None,
            f"the sandbox needs bubblewrap (bwrap), which is not installed: install it (apt-get install bubblewrap) {TURN_OFF}",
        )
    return _started(bwrap)


@functools.cache
def _started(bwrap: str) -> Availability:
    """Start ``true`` in the sandbox, network off (the most it asks of the kernel)."""
    root = Path("/")
    layout = Layout(
        writable=(),
        pinned=(),
        hidden_dirs=(),
        hidden_files=(),
        read_only_dirs=(),
        missing_dirs=(),
        read_only_files=(),
        network=False,
        workspace=root,
    )
    try:
        done = subprocess.run(
            bwrap_argv(bwrap, layout, ["true"], cwd=root),
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability("bubblewrap", bwrap, f"bubblewrap did not start ({exc}): {TURN_OFF}")
    if done.returncode == 0:
        return Availability("bubblewrap", bwrap)
    said = done.stderr.decode(errors="replace").strip().splitlines()
    reason = said[-1] if said else f"exit code {done.returncode}"
    return Availability(
        "bubblewrap",
        bwrap,
        f"bubblewrap cannot start a sandbox here ({reason}): allow unprivileged user namespaces "
        f"(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0, or a container "
        f"that permits them) {TURN_OFF}",
    )
