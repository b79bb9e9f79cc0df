"""read_file on a video: a window of frames sampled at 0.5 fps (``dcode.media.video``).

``offset`` and ``limit`` are seconds here (default 0 and 100). Without PyAV the file is
attached whole when it is small enough (a ``.mkv`` as a plain ``file``, as the reference does),
and a larger one is an error saying how to enable frame sampling.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.args import VIDEO_DEFAULT_LIMIT_S
from dcode.agent.tools.errors import fail
from dcode.agent.tools.media_result import MiB, media_result, megabytes, require_size
from dcode.agent.tools.read_file import BinaryFile
from dcode.agent.tools.result import Block
from dcode.media import video
from dcode.media.file_attachment import to_file_reference_block
from dcode.media.store import AttachmentStore
from dcode.media.video_text import summary_line

MAX_WHOLE_VIDEO_BYTES = 20 * MiB


async def read_video(store: AttachmentStore, backend: Backend, file: BinaryFile) -> list[Block]:
    missing = video.video_support()
    if missing is not None:
        return await _whole(store, backend, file, missing)
    offset = file.args.offset if file.args else 0.0
    limit = (
        VIDEO_DEFAULT_LIMIT_S if file.args is None or file.args.limit is None else file.args.limit
    )
    try:
        window = await asyncio.to_thread(
            video.sample_window, backend.resolve(file.path), store=store, offset=offset, limit=limit
        )
    except video.VideoError as exc:
        fail(video.error_text(file.display, exc))
    return media_result(
        summary_line(file.display, len(window.frames)), video.window_blocks(window, file.display)
    )


async def _whole(
    store: AttachmentStore, backend: Backend, file: BinaryFile, missing: str
) -> list[Block]:
    require_size(file, MAX_WHOLE_VIDEO_BYTES, "videos", hint=f" whole, and {missing}")
    data = await backend.read_bytes(file.path)
    kind: Literal["file", "video"] = "file" if file.mime == "video/x-matroska" else "video"
    att = await asyncio.to_thread(
        store.admit_file, data, kind=kind, media_type=file.mime, name=file.display
    )
    summary = f"Read video {file.display} ({megabytes(len(data))}, attached whole: no frame sampling here)."
    return media_result(summary, [to_file_reference_block(att)])
