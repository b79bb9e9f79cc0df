"""read_file's reader for everything that is not text, bound to the attachment store and the
configured model's profile: each kind goes to its own module."""

from __future__ import annotations

from dcode.agent.backends.protocol import Backend
from dcode.agent.tools.factory import ToolOutput
from dcode.agent.tools.read_audio import read_audio
from dcode.agent.tools.read_file import BinaryFile, reject_binary
from dcode.agent.tools.read_image import read_image
from dcode.agent.tools.read_pdf import read_pdf
from dcode.agent.tools.read_video import read_video
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
                return await read_image(self.store, backend, file)
            case "pdf":
                return await read_pdf(self.store, self.profile, backend, file)
            case "audio":
                return await read_audio(self.store, backend, file)
            case "video":
                return await read_video(self.store, backend, file)
            case _:
                return await reject_binary(backend, file)
