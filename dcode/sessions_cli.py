"""Text output for ``dcode sessions list|show``."""

from __future__ import annotations

import time

from dcode.agent.sessions import SessionInfo, SessionStore, database_errors
from dcode.config import ConfigError, Settings


def age(timestamp: float, now: float | None = None) -> str:
    seconds = max(0, int((now or time.time()) - timestamp))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def list_sessions(settings: Settings, *, here: bool = False, limit: int = 50) -> str:
    rows = SessionStore(settings.sessions_db).list(cwd=settings.workspace if here else None, limit=limit)
    if not rows:
        return "No sessions yet."
    lines = [f"{'ID':<12}  {'UPDATED':<9}  {'MSGS':>4}  {'MODEL':<24}  TITLE / CWD"]
    for row in rows:
        lines.append(
            f"{row.id:<12}  {age(row.updated):<9}  {row.message_count:>4}  {row.model[:24]:<24}  "
            f"{row.title or '(untitled)'}  [{row.cwd}]"
        )
    return "\n".join(lines)


def show_session(settings: Settings, session_id: str) -> str:
    info = SessionStore(settings.sessions_db).get(session_id)
    if info is None:
        raise ConfigError(f"no session {session_id!r}: see `dcode sessions list`")
    with database_errors(settings.sessions_db):
        transcript = _transcript(settings, info.id)
    return "\n".join([*_header(info), "", *transcript])


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
    """Read the latest checkpoint directly; no graph or model is needed to show a transcript."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    import sqlite3

    from dcode.agent.stream import message_text

    conn = sqlite3.connect(settings.sessions_db)
    try:
        saver = SqliteSaver(conn)
        saved = saver.get_tuple({"configurable": {"thread_id": session_id}})
    finally:
        conn.close()
    if saved is None:
        return ["(no messages)"]
    lines: list[str] = []
    for message in saved.checkpoint["channel_values"].get("messages", []):
        role = {"human": "you", "ai": "dcode", "tool": "tool"}.get(message.type, message.type)
        text = message_text(message).strip()
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            text = (text + "\n" if text else "") + "\n".join(f"→ {c['name']}({_short(c['args'])})" for c in calls)
        lines.append(f"[{role}] {text}")
    return lines


def _short(args: dict) -> str:
    import json

    text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= 120 else text[:119] + "…"
