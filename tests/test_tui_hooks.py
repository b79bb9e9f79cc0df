"""Hooks in the TUI (real engine, scripted server, real hook commands): ``/hooks`` lists each
with its source and last result; ``SessionStart`` says ``startup``, then ``clear`` after
``/clear``, and the old session's ``SessionEnd`` says ``clear``; an approval that waits fires
``Notification``."""

from __future__ import annotations

import json
from pathlib import Path

from dcode.settings.hook_sources import HookCommand
from dcode.tui.transcript import NoticeEntry
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import Harness, make_settings, running_app


def notices(h: Harness) -> list[str]:
    return [entry.text for entry in h.entries(NoticeEntry)]


def logged(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_hooks_listing_session_events_and_notification(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, tmp_path: Path
) -> None:
    log = tmp_path / "events.jsonl"
    record = f"(cat; echo) >> {log}"
    hooks = tuple(
        HookCommand(event, "", record, 10.0, "/home/me/.claude/settings.json")
        for event in ("SessionStart", "SessionEnd", "Notification")
    )
    settings = make_settings(dcode_home, workspace, server, hooks=hooks)
    steps = (
        reply("hello"),
        reply(tool_calls=[tool_call("execute", {"command": "echo hi"})]),
        reply("ran"),
    )
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("first")
        await h.idle()
        await h.send("/hooks")
        await h.until(
            lambda: any("SessionStart: " in text for text in notices(h)), what="the listing"
        )
        listing = notices(h)[-1]
        assert "from /home/me/.claude/settings.json" in listing
        assert "SessionStart: exit 0" in listing and "Notification" in listing
        await h.send("/clear")
        await h.until(lambda: any(e["hook_event_name"] == "SessionEnd" for e in logged(log)))
        await h.send("second")
        await h.approval()
        await h.until(lambda: any(e["hook_event_name"] == "Notification" for e in logged(log)))
        await h.press("y")
        await h.idle()
    events = logged(log)
    starts = [e["source"] for e in events if e["hook_event_name"] == "SessionStart"]
    assert starts == ["startup", "clear"]
    ends = [e["reason"] for e in events if e["hook_event_name"] == "SessionEnd"]
    assert ends[0] == "clear"
    note = next(e for e in events if e["hook_event_name"] == "Notification")
    assert note["notification_type"] == "permission_prompt"
    assert "execute" in str(note["message"])
