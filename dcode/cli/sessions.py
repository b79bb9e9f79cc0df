"""Text output for ``dcode sessions list|show``."""

from __future__ import annotations

import asyncio
import json
import time
from typing import IO

from dcode.agent.attached_files import ATTACHMENT_MARK
from dcode.agent.budget import usage_lines
from dcode.agent.events import (
    AssistantMessageFinished,
    Event,
    ShellCommandRan,
    SubagentFinished,
    SubagentStarted,
    ToolCallFinished,
    ToolCallRunning,
    ToolResult,
    ToolStatus,
    UserMessage,
)
from dcode.agent.store import open_store
from dcode.agent.store.base import SessionInfo
from dcode.settings.config import ConfigError, Settings


def age(timestamp: float, now: float | None = None) -> str:
    seconds = max(0, int((now or time.time()) - timestamp))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def list_sessions(settings: Settings, *, here: bool = False, limit: int = 50) -> str:
    rows = open_store(settings).list(cwd=settings.workspace if here else None, limit=limit)
    if not rows:
        return "No sessions yet."
    # The ids as they are, whole (a served session's is the server's 36-character thread id):
    # the column is as wide as the longest, as ``-r`` and ``sessions show`` take them.
    width = max(12, *(len(row.id) for row in rows))
    lines = [f"{'ID':<{width}}  {'UPDATED':<9}  {'MSGS':>4}  {'MODEL':<24}  TITLE / CWD"]
    for row in rows:
        lines.append(
            f"{row.id:<{width}}  {age(row.updated):<9}  {row.message_count:>4}  {row.model[:24]:<24}  "
            f"{row.title or '(untitled)'}  [{row.cwd}]"
        )
    return "\n".join(lines)


def show_session(settings: Settings, session_id: str, *, usage: bool = False) -> str:
    """A session's details and its transcript, read without writing to the database;
    ``usage``: its spend by model and by agent instead of the transcript (what ``/cost``
    shows)."""
    store = open_store(settings, read_only=True)
    info = store.get(session_id)
    if info is None:
        raise ConfigError(f"no session {session_id!r}: see `dcode sessions list`")
    if usage:
        return "\n".join([*_header(info), "", *usage_lines(store.usage(info.id))])
    return "\n".join([*_header(info), "", *_transcript(settings, info.id)])


def _header(info: SessionInfo) -> list[str]:
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created))
    return [
        f"session  {info.id}",
        f"title    {info.title or '(untitled)'}",
        f"cwd      {info.cwd}",
        f"model    {info.model}",
        f"created  {created} ({age(info.created)})",
        f"updated  {age(info.updated)}",
        f"messages {info.message_count}",
        f"tokens   {info.input_tokens} in / {info.output_tokens} out",
    ]


def _transcript(settings: Settings, session_id: str) -> list[str]:
    """The saved thread replayed as events, one line (or block) for each: no graph or model is
    needed to show a transcript. A ``task`` call's subagent shows under the call, indented,
    its lines marked with its path."""
    from dcode.agent.saved_thread import replay, thread_reader

    store = open_store(settings, read_only=True)
    saved = store.read_thread(session_id, strict=True)
    if saved is None or not saved.messages:
        return ["(no messages)"]
    lines: list[str] = []
    for event in replay(saved.messages, thread_id=session_id, read_thread=thread_reader(store)):
        text = event_text(event)
        if text is None:
            continue
        if not event.agent:
            lines.append(text)
            continue
        depth = "    " * (len(event.agent) - 1)
        mark = (
            "┌"
            if isinstance(event, SubagentStarted)
            else "└"
            if isinstance(event, SubagentFinished)
            else "│"
        )
        rows = text.split("\n")
        lines.append(f"{depth}  {mark} {rows[0]}")
        lines.extend(f"{depth}  │ {row}" for row in rows[1:])
    return lines


def event_text(event: Event) -> str | None:
    """One event as ``sessions show`` prints it; None for those it leaves out."""
    from dcode.media.frames import compact_line

    who = "/".join(event.agent)
    match event:
        case UserMessage(text=text, videos=videos, files=files):
            attached = [f"      {ATTACHMENT_MARK} {line}" for line in files]
            return "\n".join(
                [
                    f"[you] {text.strip()}",
                    *attached,
                    *(f"      [video] {compact_line(strip)}" for strip in videos),
                ]
            )
        case ShellCommandRan(command=command, exit_code=exit_code):
            return f"[you] !{command} (exit code {exit_code})"
        case AssistantMessageFinished(text=text, interrupted=interrupted) if text.strip():
            return f"[{who or 'dcode'}] {text.strip()}" + (" (interrupted)" if interrupted else "")
        case ToolCallRunning(name=name, args=args):
            return f"→ {name}({_short(args)})"
        case ToolCallFinished(result=ToolResult(status=ToolStatus.OK, frames=frames)) if (
            frames is not None
        ):
            return f"[tool] [video] {compact_line(frames)}"
        case ToolCallFinished(result=ToolResult(status=status, preview=preview)):
            mark = (
                "" if status is ToolStatus.OK or preview.startswith(f"{status}:") else f"{status}: "
            )
            indent = "\n" if event.agent else "\n       "
            return f"[tool] {mark}{preview}".replace("\n", indent)
        case SubagentStarted(agent_type=agent_type, description=description):
            return f"[{who} · {agent_type}] {description.strip()}"
        case SubagentFinished(
            status=status,
            num_turns=turns,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            error=error,
        ):
            outcome = str(status) if status is ToolStatus.OK or not error else f"{status}: {error}"
            return f"[{who}] {outcome} · {turns} turns · {tokens_in} in / {tokens_out} out"
    return None


def _short(args: dict) -> str:
    text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= 120 else text[:119] + "…"


def export_sessions(settings: Settings, prefixes: list[str], out: IO[str]) -> list[str]:
    """Write the sessions named by id or unique prefix (all without any) to ``out``; the notes
    to show on stderr. An unknown id is a ``ConfigError`` before anything is written."""
    from dcode.agent.store.transfer import ALL_SESSIONS
    from dcode.agent.store.transfer import export_sessions as export

    store = open_store(settings, read_only=True)
    try:
        ids = []
        for prefix in prefixes:
            info = store.get(prefix)
            if info is None:
                raise ConfigError(f"no session {prefix!r} (or more than one starts so)")
            ids.append(info.id)
        if not prefixes:
            ids = [info.id for info in reversed(store.list(limit=ALL_SESSIONS))]
        return asyncio.run(export(store, list(dict.fromkeys(ids)), out))
    finally:
        store.close()


def import_sessions(settings: Settings, source: IO[bytes], *, replace: bool) -> list[str]:
    """Import an export (a seekable binary file); one line a session."""
    from dcode.agent.store.transfer import import_sessions as load

    store = open_store(settings)
    try:
        return asyncio.run(load(store, source, replace=replace))
    finally:
        store.close()
