"""Turning a resumed thread's messages into transcript entries.

Only data is built here; the transcript mounts the last window of it. Messages are read by
their ``type`` tag, so this module needs nothing from langchain at import time.
"""

from __future__ import annotations

import json
from typing import Any

from dcode.agent.events import ToolStatus
from dcode.agent.tools.diffs import recorded_diff
from dcode.tui.transcript.entries import AssistantEntry, Entry, ToolCallEntry, ToolGroupEntry, UserEntry

DENIED_MARKER = "dcode_denied"
CANCELLED_MARKER = "dcode_cancelled"


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind in {"text", "output_text"}:
                parts.append(str(block.get("text", "")))
            elif kind in {"image", "image_url", "input_image"}:
                parts.append("[image]")
            elif kind in {"video", "audio", "file"}:
                parts.append(f"[{kind}]")
    return "".join(parts)


def _reasoning(message: Any) -> str:
    extra = getattr(message, "additional_kwargs", {}) or {}
    if isinstance(extra.get("reasoning_content"), str):
        return extra["reasoning_content"]
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "reasoning":
            if isinstance(block.get("reasoning"), str):
                parts.append(block["reasoning"])
            for item in block.get("summary") or []:
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    parts.append(item["text"])
    return "".join(parts)


def _summary(name: str, args: dict[str, Any]) -> str:
    try:
        from dcode.agent.tools.summary import summarize_call
    except ImportError:
        pass
    else:
        try:
            return summarize_call(name, args)
        except Exception:  # noqa: BLE001 - a summary is cosmetic
            pass
    for key in ("file_path", "path", "command", "pattern"):
        if key in args:
            return str(args[key]).splitlines()[0][:120]
    return json.dumps(args, ensure_ascii=False)[:120]


def _preview(text: str) -> str:
    try:
        from dcode.agent.tools.summary import preview_result
    except ImportError:
        return "\n".join(text.splitlines()[:3])
    try:
        return preview_result(text)
    except Exception:  # noqa: BLE001 - a preview is cosmetic
        return "\n".join(text.splitlines()[:3])


def entries_from_messages(messages: list[Any]) -> list[Entry]:
    entries: list[Entry] = []
    calls: dict[str, ToolCallEntry] = {}
    for message in messages:
        kind = getattr(message, "type", "")
        extra = getattr(message, "additional_kwargs", {}) or {}
        match kind:
            case "human":
                entries.append(UserEntry(text=content_text(message.content)))
            case "ai":
                text = content_text(message.content)
                reasoning = _reasoning(message)
                if text.strip() or reasoning.strip():
                    entries.append(AssistantEntry(text=text, reasoning=reasoning, interrupted=bool(extra.get(CANCELLED_MARKER))))
                tool_calls = list(getattr(message, "tool_calls", []) or [])
                if tool_calls:
                    group = ToolGroupEntry(open=False)
                    for item in tool_calls:
                        args = dict(item.get("args") or {})
                        call = ToolCallEntry(call_id=item.get("id") or "", name=item.get("name") or "", args=args, summary=_summary(item.get("name") or "", args))
                        calls[call.call_id] = call
                        group.calls.append(call)
                    entries.append(group)
            case "tool":
                found = calls.get(getattr(message, "tool_call_id", ""))
                if found is None:
                    continue
                text = content_text(message.content)
                if extra.get(DENIED_MARKER):
                    found.status = ToolStatus.DENIED
                elif extra.get(CANCELLED_MARKER):
                    found.status = ToolStatus.CANCELLED
                elif getattr(message, "status", "success") == "error":
                    found.status = ToolStatus.ERROR
                else:
                    found.status = ToolStatus.OK
                found.output = text
                found.preview = _preview(text)
                found.diff = recorded_diff(getattr(message, "artifact", None))
    for call in calls.values():
        if call.status is None:
            call.status = ToolStatus.CANCELLED
            call.preview = "no result"
    return entries
