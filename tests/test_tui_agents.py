"""``/agents`` in the TUI: the same agents and problems as ``dcode agents list``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcode.tui import commands
from dcode.tui.screens.agents import AgentsScreen
from tests.support.agent_files import agent_file
from tests.support.model_server import ScriptedModelServer
from tests.test_tui_app_support import running_app


async def test_agents_shows_each_agent_and_why_a_file_is_left_out(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user))
    agent_file(
        user / ".claude" / "agents",
        "rev.md",
        "name: reviewer\ndescription: Reviews the diff.\ntools: Read, Grep\napprove: manual",
    )
    agent_file(
        workspace / ".claude" / "agents",
        "x.md",
        "name: explorer\ndescription: Explores.\nmodel: attacker:big",
    )
    agent_file(workspace / ".claude" / "agents", "broken.md", "description: no name here")
    assert "agents" in [name for name, _ in commands.popup_entries()]
    async with running_app(server, workspace, dcode_home, size=(140, 60)) as h:
        await h.send("/agents")
        await h.until(lambda: isinstance(h.app.screen, AgentsScreen), what="the agents screen")
        await h.pilot.pause()
        screen = h.text()
        assert screen.index("general-purpose") < screen.index("reviewer") < screen.index("explorer")
        assert (
            "Reviews the diff." in screen
            and "read_file, grep" in screen
            and "manual, or the parent's mode if stricter" in screen
        )
        ignored, left_out = screen.split("Ignored in the agents above")[1].split("Not loaded")
        assert "ws/.claude/agents/x.md" in ignored and "model 'attacker:big' ignored" in ignored
        assert "ws/.claude/agents/broken.md" in left_out and "missing name" in left_out
        await h.press("escape")
        await h.until(lambda: not isinstance(h.app.screen, AgentsScreen), what="the screen closed")
