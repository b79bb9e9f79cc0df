"""read_file's reader for everything that is not text, bound to the attachment store and the
configured model's profile: each kind goes to its own module.

Each kind's module is imported when a file of that kind is read: a turn that reads no PDF or
video does not load the PDF renderer's pool or the video pipeline (``dcode -p`` starts
without them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcode.agent.tools.read_file import BinaryFile, reject_binary

if TYPE_CHECKING:
    from dcode.agent.backends.protocol import Backend
    from dcode.agent.tools.factory import ToolOutput
    from dcode.media.store import AttachmentStore
    from dcode.models.profiles import ModelProfile


class MediaReader:
    """A ``BinaryReader``: images, PDFs, audio and video; any other binary is refused."""

    def __init__(self, store: AttachmentStore, profile: ModelProfile) -> None:
        self.store = store
        self.profile = profile

    async def __call__(self, backend: Backend, file: BinaryFile) -> ToolOutput:
        match file.kind:
            case "image":
                from dcode.agent.tools.read_image import read_image

                return await read_image(self.store, backend, file)
            case "pdf":
                from dcode.agent.tools.read_pdf import read_pdf

                return await read_pdf(self.store, self.profile, backend, file)
            case "audio":
                from dcode.agent.tools.read_audio import read_audio

                return await read_audio(self.store, backend, file)
            case "video":
                from dcode.agent.tools.read_video import read_video

                return await read_video(self.store, backend, file)
            case _:
                return await reject_binary(backend, file)
