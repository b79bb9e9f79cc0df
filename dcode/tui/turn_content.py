"""A sent prompt made ready for its turn: the content (text, pasted media, then the files its
``@path`` mentions attach) and the lines the transcript shows with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dcode.agent.attached_files import AttachedFile, attachment_lines
from dcode.tui.transcript.entries import VideoSeen

if TYPE_CHECKING:
    from dcode.agent.engine import Engine
    from dcode.cli.headless_media import ProjectCommand

Content = str | list[dict[str, object]]


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    content: Content
    text: str
    """The prompt as typed (``[image 1]`` and ``@path`` kept): titles, history, the transcript."""
    videos: list[VideoSeen] = field(default_factory=list)
    attached: tuple[AttachedFile, ...] = ()
    notes: tuple[str, ...] = ()
    """One line for each mention that could not be attached, and for media the model will not see."""

    @property
    def files(self) -> tuple[str, ...]:
        """The transcript's line for each attached file, as a resumed session shows it."""
        return attachment_lines(self.attached)


async def with_mentions(
    engine: Engine, prompt: PreparedTurn, command: ProjectCommand | None
) -> PreparedTurn:
    """``prompt`` with the files its text mentions attached, read as ``dcode -p`` reads them:
    through the session's own backend, attachment store and model profile."""
    from dataclasses import replace

    from dcode.agent.tools.read_media import MediaReader
    from dcode.models.media_support import MediaSupport
    from dcode.prompts.files import read_mentions
    from dcode.prompts.mentions import mentions

    if not mentions(prompt.text):
        return prompt
    settings, resolved = engine.settings, engine.resolved
    workspace = settings.workspace
    allowed = None if command is None else lambda raw, path: command.allows(raw, path, workspace)
    reader = MediaReader(engine.attachments, resolved.profile)
    found = await read_mentions(
        prompt.text, engine.backend, reader, allowed=allowed, refusal=engine.rules.read_refusal
    )
    content, attached = found.attach(prompt.content)
    notes = [command.refusal(found.refused)] if command is not None and found.refused else []
    notes += found.problems
    if attached and isinstance(content, list):
        blocks = [content[index] for file in attached for index in file.blocks]
        notes += MediaSupport(resolved.spec, resolved.profile, settings.user_config).unseen_in(
            blocks
        )
    return replace(prompt, content=content, attached=attached, notes=tuple(notes))
