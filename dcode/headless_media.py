"""Media for ``dcode -p``: ``-i PATH`` (repeatable) and ``@path`` mentions of image or video files.

Images go through the same admission as a pasted screenshot; a video is sampled over its first
window by the same code as read_file (``dcode.media.video_input``). The prompt becomes a text
block, then each file's blocks in the order given: a reference block per image, a window's
header, frame labels and frame references per video. Bytes are only produced when the request
is built.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from dcode.config import ConfigError, Settings
from dcode.headless import HeadlessRequest

_MENTION = re.compile(r"(?<![\w/])@((?:\\ |[^\s])+)")


def mentioned_media(prompt: str, workspace: Path) -> list[Path]:
    """Existing image or video files named as ``@path`` in the prompt (``\\ `` escapes spaces)."""
    from dcode.media.kinds import detect_media_kind

    found: list[Path] = []
    for match in _MENTION.finditer(prompt):
        raw = match.group(1).replace("\\ ", " ").rstrip(".,;:!?)")
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else workspace / path
        if path.is_file() and detect_media_kind(path) is not None and path not in found:
            found.append(path)
    return found


def attach_images(settings: Settings, request: HeadlessRequest, images: list[Path]) -> HeadlessRequest:
    """Admit every image as one batch (all or nothing) and sample every video; raise
    ConfigError with the reason (one line) when one cannot be sent."""
    from dcode.media.attachment import to_reference_block
    from dcode.media.errors import MediaError
    from dcode.media.kinds import detect_media_kind
    from dcode.media.store import AttachmentStore
    from dcode.media.video_input import sample_first_window

    paths = [p if p.is_absolute() else settings.workspace / p for p in images]
    paths += [p for p in mentioned_media(request.prompt, settings.workspace) if p not in paths]
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
