"""Files for ``dcode -p``: ``-i PATH`` (repeatable) images and videos, and ``@path`` mentions.

``-i`` images go through the same admission as a pasted screenshot; a video is sampled over its
first window by the same code as read_file (``dcode.media.video_input``). The prompt becomes a
text block, then each file's blocks in the order given: a reference block per image, a window's
header, frame labels and frame references per video. Bytes are only produced when the request
is built. Each file a ``@path`` names is attached as the TUI attaches it (``dcode.prompts.files``):
text as read_file shows it, media through read_file's reader.

A project's command is the project's text, not the user's: a mention in it resolves inside the
project only (``dcode.settings.project_files``), so that running ``/review`` cannot send
``~/Pictures/passport.png``. What the user typed after the command's name may name any file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dcode.cli.run_request import HeadlessRequest
from dcode.prompts.mentions import mentions
from dcode.settings.config import ConfigError, Settings
from dcode.settings.project_files import inside, real_path

if TYPE_CHECKING:
    from dcode.models.profiles import ModelProfile
    from dcode.prompts.files import Mentioned


@dataclass(frozen=True, slots=True)
class ProjectCommand:
    """A prompt that is a project's command: its name, and what the user typed after it."""

    name: str
    typed: str

    def typed_paths(self) -> set[str]:
        return {*mentions(self.typed), *self.typed.split()}

    def allows(self, raw: str, path: Path, workspace: Path) -> bool:
        """Whether the command's prompt may attach ``path`` (mentioned as ``raw``): the user
        typed it, or it is inside the project."""
        return raw in self.typed_paths() or inside(path, real_path(workspace))

    def refusal(self, refused: list[str]) -> str:
        return f"/{self.name} mentions {', '.join(f'@{raw}' for raw in refused)}, outside the project: not attached"


def attach_images(
    settings: Settings,
    request: HeadlessRequest,
    images: list[Path],
    *,
    command: ProjectCommand | None = None,
    warn: Callable[[str], None] | None = None,
) -> HeadlessRequest:
    """Admit every ``-i`` image as one batch (all or nothing) and sample every video, raising
    ConfigError with the reason (one line) when one cannot be sent; then attach the files the
    prompt mentions, each one that cannot be attached a line to ``warn``. ``command``: the
    project's command the prompt is. Blocking, with an event loop of its own for the mentions:
    call it where none runs."""
    from dcode.media.attachment import to_reference_block
    from dcode.media.errors import MediaError
    from dcode.media.kinds import detect_media_kind
    from dcode.media.store import AttachmentStore
    from dcode.media.video_input import sample_first_window

    paths = [p if p.is_absolute() else settings.workspace / p for p in images]
    for path in paths:
        _require_file(path)
    blocks: list[dict] = []
    if paths:
        store = AttachmentStore(settings.attachments_dir)
        videos = [path for path in paths if detect_media_kind(path) == "video"]
        try:
            admitted = iter(store.admit([path for path in paths if path not in videos]))
            sampled = {
                path: sample_first_window(path, store, workspace=settings.workspace)
                for path in videos
            }
        except MediaError as exc:
            raise ConfigError(str(exc)) from None
        for path in paths:
            blocks += (
                sampled[path].blocks if path in sampled else [to_reference_block(next(admitted))]
            )
    content: str | list[dict[str, object]] = (
        [{"type": "text", "text": request.prompt}, *blocks] if blocks else request.prompt
    )
    if not mentions(request.prompt):
        return replace(request, content=content) if isinstance(content, list) else request
    found = asyncio.run(
        _read_mentions(settings, request.prompt, command, frozenset(real_path(p) for p in paths))
    )
    for line in (
        [command.refusal(found.refused)] if command and found.refused else []
    ) + found.problems:
        if warn is not None:
            warn(line)
    content, attached = found.attach(content)
    return replace(
        request, content=content if isinstance(content, list) else None, attached=attached
    )


async def _read_mentions(
    settings: Settings, prompt: str, command: ProjectCommand | None, skip: frozenset[Path]
) -> Mentioned:
    """The files ``prompt`` mentions, read as the TUI reads them, for the model dcode will run."""
    from dcode.agent.backends.local import LocalBackend
    from dcode.agent.permissions.load import session_rules
    from dcode.agent.tools.read_media import MediaReader
    from dcode.media.store import AttachmentStore
    from dcode.prompts.files import read_mentions

    allowed = (
        None if command is None else lambda raw, path: command.allows(raw, path, settings.workspace)
    )
    reader = MediaReader(AttachmentStore(settings.attachments_dir), _profile(settings))
    rules, _ = session_rules(settings)  # a rule left out is said once, when the session starts
    return await read_mentions(
        prompt,
        LocalBackend(settings.workspace),
        reader,
        allowed=allowed,
        skip=skip,
        refusal=rules.read_refusal,
    )


def _profile(settings: Settings) -> ModelProfile:
    """The model's profile (what it takes decides how a PDF is attached); the one kept from its
    server when the endpoint itself is not usable: the run says why."""
    from dcode.models.factory import model_profile, resolve_model
    from dcode.models.spec import parse_spec

    try:
        return resolve_model(settings).profile
    except ConfigError:
        return model_profile(parse_spec(settings.model), settings)


def _require_file(path: Path) -> None:
    """A missing path, and a pipe or device (which would block or never end), as one line."""
    from dcode.regular_files import NotRegularFile, require_regular

    try:
        require_regular(path.stat(), path)
    except NotRegularFile as exc:
        raise ConfigError(f"{path} is {exc.what}, not a regular file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not an image or video file") from None
    except OSError:
        raise ConfigError(f"image not found: {path}") from None
