"""Images for ``dcode -p``: ``-i PATH`` (repeatable) and ``@path`` mentions of image files.

They go through the same admission as a pasted screenshot, and the prompt becomes a text block
plus one reference block per image; bytes are only produced when the request is built.
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
    """Admit every image as one batch (all or nothing); raise ConfigError with the reason."""
    from dcode.media.attachment import to_reference_block
    from dcode.media.errors import MediaError
    from dcode.media.kinds import require_not_video
    from dcode.media.store import AttachmentStore

    paths = [p if p.is_absolute() else settings.workspace / p for p in images]
    paths += [p for p in mentioned_media(request.prompt, settings.workspace) if p not in paths]
    if not paths:
        return request
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"image not found: {path}")
    try:
        for path in paths:
            require_not_video(path)
        attachments = AttachmentStore(settings.attachments_dir).admit(paths)
    except MediaError as exc:
        raise ConfigError(str(exc)) from None
    content = [{"type": "text", "text": request.prompt}, *(to_reference_block(a) for a in attachments)]
    return replace(request, content=content)

