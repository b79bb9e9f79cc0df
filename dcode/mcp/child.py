"""Run as ``python -S child.py PIDFILE COMMAND ARGS...``: start an MCP stdio server that dies
with dcode.

It asks the kernel to kill it when its parent dies (``PR_SET_PDEATHSIG``, kept across ``exec``),
writes its process id to PIDFILE (the server keeps it: ``exec`` changes the program, not the
process, and it leads a process group of its own), then becomes the server with ``execvp``: so
a ``kill -9`` of dcode leaves no orphan behind, and dcode can end a server that hangs. An
ordinary exit or SIGTERM closes the servers on the way out (``dcode.mcp.link``); this is for
when nothing on dcode's side runs any more. Standard library only, run without ``site``.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.stderr.write("usage: child.py PIDFILE COMMAND [ARGS...]\n")
        os._exit(2)
    _die_with_parent(os.getppid())
    fd = os.open(argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    command = argv[2]
    try:
        os.execvp(command, argv[2:])
    except OSError as exc:
        sys.stderr.write(f"cannot start {command}: {exc.strerror or exc}\n")
        sys.stderr.flush()
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
