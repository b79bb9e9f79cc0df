"""write_file and edit_file replace a file whole or not at all, keeping its mode and its links."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dcode.agent.backends import LocalBackend
from dcode.agent.tools import build_tools

OLD = "the old content, which must survive\n" * 100
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    (tmp_path / "ws").mkdir()
    return LocalBackend(tmp_path / "ws")


def names_in(directory: Path) -> list[str]:
    return sorted(entry.name for entry in directory.iterdir())


def fail_writes_to_new_files(monkeypatch: pytest.MonkeyPatch, target: Path, after: int) -> None:
    """A full disk: writes to any file in ``target``'s directory but ``target`` itself (the file
    being replaced) stop with ENOSPC once ``after`` bytes went in."""
    real_write = os.write
    written: dict[int, int] = {}

    def write(fd: int, data: bytes) -> int:
        try:
            where = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return real_write(fd, data)
        if where.parent != target.parent or where == target:
            return real_write(fd, data)
        room = after - written.get(fd, 0)
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        count = real_write(fd, bytes(data[:room]))
        written[fd] = written.get(fd, 0) + count
        return count

    monkeypatch.setattr(os, "write", write)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell files apart")
async def test_full_disk_mid_write_keeps_the_old_file_and_no_temporary(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = backend.root / "notes.txt"
    target.write_text(OLD)
    fail_writes_to_new_files(monkeypatch, target, after=1000)
    with pytest.raises(OSError) as caught:  # noqa: PT011 - its errno is checked below
        await backend.write_text("notes.txt", "new content " * 10_000)
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert target.read_text() == OLD
    assert names_in(backend.root) == ["notes.txt"]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell files apart")
async def test_full_disk_reaches_the_model_as_one_line(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = backend.root / "notes.txt"
    target.write_text(OLD)
    tools = {tool.name: tool for tool in build_tools(backend)}
    fail_writes_to_new_files(monkeypatch, target, after=10)
    result = await tools["edit_file"].ainvoke(
        {
            "file_path": "notes.txt",
            "old_string": "the old",
            "new_string": "a new",
            "replace_all": True,
        }
    )
    monkeypatch.undo()
    assert result == "edit_file: notes.txt: No space left on device"
    assert target.read_text() == OLD
    assert names_in(backend.root) == ["notes.txt"]


def test_a_file_size_limit_mid_write_keeps_the_old_file(backend: LocalBackend) -> None:
    """The kernel itself refusing bytes part way (RLIMIT_FSIZE), in a real process."""
    target = backend.root / "big.txt"
    target.write_text(OLD)
    child = textwrap.dedent(
        f"""
        import asyncio, resource, signal
        from pathlib import Path
        from dcode.agent.backends import LocalBackend
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        backend = LocalBackend(Path({str(backend.root)!r}))
        try:
            asyncio.run(backend.write_text("big.txt", "x" * (1 << 20)))
        except OSError as exc:
            print("refused", exc.errno)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == f"refused {errno.EFBIG}", result.stderr
    assert target.read_text() == OLD
    assert names_in(backend.root) == ["big.txt"]


def test_a_kill_mid_write_keeps_the_old_file(backend: LocalBackend) -> None:
    """A real process killed while it writes a large file: the file is the old one, whole."""
    target = backend.root / "large.bin"
    target.write_text(OLD)
    # The child writes 32 MiB in 1 MiB chunks, pausing after each so the kill lands mid-file.
    child = textwrap.dedent(
        f"""
        import asyncio, os, time
        from pathlib import Path
        from dcode.agent.backends import LocalBackend
        real_write = os.write
        def slow_write(fd, data):
            count = real_write(fd, data)
            time.sleep(0.05)
            return count
        os.write = slow_write
        backend = LocalBackend(Path({str(backend.root)!r}))
        asyncio.run(backend.write_text("large.bin", "y" * (32 << 20)))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while not _partly_written(backend.root, target):
            assert proc.poll() is None, "the writer ended before it was killed"
            assert time.monotonic() < deadline, "the write never started"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert target.read_text() == OLD


def _partly_written(directory: Path, target: Path) -> bool:
    """Some of the new bytes are on disk, wherever the writer puts them."""
    for entry in directory.iterdir():
        try:
            size = entry.stat().st_size
        except FileNotFoundError:  # a temporary file renamed meanwhile
            return True
        if (entry == target and size != len(OLD)) or (entry != target and size > 0):
            return True
    return False


async def test_mode_is_kept(backend: LocalBackend) -> None:
    script = backend.root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    await backend.write_text("run.sh", "#!/bin/sh\necho new\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    tools = {tool.name: tool for tool in build_tools(backend)}
    await tools["edit_file"].ainvoke(
        {"file_path": "run.sh", "old_string": "new", "new_string": "edited"}
    )
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert (await backend.execute("./run.sh")).output == "edited\n"
    private = backend.root / "secret.env"
    private.write_text("A=1\n")
    private.chmod(0o600)
    await backend.write_text("secret.env", "A=2\n")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


async def test_a_new_file_gets_the_umask_mode(backend: LocalBackend) -> None:
    previous = os.umask(0o027)
    try:
        await backend.write_text("fresh/new.txt", "hello\n")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((backend.root / "fresh" / "new.txt").stat().st_mode) == 0o640


async def test_writing_through_a_link_updates_its_target_and_keeps_the_link(
    backend: LocalBackend,
) -> None:
    real = backend.root / "real.txt"
    real.write_text("old\n")
    link = backend.root / "link.txt"
    link.symlink_to("real.txt")
    await backend.write_text("link.txt", "new\n")
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert real.read_text() == "new\n"
    assert names_in(backend.root) == ["link.txt", "real.txt"]


async def test_a_dangling_link_inside_creates_its_target(backend: LocalBackend) -> None:
    link = backend.root / "later.txt"
    link.symlink_to("sub/target.txt")
    await backend.write_text("later.txt", "made\n")
    assert link.is_symlink() and (backend.root / "sub" / "target.txt").read_text() == "made\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only file")
async def test_a_read_only_file_stays_read_only(backend: LocalBackend) -> None:
    target = backend.root / "locked.txt"
    target.write_text(OLD)
    target.chmod(0o444)
    with pytest.raises(PermissionError):
        await backend.write_text("locked.txt", "new\n")
    assert target.read_text() == OLD
    assert names_in(backend.root) == ["locked.txt"]
