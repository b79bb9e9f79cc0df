"""Slash commands: one registry for the input popup, the palette and /help; busy rules; first run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import OptionList, TextArea

from dcode.agent.store.sqlite import SqliteStore
from dcode.settings.config import ProviderOverride, read_preferences
from dcode.tui import commands
from dcode.tui.commands import SlashCommandProvider, UnknownCommand, parse
from dcode.tui.screens.file_view import FileViewScreen
from dcode.tui.screens.first_run import FirstRunScreen
from dcode.tui.screens.help import HelpScreen
from dcode.tui.screens.model import CURRENT_MARK, ModelScreen
from dcode.tui.screens.theme import ThemeScreen
from dcode.tui.transcript import NoticeEntry, NoticeLevel
from tests.support.model_server import ScriptedModelServer, fault, reply
from tests.test_tui_app_support import make_settings, running_app


def test_parse_commands_and_not_paths() -> None:
    invocation = parse("/model deepseek:deepseek-chat")
    assert (
        invocation is not None
        and invocation.command.name == "model"
        and invocation.args == "deepseek:deepseek-chat"
    )
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


async def test_help_writes_each_command_with_one_slash(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/help")
        await h.until(lambda: isinstance(h.app.screen, HelpScreen), what="help")
        await h.pilot.pause()
        screen = h.text()
        assert "/help " in screen and "/clear " in screen and "/model [SPEC] " in screen
        assert "//" not in screen


async def test_model_alone_picks_from_recent_configured_and_preset_models(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # every openai: model reaches the server
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    store = SqliteStore(dcode_home / "sessions.db", dcode_home)
    for session_id, model in (
        ("a00000000001", "openai:recent-model"),
        ("a00000000002", "openai:test-model"),
    ):
        store.create(session_id, workspace, model)
    settings = replace(
        make_settings(dcode_home, workspace, server),
        base_url=None,
        model_overrides={
            "openai:configured-model": {"max_input_tokens": 64_000},
            "*:qwen3*": {"max_input_tokens": 1},
        },
    )
    async with running_app(
        server, workspace, dcode_home, reply("from the recent model"), settings=settings
    ) as h:
        await h.send("/model")
        await h.until(lambda: isinstance(h.app.screen, ModelScreen), what="the model picker")
        picker = h.app.screen
        assert isinstance(picker, ModelScreen)
        specs = [choice.spec for choice in picker.shown]
        assert len(specs) == len(set(specs))
        assert {
            "openai:recent-model",
            "openai:test-model",
            "openai:configured-model",
            "openai:gpt-5.1",
            "deepseek:deepseek-chat",
        } <= set(specs)
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


async def test_model_picker_leaves_a_provider_without_models_to_finish(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    settings = replace(
        make_settings(dcode_home, workspace, server),
        providers={"corp": ProviderOverride(base_url=server.base_url)},
    )
    async with running_app(server, workspace, dcode_home, settings=settings) as h:
        await h.send("/model")
        await h.until(lambda: isinstance(h.app.screen, ModelScreen), what="the model picker")
        await h.press(*"corp", "enter")
        await h.until(
            lambda: h.app.prompt_input.text == "/model corp:", what="the prefilled command"
        )
        assert h.app.engine is not None and h.app.engine.resolved.spec == "openai:test-model"


async def test_model_switch_keeps_the_conversation(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The endpoint comes from the environment, so it holds for the new model too.
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    settings = replace(make_settings(dcode_home, workspace, server), base_url=None)
    async with running_app(
        server, workspace, dcode_home, reply("one"), reply("two"), settings=settings
    ) as h:
        await h.send("first")
        await h.idle()
        await h.send("/model openai:other-model")
        await h.until(lambda: "switched to openai:other-model" in h.text(), what="the switch")
        assert "openai:other-model" in h.text().splitlines()[-1]
        await h.send("second")
        await h.idle()
        assert h.server.requests[0].model == "test-model"
        assert h.server.requests[1].model == "other-model"
        assert ("user", "first") in h.server.transcript(1) and (
            "assistant",
            "one",
        ) in h.server.transcript(1)


async def test_bad_model_spec_is_one_line(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/model nowhere:thing")
        await h.until(lambda: "unknown provider 'nowhere'" in h.text(), what="the error")
        assert h.app.engine is not None and h.app.engine.resolved.spec == "openai:test-model"


async def test_commands_wait_or_run_while_busy(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = reply(" ".join(["word"] * 300), chunk_size=5, chunk_delay=0.01)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    settings = replace(make_settings(dcode_home, workspace, server), base_url=None)
    async with running_app(
        server, workspace, dcode_home, slow, reply("after"), settings=settings
    ) as h:
        await h.send("go")
        await h.until(lambda: h.answers(), what="streaming")
        await h.send("/model openai:other-model")  # changes the thread's model: waits
        assert [item.text for item in h.app.session.queue] == ["/model openai:other-model"]
        await h.send("/approve all")  # safe: runs at once
        assert h.app.mode.value == "all"
        await h.send("/help")
        await h.until(lambda: isinstance(h.app.screen, HelpScreen), what="help")
        await h.press("escape")
        await h.idle(20)
        assert "switched to openai:other-model" in h.text()


async def test_unknown_command_is_a_warning(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/frobnicate now")
        await h.until(lambda: "unknown command /frobnicate" in h.text(), what="the warning")
        assert not h.server.requests


async def test_copy_copies_the_last_answer(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyperclip

    def no_clipboard(text: str) -> None:
        raise pyperclip.PyperclipException("no clipboard here")

    monkeypatch.setattr(pyperclip, "copy", no_clipboard)
    async with running_app(server, workspace, dcode_home, reply("the **answer**")) as h:
        await h.send("q")
        await h.idle()
        await h.send("/copy")
        await h.until(lambda: h.app.clipboard == "the **answer**", what="OSC 52 fallback")


async def test_theme_choice_persists(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
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


async def test_palette_lists_the_slash_commands(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
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


async def test_first_run_screen_keeps_the_draft_then_retries(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    broken = replace(
        make_settings(dcode_home, workspace, server), model="openai:gpt-5.1", base_url=None
    )
    from dcode.tui.setup_problem import find_setup_problem

    problem = find_setup_problem(broken)
    assert problem and "OPENAI_API_KEY" in problem
    fixed = make_settings(dcode_home, workspace, server)
    resolved = [broken]  # what the config and the environment say when asked again
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply("hello"),
        settings=broken,
        wait_ready=False,
        setup_problem=problem,
        reload_settings=lambda: resolved[-1],
    ) as h:
        await h.until(lambda: isinstance(h.app.screen, FirstRunScreen), what="the first-run screen")
        await h.press(*"hi ")
        await h.press("escape")
        await h.until(lambda: not isinstance(h.app.screen, FirstRunScreen))
        assert h.app.prompt_input.text == "hi "  # typed into the dialog, kept for the prompt
        await h.send("there")  # still no key: the screen says so again
        await h.until(lambda: isinstance(h.app.screen, FirstRunScreen), what="the screen again")
        assert [item.text for item in h.app.session.queue] == ["hi there"]
        await h.press("escape")
        await h.until(lambda: not isinstance(h.app.screen, FirstRunScreen))
        resolved.append(fixed)  # the user set the model up meanwhile: sending tries again
        await h.send("again")
        await h.ready()
        await h.idle()
        assert h.answers()[-1] == "hello" and not isinstance(h.app.screen, FirstRunScreen)


async def test_without_a_model_the_problem_is_said_once_and_the_input_does_not_say_working(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dcode.tui.widgets.prompt_input import BUSY_PLACEHOLDER, NO_MODEL_PLACEHOLDER

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    broken = replace(
        make_settings(dcode_home, workspace, server), model="openai:gpt-5.1", base_url=None
    )
    from dcode.tui.setup_problem import find_setup_problem

    problem = find_setup_problem(broken)
    async with running_app(
        server,
        workspace,
        dcode_home,
        settings=broken,
        wait_ready=False,
        setup_problem=problem,
        reload_settings=lambda: broken,
    ) as h:
        for _ in range(3):  # closed, a prompt sent (the screen again), closed again...
            await h.until(
                lambda: isinstance(h.app.screen, FirstRunScreen), what="the first-run screen"
            )
            await h.press("escape")
            await h.until(lambda: not isinstance(h.app.screen, FirstRunScreen))
            await h.pilot.pause(0.1)
            screen = h.text()
            assert screen.count("no API key for openai") == 1, (
                screen
            )  # one line, not one more each time
            assert (
                "No model" in screen and "Working" not in screen and BUSY_PLACEHOLDER not in screen
            )
            assert NO_MODEL_PLACEHOLDER.split("   ")[0] in screen and not h.app.prompt_input.busy
            await h.send("hello")
        await h.until(lambda: isinstance(h.app.screen, FirstRunScreen), what="the first-run screen")


ONE = "The first answer, with the detail the summary will drop. " * 20
TWO = "The second answer. " * 10


def notices(h) -> list[NoticeEntry]:  # the Harness
    return h.entries(NoticeEntry)


async def test_offload_says_what_it_did_and_opens_the_archive(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (reply(ONE), reply(TWO), reply("SUMMARY of one and two."), reply("three"))
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("/offload")
        await h.until(lambda: "nothing to compact yet" in h.text(), what="the empty-session notice")
        for prompt in ("first", "second"):
            await h.send(prompt)
            await h.idle()
        reported = h.app.status.context_tokens
        assert reported > 0 and not h.app.status.estimated
        await h.send("/offload")
        await h.until(lambda: any(n.path for n in notices(h)), what="the compaction")
        assert any(n.text == "compacting the conversation (asked for)…" for n in notices(h))
        # The status bar shows the smaller size at once (estimated: no request has said it yet).
        await h.until(lambda: h.app.status.estimated, what="the new size in the status bar")
        assert 0 < h.app.status.context_tokens < reported and "Context ~" in h.text()
        [done] = [n for n in notices(h) if n.path]
        archive = dcode_home / "conversation_history" / f"{h.app.runner.session_id}.md"
        assert done.path == str(archive) and archive.is_file()
        assert done.text.startswith("summarized 2 messages: history ") and done.text.endswith(
            "tokens; kept the last 2 messages verbatim"
        )
        before, after = (
            int(figure.replace(",", ""))
            for figure in done.text.split(": history ")[1].split(" tokens")[0].split(" → ")
        )
        assert 0 < after < before
        await h.until(
            lambda: str(archive) in "".join(h.text().split()), what="the archive on the line"
        )

        await h.pilot.click(done.view)  # the archive opens, read-only
        await h.until(lambda: isinstance(h.app.screen, FileViewScreen), what="the archive's viewer")
        shown = h.app.screen.query_one("#file-view-text", TextArea)
        await h.until(lambda: shown.text, what="the archive's text")
        assert shown.read_only and shown.text == archive.read_text() and ONE in shown.text
        await h.press("escape")
        await h.until(
            lambda: not isinstance(h.app.screen, FileViewScreen), what="the viewer to close"
        )

        await h.send("third")
        await h.idle()
        assert h.answers()[-1] == "three"
        sent = server.transcript(3)
        assert "SUMMARY of one and two." in sent[1][1] and ("user", "first") not in sent


async def test_compact_with_a_focus_tells_the_summarizer_what_to_keep(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (reply(ONE), reply(TWO), reply("SUMMARY, schema first."))
    async with running_app(server, workspace, dcode_home, *steps) as h:
        for prompt in ("first", "second"):
            await h.send(prompt)
            await h.idle()
        await h.send("/compact   the database   schema")  # /compact is /offload
        await h.until(lambda: any(n.path for n in notices(h)), what="the compaction")
    system = next(text for role, text in server.transcript(2) if role == "system")
    assert system.endswith(
        "The user asked for this summary to focus on: the database schema\nKeep what bears on that in full detail, and the rest brief."
    )


async def test_offload_that_would_not_shrink_the_request_is_refused(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server, workspace, dcode_home, reply("one"), reply("two"), reply("three")
    ) as h:
        for prompt in ("first", "second"):
            await h.send(prompt)
            await h.idle()
        await h.send("/offload")
        await h.until(lambda: "not compacted" in h.text(), what="the refusal")
        [refused] = [n for n in notices(h) if n.text.startswith("not compacted")]
        assert (
            refused.level is NoticeLevel.WARNING
            and "would take the history from " in refused.text
            and "unchanged" in refused.text
        )
        await h.send("third")
        await h.idle()
        assert [text for _, text in server.transcript(2)[1:]] == [
            "first",
            "one",
            "second",
            "two",
            "third",
        ]
        assert not (dcode_home / "conversation_history").exists()


async def test_offload_during_a_turn_waits_for_it_and_holds_the_session(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    slow = reply(TWO, chunk_size=2, chunk_delay=0.05)  # ~5 s: /offload comes in the middle
    slow_summary = fault.stall_before_headers(
        3, text="SUMMARY of the first answer."
    )  # the summarizer takes its time
    async with running_app(
        server, workspace, dcode_home, reply(ONE), slow, slow_summary, reply("after")
    ) as h:
        await h.send("first")
        await h.idle()
        await h.send("second")
        await h.until(lambda: len(h.answers()) == 2, what="streaming")
        await h.send("/offload")  # a turn is running: it waits, and says so
        assert [item.text for item in h.app.session.queue] == ["/offload"]
        await h.until(
            lambda: "/offload will run when the turn ends" in h.text(),
            what="the line saying it waits",
        )
        await h.until(
            lambda: h.app.status.activity == "Compacting",
            what="the compaction, once the turn ended",
        )
        assert h.answers() == [ONE, TWO] and h.app.busy
        await h.send("and now?")  # the compaction holds the session: the prompt waits for it
        assert [item.text for item in h.app.session.queue] == ["and now?"]
        await h.idle()
        assert any(n.path for n in notices(h)) and h.answers()[-1] == "after"
    assert (
        "compacting a coding session" in server.transcript(2)[0][1]
    )  # the summarizer's, between the two turns
    sent = server.transcript(3)
    assert "SUMMARY of the first answer." in sent[1][1] and [text for _, text in sent[2:]] == [
        "second",
        TWO,
        "and now?",
    ]
