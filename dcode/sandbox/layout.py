"""What a sandboxed command sees of the file system: the same answer for every platform.

* The whole file system is readable and nothing is writable, except the workspace and the
  directories added to it (``--add-dir``), in ``workspace-write``, and a private, empty ``/tmp``.
* ``$DCODE_HOME`` (sessions, config, keys the user saved) is an empty directory.
* The usual credential stores in the user's home are empty: a directory appears empty, a file
  appears as an empty file.
* The well-known daemons' sockets (Docker, containerd, Podman, D-Bus) and the user's runtime
  directory (``$XDG_RUNTIME_DIR``: session bus, agents' sockets) are hidden: a Unix socket is a
  file, reachable without the network, and a container daemon's is as good as root. Other
  sockets on the file system stay reachable.
* Inside the workspace (and each added directory), what could make a later, unsandboxed program run something, or change
  what dcode allows, stays read-only: ``.git/hooks``, ``.git/config``, ``.dcode`` and
  ``.claude``. A missing one is made read-only too (an empty directory appears in its place
  while the command runs), so a command cannot create ``.git/hooks/pre-commit`` either. ``.git``
  itself stays writable (commits work) but is pinned in place: a command that could rename it
  would make a new ``.git`` with hooks of its own. A submodule's git directory
  (``.git/modules/NAME``) is kept the same way: its ``hooks`` and ``config`` read-only, itself
  and ``.git/modules`` pinned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dcode.sandbox.modes import SandboxMode, SandboxSettings

CREDENTIAL_DIRS = (".ssh", ".aws", ".config/gh", ".gnupg", ".kube")
CREDENTIAL_FILES = (".netrc", ".docker/config.json", ".git-credentials", ".pypirc")
DAEMON_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
)
PROTECTED_DIRS = (".git/hooks", ".dcode", ".claude")
PROTECTED_FILES = (".git/config",)


@dataclass(frozen=True, slots=True)
class Layout:
    """Paths are absolute and resolved (a mount follows a symlink to where it leads)."""

    writable: tuple[Path, ...]
    """Bound read-write over the read-only root (the workspace and the added directories, in
    ``workspace-write``)."""
    hidden_dirs: tuple[Path, ...]
    """Each replaced by an empty directory (``$DCODE_HOME``, credential folders)."""
    hidden_files: tuple[Path, ...]
    """Each replaced by an empty file (a socket too)."""
    pinned: tuple[Path, ...]
    """Writable directories that may not be renamed (each its own mount: moving it fails)."""
    read_only_dirs: tuple[Path, ...]
    """Existing directories inside a writable one, kept read-only."""
    missing_dirs: tuple[Path, ...]
    """Protected directories that do not exist: an empty read-only one stands in."""
    read_only_files: tuple[Path, ...]
    network: bool
    workspace: Path

    @classmethod
    def plan(
        cls,
        settings: SandboxSettings,
        workspace: Path,
        dcode_home: Path,
        user_home: Path | None = None,
        add_dirs: tuple[Path, ...] = (),
    ) -> Layout:
        workspace = _real(workspace)
        home = _real(user_home or Path.home())
        writable = (
            (workspace, *(_real(d) for d in add_dirs))
            if settings.mode is SandboxMode.WORKSPACE_WRITE
            else ()
        )
        runtime = [Path(os.environ["XDG_RUNTIME_DIR"])] if os.environ.get("XDG_RUNTIME_DIR") else []
        hidden_dirs = _existing(
            [_real(dcode_home), *(home / name for name in CREDENTIAL_DIRS), *runtime], dirs=True
        )
        hidden_files = _existing(
            [*(home / name for name in CREDENTIAL_FILES), *map(Path, DAEMON_SOCKETS)], dirs=False
        )
        guarded = [_guarded(root) for root in writable]
        protected = [p for dirs, _, _ in guarded for p in dirs]
        files = [f for _, found, _ in guarded for f in found]
        return cls(
            writable=writable,
            pinned=tuple(p for _, _, pinned in guarded for p in pinned),
            hidden_dirs=hidden_dirs,
            hidden_files=hidden_files,
            read_only_dirs=tuple(
                _real(p)
                for p in protected
                if p.is_dir() and any(_inside(_real(p), root) for root in writable)
            ),
            missing_dirs=tuple(p for p in protected if not os.path.lexists(p)),
            read_only_files=_existing(files, dirs=False),
            network=settings.network,
            workspace=workspace,
        )


def _guarded(root: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """What stays read-only inside a writable ``root``: (its directories, its files, what is
    pinned in place). ``.git/hooks`` only where ``root`` has a ``.git`` directory, and each
    submodule's hooks and config as the repository's own."""
    git = root / ".git"
    repository = git.is_dir() and not git.is_symlink()
    modules = _submodule_git_dirs(git) if repository else []
    protected = [root / name for name in PROTECTED_DIRS]
    if not git.is_dir():
        protected = [p for p in protected if p.parent != git]
    protected += [module / "hooks" for module in modules]
    files = [root / name for name in PROTECTED_FILES]
    files += [module / "config" for module in modules]
    pinned = [git, *([git / "modules"] if modules else []), *modules] if repository else []
    return protected, files, pinned


MAX_SUBMODULES = 64
"""Submodules' git directories looked for under ``.git/modules`` (nested ones included)."""


def _submodule_git_dirs(git: Path) -> list[Path]:
    """The git directories of the repository's submodules (``.git/modules/NAME``, nested
    ``…/modules/NAME``), parents first: their hooks and config are as dangerous as the
    repository's own, since ``git`` run in the submodule uses them. Real directories only: a
    symlink there is not followed."""
    found: list[Path] = []
    waiting = [git / "modules"]
    while waiting and len(found) < MAX_SUBMODULES:
        folder = waiting.pop(0)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            if (path / "HEAD").is_file():
                found.append(path)
                waiting.append(path / "modules")
            else:
                waiting.append(path)  # a submodule named a/b lives at modules/a/b
    return found[:MAX_SUBMODULES]


def _real(path: Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _existing(paths: list[Path], *, dirs: bool) -> tuple[Path, ...]:
    found: list[Path] = []
    for path in paths:
        real = _real(path)
        if (real.is_dir() if dirs else real.exists() and not real.is_dir()) and real not in found:
            found.append(real)
    return tuple(found)
