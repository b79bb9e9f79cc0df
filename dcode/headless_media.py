"""Media for ``dcode -p``: ``-i PATH`` (repeatable) and ``@path`` mentions of image or video files.

Images go through the same admission as a pasted screenshot; a video is sampled over its first
window by the same code as read_file (``dcode.media.video_input``). The prompt becomes a text
block, then each file's blocks in the order given: a reference block per image, a window's
header, frame labels and frame references per video. Bytes are only produced when the request
is built.

A project's command is the project's text, not the user's: a mention in it resolves inside the
project only (``dcode.project_files``), so that running ``/review`` cannot send
``~/Pictures/passport.png``. What the user typed after the command's name may name any file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from dcode.config import ConfigError, Settings
from dcode.headless import HeadlessRequest
from dcode.project_files import inside, real_path

_MENTION = re.compile(r"(?<![\w/])@((?:\\ |[^\s])+)")


def _mentions(text: str) -> list[str]:
    """The paths ``text`` names as ``@path``, as written (``\\ `` escapes spaces)."""
    return [match.group(1).replace("\\ ", " ").rstrip(".,;:!?)") for match in _MENTION.finditer(text)]


@dataclass(frozen=True, slots=True)
class ProjectCommand:
    """A prompt that is a project's command: its name, and what the user typed after it."""

    name: str
    typed: str

    def typed_paths(self) -> set[str]:
        return {*_mentions(self.typed), *self.typed.split()}


def _media_mentions(prompt: str, workspace: Path, command: ProjectCommand | None) -> tuple[list[Path], list[str]]:
    """The media files the prompt mentions, and the files refused for leading outside the
    project (in a project's command, where the user did not type them), which are not opened."""
    from dcode.media.kinds import detect_media_kind

    root, typed = real_path(workspace), command.typed_paths() if command else set()
    found: list[Path] = []
    refused: list[str] = []
    for raw in _mentions(prompt):
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else workspace / path
        if not path.is_file() or path in found or raw in refused:
            continue
        if command is not None and raw not in typed and not inside(path, root):
            refused.append(raw)
        elif detect_media_kind(path) is not None:
            found.append(path)
    return found, refused


def mentioned_media(prompt: str, workspace: Path, command: ProjectCommand | None = None) -> list[Path]:
    """Existing image or video files named as ``@path`` in the prompt (``\\ `` escapes spaces);
    ``command``: the project's command the prompt is (see the module's docstring)."""
    return _media_mentions(prompt, workspace, command)[0]


def attach_images(
    settings: Settings,
    request: HeadlessRequest,
    images: list[Path],
    *,
    command: ProjectCommand | None = None,
    warn: Callable[[str], None] | None = None,
) -> HeadlessRequest:
    """Admit every image as one batch (all or nothing) and sample every video; raise
    ConfigError with the reason (one line) when one cannot be sent. ``command``: the project's
    command the prompt is; ``warn`` is told, in one line, the mentions left out for it."""
    from dcode.media.attachment import to_reference_block
    from dcode.media.errors import MediaError
    from dcode.media.kinds import detect_media_kind
    from dcode.media.store import AttachmentStore
    from dcode.media.video_input import sample_first_window

    paths = [p if p.is_absolute() else settings.workspace / p for p in images]
    mentioned, refused = _media_mentions(request.prompt, settings.workspace, command)
    paths += [p for p in mentioned if p not in paths]
    if refused and command is not None and warn is not None:
        warn(f"/{command.name} mentions {', '.join(f'@{raw}' for raw in refused)}, outside the project: not attached")
    if not paths:
        return request
    for path in paths:
        _require_file(path)
    store = AttachmentStore(settings.attachments_dir)
    videos = [path for path in paths if detect_media_kind(path) == "video"]
    try:
        admitted = iter(store.admit([path for path in paths if path not in videos]))
        sampled = {path: sample_first_window(path, store, workspace=settings.workspace) for path in videos}
    except MediaError as exc:
        raise ConfigError(str(exc)) from None
    blocks: list[dict] = []
    for path in paths:
        blocks += sampled[path].blocks if path in sampled else [to_reference_block(next(admitted))]
    return replace(request, content=[{"type": "text", "text": request.prompt}, *blocks])


def _require_file(path: Path) -> None:
    """A missing path, and a pipe or device (which would block or never end), as one line."""
    from dcode.regular_files import NotRegularFile, require_regular

    try:
        require_regular(path.stat(), path)
    except NotRegularFile as exc:
        raise ConfigError(f"{path} is {exc.what}, not a regular file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not an image or video file") from None
    except OSError:
        raise ConfigError(f"image not found: {path}") from None
