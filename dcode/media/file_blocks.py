"""The standard langchain block that carries a stored file's bytes in one request (pure).

langchain-openai turns ``{"type": "file", "base64", "mime_type", "filename"}`` into a ``file``
part with a ``file_data`` data URL on Chat Completions and an ``input_file`` item on the
Responses API, and ``{"type": "audio", "base64", "mime_type"}`` into ``input_audio``, whose
``format`` is the MIME subtype: so an MP3 goes as ``audio/mp3`` and a WAV as ``audio/wav``,
the two names OpenAI knows.
"""

from __future__ import annotations

import base64
from pathlib import PurePosixPath

from dcode.media.file_attachment import FileAttachment

_WIRE_MIME = {"audio/mpeg": "audio/mp3", "audio/x-wav": "audio/wav", "audio/wave": "audio/wav"}


def standard_block(att: FileAttachment, data: bytes) -> dict[str, object]:
    """The block for ``att`` whose bytes are ``data``."""
    encoded = base64.b64encode(data).decode("ascii")
    mime = _WIRE_MIME.get(att.media_type, att.media_type)
    block: dict[str, object] = {"type": att.kind, "base64": encoded, "mime_type": mime}
    if att.kind == "file":
        block["filename"] = PurePosixPath(att.name).name or f"{att.id[:12]}.{att.extension}"
    return block
