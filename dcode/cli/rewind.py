"""``dcode sessions rewind ID [N]``: a session's prompts, or the session taken back to before one.

Listing reads the session store only. Rewinding opens the engine (the conversation is a new head
of the session's LangGraph thread) and holds the session as any dcode would: one that another
dcode has open is refused.
"""

from __future__ import annotations

import asyncio

from dcode.agent.frontmatter import cut
from dcode.agent.store import open_store
from dcode.agent.store.base import SessionInfo, Turn
from dcode.cli.sessions import age
from dcode.settings.config import ConfigError, Settings

PROMPT_WIDTH = 70
NO_MODEL = "ollama:none"


def find_session(settings: Settings, session_id: str) -> SessionInfo:
    info = open_store(settings, read_only=True).get(session_id)
    if info is None:
        raise ConfigError(f"no session {session_id!r}: see `dcode sessions list`")
    return info


def turns_table(settings: Settings, info: SessionInfo) -> str:
    turns = open_store(settings, read_only=True).turns(info.id)
    if not turns:
        return f"Session {info.id} has no prompts to go back to."
    lines = [f"{'#':>3}  {'WHEN':<9}  {'FILES':>5}  PROMPT"]
    for turn in turns:
        lines.append(
            f"{turn.number:>3}  {age(turn.started):<9}  {turn.files_changed:>5}  {cut(turn.prompt, PROMPT_WIDTH)}"
        )
    lines.append("")
    lines.append(
        f"FILES: files dcode's file tools changed from that prompt on. `dcode sessions rewind {info.id} N` goes back to before prompt N."
    )
    return "\n".join(lines)


def pick_turn(turns: list[Turn], number: int) -> Turn:
    for turn in turns:
        if turn.number == number:
            return turn
    raise ConfigError(
        f"there is no prompt {number}: the session has {len(turns)} (`dcode sessions rewind ID` lists them)"
    )


def rewind(
    settings: Settings, info: SessionInfo, number: int, *, conversation: bool, code: bool
) -> list[str]:
    """Rewind and say what was done, a line each (raises ``ConfigError``, ``SessionHeld``,
    ``RewindError`` with the line to show)."""
    return asyncio.run(_rewind(settings, info, number, conversation=conversation, code=code))


async def _rewind(
    settings: Settings, info: SessionInfo, number: int, *, conversation: bool, code: bool
) -> list[str]:
    from dataclasses import replace

    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.models.factory import resolve_model
    from dcode.models.spec import ModelSpecError

    try:
        resolved = resolve_model(settings)
    except ModelSpecError:  # no key for it here: a rewind never calls the model, any route will do
        resolved = resolve_model(replace(settings, model=NO_MODEL, base_url=None))
    async with await Engine.open(settings, resolved) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=info.id)
        turn = pick_turn(await runner.turns(), number)
        outcome = await runner.rewind(turn, conversation=conversation, code=code)
        lines = outcome.lines(engine.backend.display_path)
        if conversation:
            lines.append(f"the prompt was: {cut(turn.prompt, 200)}")
        return lines
