"""The ``sandbox-exec`` profile that confines one shell command on macOS (``layout`` says what
it hides and protects).

Everything is allowed but what the profile takes away: writes anywhere but the writable
folders, the temporary folders and the terminal devices; reads of the hidden folders and files;
writes to the protected paths inside the workspace; signals to processes outside the sandbox;
and, unless the network is allowed, every network operation but local Unix sockets.
"""

from __future__ import annotations

from pathlib import Path

from dcode.sandbox.layout import Layout

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# macOS's own temporary folders (``/tmp`` is ``/private/tmp``; ``$TMPDIR`` is under
# ``/private/var/folders``); a command there is confined like the rest.
TEMP_DIRS = ("/private/tmp", "/private/var/folders")
DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper")


def quote(path: Path | str) -> str:
    """A string literal of the profile language (a Scheme dialect)."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def profile(layout: Layout) -> str:
    lines = ["(version 1)", "(allow default)", "(deny file-write*)"]
    paths: tuple[Path | str, ...] = (*layout.writable, *TEMP_DIRS)
    writable = [f"(subpath {quote(p)})" for p in paths]
    writable += [f"(literal {quote(d)})" for d in DEVICES]
    lines.append(f"(allow file-write* {' '.join(writable)})")
    protected = [f"(subpath {quote(p)})" for p in (*layout.read_only_dirs, *layout.missing_dirs)]
    protected += [f"(literal {quote(p)})" for p in layout.read_only_files]
    if protected:
        lines.append(f"(deny file-write* {' '.join(protected)})")
    hidden = [f"(subpath {quote(p)})" for p in layout.hidden_dirs]
    hidden += [f"(literal {quote(p)})" for p in layout.hidden_files]
    if hidden:
        lines.append(f"(deny file-read* file-write* {' '.join(hidden)})")
    lines += ["(deny signal)", "(allow signal (target same-sandbox))"]
    if not layout.network:
        lines += ["(deny network*)", "(allow network* (remote unix-socket))"]
    return "\n".join(lines) + "\n"


def seatbelt_argv(layout: Layout, command: list[str]) -> list[str]:
    return [SANDBOX_EXEC, "-p", profile(layout), *command]
