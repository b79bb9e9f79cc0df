"""What a project may put into the prompt: only files that stay inside the project.

A cloned repository is untrusted input, and its AGENTS.md, skills, agents and commands reach
the model. A link among them to ``~/.ssh/id_rsa`` or ``~/.aws/credentials`` would put the
user's secrets into the next request, so a project's file counts only when the path the kernel
would open (every link followed) is inside the project. The user's own files (under
``$DCODE_HOME`` or their home directory) are theirs, and may lead anywhere.

Standard library only: the commands are read before anything heavy is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

OUTSIDE_PROJECT = "it points outside the project"


def real_path(path: Path) -> Path:
    """``path`` with every link followed; unlike ``Path.resolve``, never raises on a loop."""
    return Path(os.path.realpath(path))


def inside(path: Path, root: Path) -> bool:
    """Whether ``path``, links followed, is ``root`` or under it (``root`` already real)."""
    return real_path(path).is_relative_to(root)


def not_read(path: Path | str) -> str:
    """The one line that says a project's file was left out for leading outside the project."""
    return f"{path} is not read: {OUTSIDE_PROJECT}"


@dataclass(frozen=True, slots=True)
class PromptSource:
    """A file or directory whose files may reach the prompt. ``project``: the real root its
    files must stay inside, for a project's source; None for the user's own."""

    path: Path
    project: Path | None = None

    def leads_outside(self, path: Path) -> bool:
        """Whether ``path`` (this source or a file in it) may not be read."""
        return self.project is not None and not inside(path, self.project)


def sources_of(places: list[tuple[Path, Path | None]]) -> list[PromptSource]:
    """``places`` (path, project root or None) as sources, in order. A project's place that is
    also one of the user's (dcode started in the home directory) counts once, as the user's."""
    own = {real_path(path) for path, project in places if project is None}
    return [
        PromptSource(path, project)
        for path, project in places
        if project is None or real_path(path) not in own
    ]
