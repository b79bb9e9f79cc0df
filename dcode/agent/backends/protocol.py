"""The seam between the model's tools and the machine they act on.

Every tool talks to a ``Backend`` and never to ``os``, ``pathlib`` or ``subprocess`` directly, so
a remote or sandboxed backend can later stand in for the local one without touching a tool.

Contract for implementers:

* Paths arrive as the model wrote them. ``resolve`` gives the physical path they lead to (``~``
  expanded, relative to the workspace root, symlinks followed, each ``..`` applied where the
  kernel applies it), and every operation taking a path acts on exactly that path. Paths outside
  the workspace are *not* refused here: reading a dependency's source is normal work, and
  whether a write outside may happen is the approval policy's call (it asks
  ``is_inside_workspace``, which judges the same resolved path).
* The async methods must never block the event loop the UI runs in.
* Only regular files are read or written: a named pipe, a device or a socket is refused with
  ``dcode.regular_files.NotRegularFile`` before it could block (an ``OSError``), and a call
  that gets no answer from the file system in time fails with ``TimeoutError``.
* Failures are the builtin exceptions, so a tool can explain them the same way whatever backend
  raised them: ``FileNotFoundError``, ``IsADirectoryError``, ``NotADirectoryError``,
  ``PermissionError``, ``TimeoutError`` (all ``OSError``), ``UnicodeDecodeError`` from
  ``read_text``, and ``InvalidPattern`` for a regex or glob the search cannot compile.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from dcode.sandbox.modes import SandboxSettings

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
CHUNK_BYTES = 1024 * 1024


OutputSink = Callable[[str], None]
"""Takes a running command's output as it arrives (decoded text, in order), on the event loop's
thread: it must be quick, and what it raises is ignored (a display must never end a command)."""


class InvalidPattern(ValueError):
    """A grep regex or glob pattern that the search engine rejected; the message says why."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What a shell command left behind.

    ``output`` is stdout and stderr interleaved as the command wrote them. ``exit_code`` follows
    the shell convention: 128+N when a signal N ended the command. ``truncated`` means the middle
    of the output was cut (a marker in ``output`` says how much).
    """

    output: str
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    sandbox: SandboxSettings | None = None
    """The sandbox the command ran in; None when it ran unconfined."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: Path
    is_dir: bool
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class Listing:
    """A capped list of names or paths; ``total`` counts what existed before the cap."""

    items: tuple[str, ...]
    total: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.items)


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """One matching line. ``path`` is relative to the workspace root when inside it."""

    path: str
    line: int
    text: str

    def format(self) -> str:
        return f"{self.path}:{self.line}:{self.text}"


@dataclass(frozen=True, slots=True)
class GrepResult:
    """Matches in path order; ``truncated`` means the search stopped at the cap."""

    matches: tuple[GrepMatch, ...]
    truncated: bool


@runtime_checkable
class Backend(Protocol):
    """File system and shell access for the tools; see the module docstring for the contract."""

    root: Path

    def resolve(self, path: str | Path) -> Path:
        """The absolute physical path: symlinks followed, ``..`` applied after them."""
        ...

    def is_inside_workspace(self, path: str | Path) -> bool:
        """Whether ``resolve(path)`` lies within the workspace root (a symlink out is outside)."""
        ...

    def display_path(self, path: str | Path) -> str:
        """How to show a path to the model or the user: relative inside the workspace."""
        ...

    async def stat(self, path: str) -> FileInfo: ...

    async def exists(self, path: str) -> bool: ...

    async def ls(self, path: str = ".", *, max_entries: int = 1000) -> Listing:
        """Names in a directory, sorted, directories with a trailing ``/``."""
        ...

    async def read_bytes(self, path: str) -> bytes: ...

    def read_chunks(
        self, path: str, *, chunk_size: int = CHUNK_BYTES
    ) -> AsyncGenerator[bytes, None]:
        """The file's bytes from the start, in chunks of at most ``chunk_size`` (the last may be
        shorter), so a reader can stop early or scan a large file without holding it.

        Opening fails with the builtin exceptions on the first ``__anext__``; closing the
        iterator early (``aclose``) closes the file.
        """
        ...

    async def read_text(self, path: str) -> str:
        """The file decoded as strict UTF-8, line endings untouched."""
        ...

    async def write_text(self, path: str, content: str) -> None:
        """Write exactly ``content`` as UTF-8, creating parent directories.

        Atomic: the file holds its old content or the new, never a part; its mode is kept, and
        writing through a symlink replaces the file it points to, leaving the link.
        """
        ...

    async def glob(self, pattern: str, path: str = ".", *, max_results: int = 500) -> Listing:
        """Files under ``path`` whose relative path matches ``pattern``, newest first.

        Ignored files (``.gitignore``) and ``.git/`` are left out.
        """
        ...

    async def grep(
        self,
        pattern: str,
        path: str = ".",
        *,
        glob: str | None = None,
        max_matches: int = 500,
    ) -> GrepResult:
        """Lines matching the regex under ``path`` (a directory or one file).

        ``glob`` keeps only files it matches: without a ``/`` it matches the file name at any
        depth, with one it is anchored at ``path``; a leading ``!`` excludes. Ignored files,
        ``.git/`` and binary files are skipped.
        """
        ...

    async def execute(
        self,
        command: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        cwd: str | None = None,
        on_output: OutputSink | None = None,
        outside_sandbox: bool = False,
    ) -> ExecResult:
        """Run a shell command with stdin closed; ``timeout`` is clamped to ``MAX_TIMEOUT_S``.
        ``on_output`` sees the output while the command runs (to show it); the result holds it
        all the same. When the backend's sandbox is on, the command runs in it unless
        ``outside_sandbox`` (which only an approval allows); a sandbox that cannot start raises
        ``dcode.sandbox.confine.SandboxUnavailable`` rather than run the command unconfined."""
        ...
