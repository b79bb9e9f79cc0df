"""Provider keys taken out of what ``/proc/<pid>/environ`` shows of dcode.

The shell and the MCP servers run without the keys in their environment, but any process of the
same user may read ``/proc/<dcode's pid>/environ`` (``cat /proc/$PPID/environ`` from a
command). That file is not the live environment: it is the block of ``NAME=value`` strings the
kernel copied into the process at ``execve``, between the addresses ``env_start`` and
``env_end`` of ``/proc/self/stat``; Python read it once into ``os.environ`` at start-up and
never looks at it again.

So, once at start-up, for each variable the shell would not get:

1. the C environment gets a copy of its own (``unsetenv`` then ``setenv``: the C library puts a
   new string in its own memory and points ``environ`` at it), so ``getenv`` and a program
   started without an explicit environment still see the value, as before;
2. the original string in the block, which nothing points at any more, is overwritten with NUL
   bytes (through ``/proc/self/mem``, which fails cleanly where a direct write would crash).

What it does not cover: the key is still in dcode's memory (a process allowed to ``ptrace``
dcode can read it: same user with ``kernel.yama.ptrace_scope = 0``), and in the environment of
the shell that started dcode, if it was exported there. Linux only; elsewhere nothing happens.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

_STAT_ENV_START = 47  # fields 50 and 51 of /proc/self/stat, counted after the command name
_STAT_ENV_END = 48


@dataclass(frozen=True, slots=True)
class Entry:
    offset: int
    text: bytes

    @property
    def name(self) -> str:
        return os.fsdecode(self.text.partition(b"=")[0])


def entries(block: bytes) -> list[Entry]:
    """The ``NAME=value`` strings of an environment block, with their offsets."""
    found: list[Entry] = []
    offset = 0
    for text in block.split(b"\0"):
        if b"=" in text[1:]:
            found.append(Entry(offset, text))
        offset += len(text) + 1
    return found


def _block_address() -> tuple[int, int] | None:
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
        start, end = int(fields[_STAT_ENV_START]), int(fields[_STAT_ENV_END])
    except (OSError, IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def _read_block() -> bytes | None:
    try:
        with open("/proc/self/environ", "rb") as handle:
            return handle.read()
    except OSError:
        return None


def hide(hides: Callable[[str], bool]) -> list[str]:
    """Take the variables ``hides`` names out of this process's environment block; returns
    their names (empty when there were none, or the system does not allow it)."""
    if not sys.platform.startswith("linux"):
        return []
    address, block = _block_address(), _read_block()
    if address is None or block is None or len(block) > address[1] - address[0]:
        return []
    chosen = [entry for entry in entries(block) if hides(entry.name)]
    if not chosen:
        return []
    for name in {entry.name for entry in chosen}:
        _own_copy(name)
    try:
        fd = os.open("/proc/self/mem", os.O_RDWR)
    except OSError:
        return []
    try:
        for entry in chosen:
            os.pwrite(fd, b"\0" * len(entry.text), address[0] + entry.offset)
    except OSError:
        return []
    finally:
        os.close(fd)
    return sorted({entry.name for entry in chosen})


def _own_copy(name: str) -> None:
    """Point the C environment's entry for ``name`` at a copy outside the block (or drop it,
    when Python's environment no longer has it)."""
    value = os.environ.get(name)
    os.unsetenv(name)  # every entry of that name, duplicates included
    if value is not None:
        os.putenv(name, value)
