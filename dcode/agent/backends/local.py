"""The backend for the machine dcode runs on: the local file system and a local shell.

Blocking file I/O runs on threads and processes through asyncio's subprocess support, so a
slow disk or a long search never freezes the UI sharing the event loop. Reads have deadlines
(``deadline``): a stalled mount ends the tool call with an error instead of the turn hanging,
and only regular files are opened (``dcode.regular_files``), so a named pipe or a device
never blocks a read at all.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import BinaryIO, TypeVar

from dcode.agent.backends import paths
from dcode.agent.backends.atomic import write_atomic
from dcode.agent.backends.deadline import IO_DEADLINE_S, call_with_deadline
from dcode.agent.backends.environment import ShellEnvironment
from dcode.agent.backends.gitignore import PathFilter
from dcode.agent.backends.globbing import compile_glob, has_magic
from dcode.agent.backends.listing import git_files, rg_files, walk_files
from dcode.agent.backends.procs import find_program
from dcode.agent.backends.protocol import (
    CHUNK_BYTES,
    DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S,
    ExecResult,
    FileInfo,
    GrepResult,
    Listing,
    OutputSink,
)
from dcode.agent.backends.search import compile_regex, python_grep, rg_grep
from dcode.agent.backends.shell import MAX_OUTPUT_CHARS, run_shell
from dcode.regular_files import open_regular, require_regular
from dcode.sandbox.confine import Sandbox

T = TypeVar("T")

MIN_TIMEOUT_S = 0.1
SEARCH_DEADLINE_S = 120.0
"""How long grep or glob may take, helpers (ripgrep, git) included: a named pipe where an
ignore file should be stalls both for ever."""


class LocalBackend:
    """``Backend`` on the local machine.

    ``use_ripgrep``/``use_git`` exist so tests (and machines with a broken ``rg``) can force the
    slower fallbacks; by default the best available tool is used. ``environment`` says which
    variables the processes it starts (the shell, git, ripgrep) do not get; ``sandbox``, when
    on, confines the shell's commands (``dcode.sandbox``). ``io_deadline``
    bounds each file-system call of a read, ``search_deadline`` a whole grep or glob.
    """

    def __init__(
        self,
        root: Path,
        *,
        shell: str = "bash",
        use_ripgrep: bool = True,
        use_git: bool = True,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        environment: ShellEnvironment = ShellEnvironment(),  # noqa: B008 - frozen, so shared safely
        io_deadline: float = IO_DEADLINE_S,
        search_deadline: float = SEARCH_DEADLINE_S,
        sandbox: Sandbox | None = None,
        add_dirs: tuple[Path, ...] = (),
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        self.add_dirs = add_dirs  # resolved (``--add-dir``): inside them counts as inside
        self._shell_name = shell
        self._shell = _find_shell(shell)  # None only on a machine without even sh
        self._rg = find_program("rg") if use_ripgrep else None
        self._git = find_program("git") if use_git else None
        self._max_output_chars = max_output_chars
        self._environment = environment
        self._io_deadline = io_deadline
        self._search_deadline = search_deadline
        self.sandbox = sandbox

    @property
    def search_engine(self) -> str:
        """``"ripgrep"`` or ``"python"``: which grep runs (for diagnostics and tests)."""
        return "ripgrep" if self._rg else "python"

    # -- paths ---------------------------------------------------------------------------

    def resolve(self, path: str | Path) -> Path:
        return paths.resolve_path(self.root, path)

    def is_inside_workspace(self, path: str | Path) -> bool:
        """Inside the workspace or one of the directories added to it (``--add-dir``); a
        relative path is the workspace's."""
        if paths.is_inside_workspace(self.root, path):
            return True
        if not self.add_dirs:
            return False
        try:
            target = paths.resolve_path(self.root, path)
        except (OSError, ValueError):
            return False
        return any(paths.is_inside(root, target) for root in self.add_dirs)

    def display_path(self, path: str | Path) -> str:
        return paths.display_path(self.root, path)

    # -- files ---------------------------------------------------------------------------

    async def stat(self, path: str) -> FileInfo:
        target = self.resolve(path)
        result = await self._io(partial(os.stat, target), target)
        return FileInfo(
            path=target,
            is_dir=stat.S_ISDIR(result.st_mode),
            size=result.st_size,
            mtime=result.st_mtime,
        )

    async def exists(self, path: str) -> bool:
        target = self.resolve(path)
        return await self._io(partial(os.path.exists, target), target)

    async def ls(self, path: str = ".", *, max_entries: int = 1000) -> Listing:
        target = self.resolve(path)
        names = await self._io(partial(_list_directory, target), target)
        return Listing(items=tuple(names[:max_entries]), total=len(names))

    async def read_bytes(self, path: str) -> bytes:
        async with aclosing(self.read_chunks(path)) as chunks:
            return b"".join([chunk async for chunk in chunks])

    async def read_chunks(
        self, path: str, *, chunk_size: int = CHUNK_BYTES
    ) -> AsyncGenerator[bytes, None]:
        target = self.resolve(path)
        handle = await self._io(
            partial(open_regular, target, buffered=False), target, discard=_close
        )
        reading = False
        try:
            while True:
                reading = True
                chunk = await self._io(partial(handle.read, chunk_size), target)
                reading = False
                if not chunk:
                    return
                yield chunk
        finally:
            if reading:  # abandoned mid-read: its thread may still be in the kernel
                threading.Thread(target=_close, args=(handle,), daemon=True).start()
            else:
                handle.close()

    async def read_text(self, path: str) -> str:
        data = await self.read_bytes(path)
        return data.decode("utf-8")

    async def write_text(self, path: str, content: str) -> None:
        await asyncio.to_thread(write_atomic, self.resolve(path), content.encode("utf-8"))

    async def _io(
        self, call: Callable[[], T], where: Path, *, discard: Callable[[T], object] | None = None
    ) -> T:
        """``call()`` off the loop within the I/O deadline; a timeout names ``where``."""
        return await call_with_deadline(
            call, seconds=self._io_deadline, path=where, discard=discard
        )

    # -- search --------------------------------------------------------------------------

    async def glob(self, pattern: str, path: str = ".", *, max_results: int = 500) -> Listing:
        """Matches sorted newest first: what was touched last is what the model most likely
        needs next. Only files are returned; ties are broken by path."""
        start = self.resolve(path)
        return await self._within_deadline(self._glob(pattern, start, max_results), start)

    async def _glob(self, pattern: str, start: Path, max_results: int) -> Listing:
        await self._require_directory(start)
        base, rest = paths.split_glob_base(pattern.removeprefix("./"))
        start = paths.resolve_path(start, base)
        if not has_magic(rest):  # a plain file name: split_glob_base took every directory
            candidate = start / rest if rest else start
            found = [candidate] if await asyncio.to_thread(candidate.is_file) else []
            return self._newest_first(await asyncio.to_thread(_with_mtimes, found), max_results)
        if not await asyncio.to_thread(start.is_dir):
            return Listing(items=(), total=0)
        regex = compile_glob(rest)
        files = await self._list_files(start)
        matched = [f for f in files if regex.match(_relative_posix(f, start))]
        return self._newest_first(await asyncio.to_thread(_with_mtimes, matched), max_results)

    async def grep(
        self,
        pattern: str,
        path: str = ".",
        *,
        glob: str | None = None,
        max_matches: int = 500,
    ) -> GrepResult:
        start = self.resolve(path)
        info = await self._io(partial(os.stat, start), start)
        if not stat.S_ISDIR(info.st_mode):
            require_regular(info, start)  # ripgrep would wait for ever on a named pipe
        return await self._within_deadline(self._grep(pattern, start, glob, max_matches), start)

    async def _grep(
        self, pattern: str, start: Path, glob: str | None, max_matches: int
    ) -> GrepResult:
        if self._rg:
            return await rg_grep(
                self._rg,
                pattern,
                start,
                file_glob=glob,
                max_matches=max_matches,
                display=self.display_path,
                env=self._environment.build(),
            )
        regex = compile_regex(pattern)
        files = await self._grep_candidates(start, glob)
        return await asyncio.to_thread(
            python_grep, regex, files, max_matches=max_matches, display=self.display_path
        )

    async def _within_deadline(self, search: Awaitable[T], start: Path) -> T:
        """``search``, ended (its helper processes killed) once the search deadline passes."""
        try:
            return await asyncio.wait_for(search, self._search_deadline)
        except TimeoutError:
            raise TimeoutError(
                errno.ETIMEDOUT,
                f"the search did not finish within {self._search_deadline:g} s; narrow the path or the pattern",
                str(start),
            ) from None

    async def _grep_candidates(self, start: Path, glob: str | None) -> list[Path]:
        if await asyncio.to_thread(start.is_file):
            return [start]
        files = await self._list_files(start)
        keep = PathFilter.parse(glob) if glob else None
        if keep is None:
            return files
        return [f for f in files if keep.keeps(_relative_posix(f, start))]

    async def _list_files(self, start: Path) -> list[Path]:
        """Non-ignored files under ``start``, by the best tool available (see ``listing``)."""
        if self._rg:
            return sorted(await rg_files(self._rg, start, env=self._environment.build()))
        if self._git:
            files = await git_files(start, self._git, env=self._environment.build())
            # None: not a work tree. Empty: nothing there, or ``start`` is itself ignored and
            # was named explicitly, which the walker handles as ripgrep would.
            if files:
                return sorted(files)
        anchor = self.root if start.is_relative_to(self.root) else start
        return await asyncio.to_thread(walk_files, start, anchor)

    async def _require_directory(self, target: Path) -> None:
        if await asyncio.to_thread(target.is_dir):
            return
        if await asyncio.to_thread(target.exists):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(target))
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(target))

    def _newest_first(self, stamped: list[tuple[Path, float]], limit: int) -> Listing:
        stamped.sort(key=lambda item: (-item[1], item[0]))
        items = tuple(self.display_path(p) for p, _ in stamped[:limit])
        return Listing(items=items, total=len(stamped))

    # -- shell ---------------------------------------------------------------------------

    async def execute(
        self,
        command: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        cwd: str | None = None,
        on_output: OutputSink | None = None,
        outside_sandbox: bool = False,
    ) -> ExecResult:
        if self._shell is None:
            raise RuntimeError(f"no shell found: neither {self._shell_name!r} nor 'sh' is on PATH")
        workdir = self.resolve(cwd) if cwd else self.root
        await self._require_directory(workdir)
        bounded = min(max(timeout, MIN_TIMEOUT_S), MAX_TIMEOUT_S)
        argv = [self._shell, "-c", command]
        sandbox = (
            self.sandbox
            if self.sandbox is not None and self.sandbox.on and not outside_sandbox
            else None
        )
        if sandbox is not None:
            argv = await sandbox.wrap_async(argv, cwd=workdir)  # SandboxUnavailable: refused
        result = await run_shell(
            argv,
            cwd=workdir,
            timeout=bounded,
            max_chars=self._max_output_chars,
            env=self._environment.build(),
            on_output=on_output,
        )
        return result if sandbox is None else replace(result, sandbox=sandbox.settings)


def _find_shell(preferred: str) -> str | None:
    return find_program(preferred) or find_program("sh")


def _close(handle: BinaryIO) -> None:
    handle.close()


def _list_directory(target: Path) -> list[str]:
    with os.scandir(target) as entries:
        names = [entry.name + ("/" if _is_dir(entry) else "") for entry in entries]
    return sorted(names)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _with_mtimes(files: list[Path]) -> list[tuple[Path, float]]:
    stamped: list[tuple[Path, float]] = []
    for path in files:
        try:
            stamped.append((path, path.stat().st_mtime))
        except OSError:
            continue
    return stamped


def _relative_posix(path: Path, start: Path) -> str:
    return os.path.relpath(path, start).replace(os.sep, "/")
