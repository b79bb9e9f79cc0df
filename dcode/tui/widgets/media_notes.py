"""What the media tracker binds a token to, and the lines it shows once a paste is attached:
what was refused, and media the model will not see (``dcode.models.media_support``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dcode.media.attachment import Attachment
from dcode.media.kinds import MediaKind, media_label

if TYPE_CHECKING:
    from dcode.models.media_support import MediaSupport

Report = tuple[str, str]
"""A toast's text and severity ("information", "warning" or "error"); empty text: no toast."""


@dataclass(frozen=True, slots=True)
class MediaItem:
    """What a media token is bound to: an admitted image, or a video file (sampled on send)."""

    kind: MediaKind
    number: int
    name: str
    attachment: Attachment | None = None  # set for images
    path: Path | None = None  # the dropped file (None for a clipboard image)

    @property
    def label(self) -> str:
        return media_label(self.kind, self.number)


@dataclass(slots=True)
class AttachNotes:
    refused: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    over_cap: int = 0
    too_large: list[str] = field(default_factory=list)


def attach_report(notes: AttachNotes, max_images: int, byte_cap: int | None) -> Report:
    lines: list[str] = []
    severity = "information"
    if notes.refused:
        word = "Image" if len(notes.refused) == 1 else "Images"
        lines.append(f"{word} not attached: " + "; ".join(notes.refused))
        severity = "error"
    if notes.over_cap:
        lines.append(
            f"Too many images: at most {max_images} per message; {notes.over_cap} not attached"
        )
        severity = "error" if severity == "error" else "warning"
    if notes.too_large:
        cap = f" ({byte_cap // (1024 * 1024)} MiB)" if byte_cap else ""
        lines.append(
            f"Images too large together for one message{cap}: {', '.join(notes.too_large)} not attached"
        )
        severity = "error" if severity == "error" else "warning"
    if notes.duplicates:
        lines.append("Already attached: " + "; ".join(notes.duplicates))
    return "\n".join(lines), severity


def unseen_report(support: MediaSupport | None, pieces: list[str | MediaItem]) -> Report:
    """One line when the model will not see what was just attached: a video goes as its frames,
    which are images."""
    items = [piece for piece in pieces if isinstance(piece, MediaItem)]
    if support is None or not items:
        return "", "warning"
    labels = [
        item.label if item.kind == "image" else f"{item.label} (its frames)" for item in items
    ]
    return support.unseen("image", " and ".join(labels)) or "", "warning"
