"""The limits a Files API documents, and how dcode uses them (pure data).

The figures are the OpenAI-compatible Files API's documented ones: 128 MiB per uploaded file,
32 MiB per image referenced in a chat request, 10,000 files and 25 GiB per organisation, and an
expiry between one hour and thirty days. dcode asks for seven days, and replaces a mapping that
has an hour or less left by a new upload rather than asking the provider whether the old file
is still there: a request must not depend on the file expiring a minute after it was sent.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB
HOUR = 3600
DAY = 24 * HOUR


@dataclass(frozen=True, slots=True)
class FilesPolicy:
    expires_after: int = 7 * DAY
    """Seconds each upload asks to live (``expires_after`` anchored at its creation)."""
    refresh_margin: int = HOUR
    """A mapping with this much life left, or less, is replaced by a new upload."""
    max_upload_bytes: int = 128 * MiB
    max_chat_image_bytes: int = 32 * MiB
    max_files: int = 10_000
    max_total_bytes: int = 25 * GiB
    quota_release: int = 64
    """How many of the oldest dcode-owned files a quota error deletes before the one retry."""
    name_prefix: str = "dcode-"
    """Every file dcode uploads is named so; only such files are ever deleted to make room."""
    purpose: str = "vision"

    def __post_init__(self) -> None:
        if not HOUR <= self.expires_after <= 30 * DAY:
            raise ValueError(
                f"FilesPolicy.expires_after must be between 1 hour and 30 days, got {self.expires_after} s"
            )
        if not 0 <= self.refresh_margin < self.expires_after:
            raise ValueError(
                "FilesPolicy.refresh_margin must be >= 0 and shorter than expires_after"
            )
        for name in (
            "max_upload_bytes",
            "max_chat_image_bytes",
            "max_files",
            "max_total_bytes",
            "quota_release",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"FilesPolicy.{name} must be > 0")
        if not self.name_prefix:
            raise ValueError(
                "FilesPolicy.name_prefix must not be empty: it is what marks dcode's own files"
            )

    @property
    def max_image_bytes(self) -> int:
        """The largest variant that can travel as a file id: within both per-file limits."""
        return min(self.max_upload_bytes, self.max_chat_image_bytes)


DEFAULT_FILES_POLICY = FilesPolicy()
