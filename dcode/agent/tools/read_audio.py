"""read_file on an audio clip: admitted byte for byte as an ``audio`` attachment.

The result always holds the reference; the request projection puts the clip in for a model that
takes audio and the one-line placeholder for any other, so history is the same on every model.
"""

from __future__ import annotations

import asyncio
import io
import wave

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.media_result import MiB, media_result, megabytes, require_size
from dcode.agent.tools.read_file import BinaryFile
from dcode.media.file_attachment import to_file_reference_block
from dcode.media.store import AttachmentStore

MAX_AUDIO_BYTES = 20 * MiB


async def read_audio(store: AttachmentStore, backend: Backend, file: BinaryFile) -> list[dict]:
    require_size(file, MAX_AUDIO_BYTES, "audio files")
    data = await backend.read_bytes(file.path)
    att = await asyncio.to_thread(
        store.admit_file, data, kind="audio", media_type=file.mime, name=file.display
    )
    length = wav_seconds(data) if file.mime in ("audio/wav", "audio/x-wav") else None
    facts = f"{length:.1f} s" if length is not None else megabytes(len(data))
    return media_result(f"Read audio {file.display} ({facts}).", [to_file_reference_block(att)])


def wav_seconds(data: bytes) -> float | None:
    """A WAV file's duration, when the standard library can read its header (PCM)."""
    try:
        with wave.open(io.BytesIO(data)) as clip:
            rate = clip.getframerate()
            return clip.getnframes() / rate if rate else None
    except (wave.Error, EOFError, ValueError):
        return None
