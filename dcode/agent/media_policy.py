"""What a request may carry, per modality: the model's profile and what its wire can encode.

The profile says what the model takes (``image_inputs``, ``audio_inputs``, ``video_inputs``,
``pdf_inputs``; PDFs and other files are one field) and what it takes inside a tool result
(``image_tool_message``, ``pdf_tool_message``; audio and video never stay in one). The wire
adds refusals of its own, found in the installed langchain-openai: it encodes no ``video``
block on either API (a ValueError, not a request), and on the Responses API it drops an audio
part from a user message and turns a tool result holding one into a JSON string. A part that
is refused becomes a placeholder, so neither ever reaches the client.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dcode.media.modality import Modality
from dcode.models.profiles import ModelProfile

# What langchain-openai cannot put on each wire, whatever the profile says.
WIRE_REFUSES: dict[str, frozenset[Modality]] = {
    "chat": frozenset({"video"}),
    "responses": frozenset({"video", "audio"}),
}


@dataclass(frozen=True, slots=True)
class MediaPolicy:
    profile: ModelProfile = field(default_factory=ModelProfile)
    refused: frozenset[Modality] = frozenset()

    @classmethod
    def of(cls, profile: ModelProfile, *, wire: str) -> MediaPolicy:
        """``wire``: "chat" (Chat Completions) or "responses"."""
        return cls(profile, WIRE_REFUSES.get(wire, frozenset()))

    def accepts(self, modality: Modality) -> bool:
        """Whether the model takes this modality at all (in a user message)."""
        if modality in self.refused:
            return False
        match modality:
            case "image":
                return self.profile.image_inputs
            case "audio":
                return self.profile.audio_inputs
            case "video":
                return self.profile.video_inputs
            case _:
                return self.profile.pdf_inputs

    def stays_in_tool(self, modality: Modality) -> bool:
        """Whether this modality may stay in the tool result that produced it."""
        match modality:
            case "image":
                return self.accepts(modality) and self.profile.image_tool_message
            case "pdf" | "file":
                return self.accepts(modality) and self.profile.pdf_tool_message
            case _:
                return False
