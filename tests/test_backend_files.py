"""ls, stat and file I/O of the local backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.agent.backends import LocalBackend


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(tmp_path)


async def test_ls_sorted_with_directory_slashes(backend: LocalBackend) -> None:
    root = backend.root
    (root / "b.txt").write_text("")
    (root / "a_dir").mkdir()
    (root / ".hidden").write_text("")
    (root / "c").mkdir()
    (root / "link_to_dir").symlink_to(root / "c")
    listing = await backend.ls(".")
    assert listing.items == (".hidden", "a_dir/", "b.txt", "c/", "link_to_dir/")
    assert not listing.truncated


async def test_ls_caps_entries(backend: LocalBackend) -> None:
    for index in range(30):
        (backend.root / f"f{index:02}").write_text("")
    listing = await backend.ls(".", max_entries=10)
    assert len(listing.items) == 10 and listing.total == 30 and listing.truncated
    assert listing.items[0] == "f00"


async def test_ls_errors(backend: LocalBackend) -> None:
    (backend.root / "file").write_text("")
    with pytest.raises(FileNotFoundError):
        await backend.ls("missing")
    with pytest.raises(NotADirectoryError):
        await backend.ls("file")


async def test_write_text_creates_parents_and_keeps_bytes_exact(backend: LocalBackend) -> None:
    await backend.write_text("deep/er/file.txt", "line1\r\nline2\nünïcode")
    data = (backend.root / "deep/er/file.txt").read_bytes()
    assert data == "line1\r\nline2\nünïcode".encode()
    assert await backend.read_text("deep/er/file.txt") == "line1\r\nline2\nünïcode"


async def test_read_text_is_strict_utf8(backend: LocalBackend) -> None:
    (backend.root / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(UnicodeDecodeError):
        await backend.read_text("latin1.txt")
    assert await backend.read_bytes("latin1.txt") == "café".encode("latin-1")


async def test_stat_and_exists(backend: LocalBackend) -> None:
    (backend.root / "f.txt").write_text("12345")
    info = await backend.stat("f.txt")
    assert info.size == 5 and not info.is_dir and info.path == backend.root / "f.txt"
    assert (await backend.stat(".")).is_dir
    assert await backend.exists("f.txt")
    assert not await backend.exists("nope")
    with pytest.raises(FileNotFoundError):
        await backend.stat("nope")


async def test_reading_a_directory_fails(backend: LocalBackend) -> None:
    (backend.root / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        await backend.read_bytes("d")
