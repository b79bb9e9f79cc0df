"""The bubblewrap command line that confines one shell command on Linux (``layout`` says what
it hides and protects).

Besides the mounts:

* ``--unshare-user`` and ``--cap-drop ALL``: run as root (a container, CI), bubblewrap would
  otherwise keep every capability, and a command could remount the root read-write;
* ``--unshare-pid`` with a fresh ``/proc``: the command sees only its own processes, so it can
  neither signal dcode nor read another process's ``/proc/PID/environ`` (where dcode's or its
  launcher's provider keys live);
* ``--unshare-net`` unless the network is allowed: only a loopback of its own;
* ``--die-with-parent``: when bubblewrap is killed (a timeout, a cancelled turn, dcode ending),
  everything inside goes with it;
* ``--new-session``: nothing inside can push keystrokes into a terminal.

The environment is the one bubblewrap is started with, which is already the shell's scrubbed
one (``dcode.agent.backends.environment``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dcode.sandbox.layout import Layout

ISOLATION = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
)


def bwrap_argv(bwrap: str, layout: Layout, command: Sequence[str], *, cwd: Path) -> list[str]:
    """``bwrap … -- command``; later mounts go over earlier ones, so the order matters."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if layout.workspace not in layout.writable:  # seen read-only, even where /tmp hides it
        argv += ["--ro-bind", str(layout.workspace), str(layout.workspace)]
    for path in (*layout.writable, *layout.pinned):
        argv += ["--bind", str(path), str(path)]
    for path in layout.read_only_dirs:
        argv += ["--ro-bind", str(path), str(path)]
    for path in layout.missing_dirs:
        argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
    for path in layout.read_only_files:
        argv += ["--ro-bind", str(path), str(path)]
    for path in layout.hidden_dirs:
        argv += ["--perms", "0700", "--tmpfs", str(path), "--remount-ro", str(path)]
    for path in layout.hidden_files:
        argv += ["--ro-bind", "/dev/null", str(path)]
    argv += ISOLATION
    if not layout.network:
        argv.append("--unshare-net")
    argv += ["--chdir", str(cwd), "--", *command]
    return argv
