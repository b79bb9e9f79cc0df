"""Slash commands: one registry for the input popup, the palette and /help; busy rules; first run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import OptionList

from dcode.agent.sessions import SessionStore
from dcode.config import ProviderOverride, read_preferences
from dcode.tui import commands
from dcode.tui.commands import SlashCommandProvider, UnknownCommand, parse
from dcode.tui.screens.first_run import FirstRunScreen
from dcode.tui.screens.help import HelpScreen
from dcode.tui.screens.model import CURRENT_MARK, ModelScreen
from dcode.tui.screens.theme import ThemeScreen
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import make_settings, running_app


def test_parse_commands_and_not_paths() -> None:
    invocation = parse("/model deepseek:deepseek-chat")
    assert invocation is not None and invocation.command.name == "model" and invocation.args == "deepseek:deepseek-chat"
    assert parse("/exit") is not None and parse("/exit").command.name == "quit"  # type: ignore[union-attr]
    assert parse("hello /model") is None
    assert parse("/usr/bin/env python") is None
    assert parse("//not a command") is None
    with pytest.raises(UnknownCommand):
        parse("/frobnicate")


def test_one_registry_feeds_popup_and_help() -> None:
    names = [name for name, _ in commands.popup_entries()]
    assert names == [command.name for command in commands.COMMANDS]
    assert {"help", "clear", "resume", "model", "approve", "theme", "copy", "quit"} <= set(names)
    assert ("model [SPEC]", commands.BY_NAME["model"].description) in commands.help_entries()


async def test_help_writes_each_command_with_one_slash(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/help")
        await h.until(lambda: isinstance(h.app.screen, HelpScreen), what="help")
        await h.pilot.pause()
        screen = h.text()
        assert "/help " in screen and "/clear " in screen and "/model [SPEC] " in screen
        assert "//" not in screen


async def test_model_alone_picks_from_recent_configured_and_preset_models(server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # every openai: model reaches the server
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    store = SessionStore(dcode_home / "sessions.db")
    for session_id, model in (("a00000000001", "openai:recent-model"), ("a00000000002", "openai:test-model")):
        store.create(session_id, workspace, model)
    settings = replace(
        make_settings(dcode_home, workspace, server),
        base_url=None,
        model_overrides={"openai:configured-model": {"max_input_tokens": 64_000}, "*:qwen3*": {"max_input_tokens": 1}},
    )
    async with running_app(server, workspace, dcode_home, reply("from the recent model"), settings=settings) as h:
        await h.send("/model")
        await h.until(lambda: isinstance(h.app.screen, ModelScreen), what="the model picker")
        picker = h.app.screen
        assert isinstance(picker, ModelScreen)
        specs = [choice.spec for choice in picker.shown]
        assert len(specs) == len(set(specs))
        assert {"openai:recent-model", "openai:test-model", "openai:configured-model", "openai:gpt-5.1", "deepseek:deepseek-chat"} <= set(specs)
        assert not any("*" in spec for spec in specs)
        screen = h.text()
        assert f"{CURRENT_MARK} openai:test-model" in screen
        assert "recent" in screen and "preset" in screen
        deepseek = specs.index("deepseek:deepseek-chat")
        picker.query_one("#model-list", OptionList).highlighted = deepseek
        await h.pilot.pause()
        assert "no API key for deepseek" in h.text()  # says why a model would not work now
        await h.press(*"recent-model", "enter")
        await h.until(lambda: "switched to openai:recent-model" in h.text(), what="the switch")
        assert h.app.engine is not None and h.app.engine.resolved.spec == "openai:recent-model"
        await h.send("hello")
        await h.idle()
        assert h.server.requests[-1].model == "recent-model"


async def test_model_picker_leaves_a_provider_without_models_to_finish(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    settings = replace(make_settings(dcode_home, workspace, server), providers={"corp": ProviderOverride(base_url=server.base_url)})
    async with running_app(server, workspace, dcode_home, settings=settings) as h:
        await h.send("/model")
        await h.until(lambda: isinstance(h.app.screen, ModelScreen), what="the model picker")
        await h.press(*"corp", "enter")
        await h.until(lambda: h.app.prompt_input.text == "/model corp:", what="the prefilled command")
        assert h.app.engine is not None and h.app.engine.resolved.spec == "openai:test-model"


async def test_model_switch_keeps_the_conversation(server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The endpoint comes from the environment, so it holds for the new model too.
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    settings = replace(make_settings(dcode_home, workspace, server), base_url=None)
    async with running_app(server, workspace, dcode_home, reply("one"), reply("two"), settings=settings) as h:
        await h.send("first")
        await h.idle()
        await h.send("/model openai:other-model")
        await h.until(lambda: "switched to openai:other-model" in h.text(), what="the switch")
        assert "openai:other-model" in h.text().splitlines()[-1]
        await h.send("second")
        await h.idle()
        assert h.server.requests[0].model == "test-model"
        assert h.server.requests[1].model == "other-model"
        assert ("user", "first") in h.server.transcript(1) and ("assistant", "one") in h.server.transcript(1)


async def test_bad_model_spec_is_one_line(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/model nowhere:thing")
        await h.until(lambda: "unknown provider 'nowhere'" in h.text(), what="the error")
        assert h.app.engine is not None and h.app.engine.resolved.spec == "openai:test-model"


async def test_commands_wait_or_run_while_busy(server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = reply(" ".join(["word"] * 300), chunk_size=5, chunk_delay=0.01)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    settings = replace(make_settings(dcode_home, workspace, server), base_url=None)
    async with running_app(server, workspace, dcode_home, slow, reply("after"), settings=settings) as h:
        await h.send("go")
        await h.until(lambda: h.answers(), what="streaming")
        await h.send("/model openai:other-model")  # changes the thread's model: waits
        assert [item.text for item in h.app.queue] == ["/model openai:other-model"]
        await h.send("/approve all")  # safe: runs at once
        assert h.app.mode.value == "all"
        await h.send("/help")
        await h.until(lambda: isinstance(h.app.screen, HelpScreen), what="help")
        await h.press("escape")
        await h.idle(20)
        assert "switched to openai:other-model" in h.text()


async def test_unknown_command_is_a_warning(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/frobnicate now")
        await h.until(lambda: "unknown command /frobnicate" in h.text(), what="the warning")
        assert not h.server.requests


async def test_copy_copies_the_last_answer(server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyperclip

    def no_clipboard(text: str) -> None:
        raise pyperclip.PyperclipException("no clipboard here")

    monkeypatch.setattr(pyperclip, "copy", no_clipboard)
    async with running_app(server, workspace, dcode_home, reply("the **answer**")) as h:
        await h.send("q")
        await h.idle()
        await h.send("/copy")
        await h.until(lambda: h.app.clipboard == "the **answer**", what="OSC 52 fallback")


async def test_theme_choice_persists(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/theme")
        await h.until(lambda: isinstance(h.app.screen, ThemeScreen), what="the theme picker")
        h.app.screen.dismiss("gruvbox")
        h.app.theme = "gruvbox"
        await h.pilot.pause()
        assert read_preferences(h.settings)["theme"] == "gruvbox"
        # The command palette's own theme switch persists too.
        h.app.theme = "nord"
        await h.pilot.pause()
        assert read_preferences(h.settings)["theme"] == "nord"


async def test_palette_lists_the_slash_commands(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        provider = SlashCommandProvider(h.app.screen)
        hits = [hit async for hit in provider.search("approve edits")]
        assert hits and hits[0].text == "/approve edits"
        hits[0].command()
        await h.pilot.pause()
        assert h.app.mode.value == "edits"
        [model_hit] = [hit async for hit in provider.search("/model")]
        model_hit.command()
        await h.until(lambda: isinstance(h.app.screen, ModelScreen), what="the model picker")


async def test_first_run_screen_keeps_the_draft_then_retries(server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    broken = replace(make_settings(dcode_home, workspace, server), model="openai:gpt-5.1", base_url=None)
    from dcode.tui.launch import find_setup_problem

    problem = find_setup_problem(broken)
    assert problem and "OPENAI_API_KEY" in problem
    fixed = make_settings(dcode_home, workspace, server)
    async with running_app(server, workspace, dcode_home, reply("hello"), settings=broken, wait_ready=False,
                           setup_problem=problem, reload_settings=lambda: fixed) as h:
        await h.until(lambda: isinstance(h.app.screen, FirstRunScreen), what="the first-run screen")
        await h.press(*"hi ")
        await h.press("escape")
        await h.until(lambda: not isinstance(h.app.screen, FirstRunScreen))
        assert h.app.prompt_input.text == "hi "  # typed into the dialog, kept for the prompt
        await h.send("there")
        await h.until(lambda: isinstance(h.app.screen, FirstRunScreen), what="the screen again")
        assert [item.text for item in h.app.queue] == ["hi there"]
        await h.press("ctrl+r")
        await h.ready()
        await h.idle()
        assert h.answers() == ["hello"]


async def test_offload_compacts_the_conversation_and_it_goes_on(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    steps = (reply("one"), reply("two"), reply("SUMMARY of one and two."), reply("three"))
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("/offload")
        await h.until(lambda: "nothing to compact yet" in h.text(), what="the empty-session notice")
        for prompt in ("first", "second"):
            await h.send(prompt)
            await h.idle()
        await h.send("/offload")
        await h.until(lambda: "compacted 2 messages" in h.text(), what="the compaction")
        assert "compacting the conversation (asked for)" in h.text()
        await h.send("third")
        await h.idle()
        assert h.answers()[-1] == "three"
        sent = server.transcript(3)
        assert "SUMMARY of one and two." in sent[1][1] and ("user", "first") not in sent
