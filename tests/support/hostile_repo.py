"""A git repository whose own configuration tries to run programs when anyone looks at it.

Every way a cloned (or unpacked) repository can make a read-only git command run a program is
set up, each program touching its own marker file in ``marks``: an fsmonitor hook, a clean and
smudge filter, a long-running process filter (speaking git's filter protocol, so that a
command using it succeeds), a filter defined in a file the config includes, a filter in the
worktree's own config, an external diff, a textconv driver, a pager and every hook. Four
tracked files selected by those filters are changed without changing their size, so that
``git status`` has to hash them through their filters; nothing else is uncommitted.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BRANCH = "trunk"
DIRTY = 4  # the changed tracked files
HOOKS = (
    "post-index-change",
    "post-checkout",
    "pre-commit",
    "post-commit",
    "reference-transaction",
    "pre-auto-gc",
    "post-rewrite",
    "pre-push",
    "fsmonitor-watchman",
    "post-merge",
)

PROCESS_FILTER = """\
import os, sys
open(os.path.join(sys.argv[1], "process-filter"), "w").close()
source, sink = sys.stdin.buffer, sys.stdout.buffer

def packet():
    size = source.read(4)
    if not size:
        sys.exit(0)
    length = int(size, 16)
    return None if length == 0 else source.read(length - 4)

def packets():
    while (data := packet()) is not None:
        yield data

def send(*items):
    for item in items:
        sink.write(b"0000" if item is None else b"%04x" % (len(item) + 4) + item)
    sink.flush()

list(packets())
send(b"git-filter-server\\n", b"version=2\\n", None)
list(packets())
send(b"capability=clean\\n", b"capability=smudge\\n", None)
while True:
    list(packets())
    content = b"".join(packets())
    send(b"status=success\\n", None, *([content] if content else []), None, None)
"""


@dataclass(frozen=True)
class HostileRepo:
    path: Path
    marks: Path

    def fired(self) -> list[str]:
        """The programs the repository managed to run, by marker name."""
        return sorted(entry.name for entry in self.marks.iterdir())

    def clear(self) -> None:
        for entry in self.marks.iterdir():
            entry.unlink()


def _git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=path,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )


def _program(directory: Path, name: str, marks: Path, then: str) -> str:
    """An executable that touches ``marks/name`` and then runs ``then``; its path."""
    script = directory / name
    script.write_text(f"#!/bin/sh\ntouch '{marks}/{name}'\n{then}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def make_hostile_repo(path: Path, marks: Path) -> HostileRepo:
    """The repository in ``path`` (which may already hold files), its markers in ``marks``."""
    path.mkdir(parents=True, exist_ok=True)
    marks.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", BRANCH)
    files = {
        "filtered.txt": "evil",
        "processed.txt": "evilproc",
        "included.txt": "included",
        "worktree.txt": "perworktree",
    }
    for name in files:
        (path / name).write_text("before\n")
    (path / ".gitattributes").write_text(
        "".join(f"{name} filter={driver} diff=conv\n" for name, driver in files.items())
    )
    _git(path, "add", "-A")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")

    git_dir = path / ".git"
    tools = git_dir / "tools"
    tools.mkdir()
    hooks = git_dir / "hooks"
    for hook in HOOKS:
        _program(hooks, hook, marks, "exit 0")
    process = tools / "process-filter.py"
    process.write_text(PROCESS_FILTER)
    included = git_dir / "more.config"
    included.write_text(
        f'[filter "included"]\n\tclean = {_program(tools, "included-clean", marks, "cat")}\n'
        f"[core]\n\tpager = {_program(tools, 'pager', marks, 'cat')}\n"
    )
    config = {
        "core.repositoryformatversion": "1",
        "extensions.worktreeConfig": "true",
        "core.fsmonitor": _program(tools, "fsmonitor", marks, "exit 1"),
        "filter.evil.clean": _program(tools, "clean", marks, "cat"),
        "filter.evil.smudge": _program(tools, "smudge", marks, "cat"),
        "filter.evil.required": "true",
        "filter.evilproc.process": f"{sys.executable} {process} {marks}",
        "diff.external": _program(tools, "external-diff", marks, "exit 0"),
        "diff.conv.textconv": _program(tools, "textconv", marks, 'cat "$1"'),
        "include.path": "more.config",
    }
    for key, value in config.items():
        _git(path, "config", key, value)
    _git(
        path,
        "config",
        "--worktree",
        "filter.perworktree.clean",
        _program(tools, "worktree-clean", marks, "cat"),
    )

    for name in files:  # the same size: only hashing through the filter tells them apart
        (path / name).write_text("after!\n")
    repo = HostileRepo(path, marks)
    repo.clear()
    return repo
