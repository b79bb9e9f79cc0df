"""The bell calls the user back when a turn ends or an approval waits while the terminal is not
in focus; never while it is, and never when ``bell = false``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual import events

from dcode.settings.config import ConfigError, load_settings
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import make_settings, running_app


async def rang(h, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    rings: list[str] = []
    monkeypatch.setattr(h.app, "bell", lambda: rings.append(h.app.status.activity or "idle"))
    return rings


async def test_a_turn_that_ends_away_rings_once(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = reply("a slow answer " * 20, chunk_size=10, chunk_delay=0.02)
    async with running_app(server, workspace, dcode_home, reply("here"), slow) as h:
        rings = await rang(h, monkeypatch)
        await h.send("in focus")
        await h.idle()
        assert rings == []
        await h.send("then I look away")  # a key press is the terminal in focus again
        h.app.post_message(events.AppBlur())
        await h.until(lambda: not h.app.app_focus, what="the terminal to lose focus")
        await h.idle()
        assert rings == ["idle"]


async def test_an_approval_waiting_away_rings(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = (
        reply(tool_calls=[tool_call("write_file", {"file_path": "a.txt", "content": "x\n"})]),
        reply("done"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        rings = await rang(h, monkeypatch)
        await h.send("write a.txt")
        h.app.post_message(events.AppBlur())
        await h.until(lambda: not h.app.app_focus, what="the terminal to lose focus")
        await h.approval()
        assert rings == ["Waiting for approval"]
        await h.press("y")  # answering is being back: the turn's end does not ring again
        await h.idle()
        assert rings == ["Waiting for approval"] and h.app.app_focus


async def test_bell_false_keeps_quiet(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = replace(make_settings(dcode_home, workspace, server), bell=False)
    slow = reply("a slow answer " * 20, chunk_size=10, chunk_delay=0.02)
    async with running_app(server, workspace, dcode_home, slow, settings=settings) as h:
        rings = await rang(h, monkeypatch)
        await h.send("then I look away")
        h.app.post_message(events.AppBlur())
        await h.until(lambda: not h.app.app_focus, what="the terminal to lose focus")
        await h.idle()
        assert rings == []


def test_bell_is_a_boolean_in_the_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("bell = false\n")
    assert load_settings(workspace=tmp_path, env={"DCODE_HOME": str(home)}).bell is False
    (home / "config.toml").write_text('bell = "loud"\n')
    with pytest.raises(ConfigError, match=r"bell = 'loud' is not valid .*expected true or false"):
        load_settings(workspace=tmp_path, env={"DCODE_HOME": str(home)})
