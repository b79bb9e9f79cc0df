"""What a run of dcode was asked for: its prompt and output format, and the session it goes on
with. Both front ends read it: ``-p`` (``headless``) for a whole run, the TUI for the session
it opens, so it lives apart from either.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from dcode.agent.attached_files import AttachedFile
from dcode.settings.config import ConfigError, Settings


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    STREAM_JSON = "stream-json"


@dataclass(frozen=True, slots=True)
class HeadlessRequest:
    prompt: str
    output_format: OutputFormat = OutputFormat.TEXT
    resume_id: str | None = None
    resume_latest: bool = False
    continue_here: bool = False
    content: list[dict[str, object]] | None = None
    attached: tuple[AttachedFile, ...] = ()
    """The files ``content`` attaches with ``@path`` (``dcode.agent.attached_files``)."""
    server: str = ""
    """A dcode server's address (``--server``, ``DCODE_SERVER``): the turn runs there."""
    server_context: tuple[tuple[str, str], ...] = ()
    """What the run's context asks of the server (the model flags given), as pairs."""
    detach: bool = False
    """Start the run on the server in the background, print its session and leave."""


def pick_session(settings: Settings, request: HeadlessRequest) -> str | None:
    """The session to continue, or None for a new one; raises ConfigError for a bad id."""
    from dcode.agent.store import open_store

    store = open_store(settings)
    if request.resume_id:
        info = store.get(request.resume_id)
        if info is None:
            raise ConfigError(f"no session {request.resume_id!r}: see `dcode sessions list`")
        return info.id
    if request.resume_latest or request.continue_here:
        info = store.latest(cwd=settings.workspace if request.continue_here else None)
        if info is None:
            where = " in this directory" if request.continue_here else ""
            raise ConfigError(f"no previous session{where} to continue")
        return info.id
    return None


def session_model(settings: Settings, session_id: str | None, model_given: bool) -> Settings:
    """A resumed session keeps its model unless the user names another one."""
    from dataclasses import replace

    from dcode.agent.store import open_store

    if session_id is None or model_given:
        return settings
    info = open_store(settings).get(session_id)
    return replace(settings, model=info.model) if info and info.model else settings
