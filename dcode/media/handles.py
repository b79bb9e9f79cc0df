"""The handle line that precedes every image in a model request.

A model that sees only pixels cannot refer back to "the second screenshot", and cannot know
that what it sees is a shrunken copy. The handle gives each image a stable name, both sizes
and a read-only path it can pass to ``read_file`` for another look, and says plainly that
the pixels may have been downscaled or re-encoded. The text depends only on stable facts
(never on time or turn number), so the same image yields the same line every request and the
provider's prompt cache keeps matching.
"""

from __future__ import annotations

from pathlib import Path

from dcode.media.attachment import Attachment


def handle_line(
    *,
    name: str,
    attachment_id: str,
    request_size: tuple[int, int],
    normalized_size: tuple[int, int],
    media_type: str,
    path: Path | str,
) -> str:
    """One line: ``[image NAME (id ...): sent as WxH TYPE, stored WxH, read-only copy at
    PATH; ...]``."""
    label = name or attachment_id[:12]
    rw, rh = request_size
    nw, nh = normalized_size
    return (
        f"[image {label} (id {attachment_id[:12]}): sent as {rw}x{rh} {media_type}, "
        f"stored {nw}x{nh}, read-only copy at {path}; "
        f"this view may have been downscaled or re-encoded]"
    )


def handle_for(
    att: Attachment, *, request_size: tuple[int, int], media_type: str, path: Path | str
) -> str:
    """:func:`handle_line` for a stored attachment."""
    return handle_line(
        name=att.display_name,
        attachment_id=att.id,
        request_size=request_size,
        normalized_size=(att.width, att.height),
        media_type=media_type,
        path=path,
    )
