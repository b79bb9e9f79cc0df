"""The modal screens, driven by Textual's pilot."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Button, Input, Label, OptionList, Static

from dcode.agent.store.base import SessionInfo
from dcode.models.choices import ModelChoice, ModelOrigin
from dcode.settings.config import ProviderOverride, Settings
from dcode.tui.screens import (
    FirstRunScreen,
    HelpScreen,
    ModelScreen,
    ResumeScreen,
    ThemeScreen,
    format_age,
)
from dcode.tui.screens.first_run import setup_steps
from dcode.tui.screens.help import HelpTable

NOW = 1_750_000_000.0
NO_RESULT = object()


class ScreenHost(App[None]):
    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.modal = screen
        self.result: Any = NO_RESULT

    def compose(self) -> ComposeResult:
        yield Label("host")

    def on_mount(self) -> None:
        self.push_screen(self.modal, self._done)

    def _done(self, result: Any) -> None:
        self.result = result


def _text(widget: Static) -> str:
    return str(widget.render())


# --- resume


def _sessions(count: int) -> list[SessionInfo]:
    return [
        SessionInfo(
            id=f"s{n:04d}",
            cwd=f"/work/project{n % 7}",
            model="openai:gpt-5.1",
            title=f"Session number {n}" + (" about needle" if n % 100 == 0 else ""),
            created=NOW - 10_000 - n,
            updated=NOW - n * 60,
            message_count=n % 30,
        )
        for n in range(count)
    ]


def test_format_age() -> None:
    assert format_age(5) == "just now"
    assert format_age(5 * 60) == "5m ago"
    assert format_age(3 * 3600 + 10) == "3h ago"
    assert format_age(2 * 86400) == "2d ago"
    assert format_age(15 * 86400) == "2w ago"
    assert format_age(400 * 86400) == "1y ago"


async def test_resume_filters_and_picks() -> None:
    screen = ResumeScreen(_sessions(1000), now=NOW)
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.pause()
        assert len(screen.shown) == 1000
        assert screen.shown[0].id == "s0000"  # most recently updated first
        await pilot.press(*"NEEDLE")
        await pilot.pause()
        assert [s.id for s in screen.shown] == [f"s{n:04d}" for n in range(0, 1000, 100)]
        await pilot.press("down", "enter")
        await pilot.pause()
    assert host.result == "s0100"


async def test_resume_matches_cwd_and_id_and_shows_details() -> None:
    screen = ResumeScreen(_sessions(50), now=NOW)
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        screen.query_one("#resume-search", Input).value = "project"
        await pilot.press("3")
        await pilot.pause()
        assert screen.shown and all(s.cwd == "/work/project3" for s in screen.shown)
        options = screen.query_one("#resume-list", OptionList)
        first = str(options.get_option_at_index(0).prompt)
        assert "Session number 3" in first and "3m ago" in first and "3 messages" in first
        screen.query_one("#resume-search", Input).value = "s004"
        await pilot.press("2")
        await pilot.pause()
        assert [s.id for s in screen.shown] == ["s0042"]


async def test_resume_escape_dismisses_none() -> None:
    host = ScreenHost(ResumeScreen(_sessions(3), now=NOW))
    async with host.run_test() as pilot:
        await pilot.press("escape")
        await pilot.pause()
    assert host.result is None


async def test_resume_with_no_sessions() -> None:
    screen = ResumeScreen([], now=NOW)
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.press("enter")
        await pilot.pause()
        assert host.result is NO_RESULT
        assert "No saved sessions" in _text(screen.query_one("#resume-status", Label))


# --- help


@pytest.mark.parametrize("key", ["escape", "q"])
async def test_help_lists_commands_and_keys_then_closes(key: str) -> None:
    screen = HelpScreen(
        [("model", "Switch model"), ("resume", "Resume a session")],
        [("ctrl+c", "Interrupt / quit"), ("shift+tab", "Cycle approval mode")],
    )
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.pause()
        commands = screen.query_one("#help-commands", HelpTable).text
        keys = screen.query_one("#help-keys", HelpTable).text
        assert "/model" in commands and "Resume a session" in commands
        assert "shift+tab" in keys and "Cycle approval mode" in keys
        await pilot.press(key)
        await pilot.pause()
    assert host.result is None


# --- first run


def _settings(tmp_path: Path, **changes: Any) -> Settings:
    return Settings(home=tmp_path / "home", workspace=tmp_path, **changes)


def test_setup_steps_name_the_exact_variables(tmp_path: Path) -> None:
    text = "\n".join(step.plain for step in setup_steps(_settings(tmp_path)))
    assert "export OPENAI_API_KEY=..." in text
    assert "DEEPSEEK_API_KEY" in text
    assert str(tmp_path / "home" / "config.toml") in text
    assert 'model = "deepseek:deepseek-chat"' in text
    assert "--base-url http://localhost:11434/v1" in text
    deepseek = "\n".join(
        step.plain for step in setup_steps(_settings(tmp_path, model="deepseek:deepseek-chat"))
    )
    assert "export DEEPSEEK_API_KEY=..." in deepseek
    custom = _settings(
        tmp_path, model="acme:big", providers={"acme": ProviderOverride(api_key_env="ACME_KEY")}
    )
    assert "export ACME_KEY=..." in "\n".join(step.plain for step in setup_steps(custom))


async def test_first_run_test_connection_shows_the_result(tmp_path: Path) -> None:
    calls: list[str] = []

    def check() -> tuple[bool, str]:
        calls.append(threading.current_thread().name)
        return True, "Connected to openai:gpt-5.1 in 120 ms\nsecond line is dropped"

    screen = FirstRunScreen("OPENAI_API_KEY is not set", _settings(tmp_path), check)
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.press("ctrl+t")
        await pilot.pause()
        await host.workers.wait_for_complete()
        await pilot.pause()
        result = screen.query_one("#first-run-result", Static)
        assert _text(result) == "✓ Connected to openai:gpt-5.1 in 120 ms"
        assert result.has_class("-ok")
        assert calls and calls[0] != threading.main_thread().name
        assert host.result is NO_RESULT  # testing does not close the screen


async def test_first_run_failing_check_and_button_click(tmp_path: Path) -> None:
    def check() -> tuple[bool, str]:
        raise ConnectionError("connection refused")

    screen = FirstRunScreen("No API key", _settings(tmp_path), check)
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.click("#first-run-test")
        await pilot.pause()
        await host.workers.wait_for_complete()
        await pilot.pause()
        result = screen.query_one("#first-run-result", Static)
        assert _text(result) == "✗ ConnectionError: connection refused"
        assert result.has_class("-failed")
        assert not screen.query_one("#first-run-test", Button).disabled


async def test_first_run_keeps_typed_text_and_retry_dismisses_true(tmp_path: Path) -> None:
    screen = FirstRunScreen("No API key", _settings(tmp_path), None)
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        assert not screen.query("#first-run-test")  # no check, no button
        await pilot.press("r", "e", "space", "q", "enter")
        await pilot.pause()
        assert host.result is NO_RESULT  # letters, space and Enter press nothing
        assert screen.typed == "re q"
        await pilot.press("ctrl+r")
        await pilot.pause()
    assert host.result is True


async def test_first_run_escape_dismisses_false(tmp_path: Path) -> None:
    host = ScreenHost(FirstRunScreen("No API key", _settings(tmp_path), None))
    async with host.run_test() as pilot:
        await pilot.press("escape")
        await pilot.pause()
    assert host.result is False


# --- theme


async def test_theme_previews_and_escape_restores() -> None:
    screen = ThemeScreen()
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.pause()
        original = host.theme
        await pilot.press("down")
        await pilot.pause()
        assert host.theme != original
        await pilot.press("escape")
        await pilot.pause()
        assert host.theme == original
    assert host.result is None


async def test_theme_enter_picks() -> None:
    screen = ThemeScreen()
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        chosen = host.theme
    assert host.result == chosen


# --- model


def _choices() -> list[ModelChoice]:
    return [
        ModelChoice("openai:recent-model", ModelOrigin.RECENT),
        ModelChoice("openai:gpt-5.1", ModelOrigin.PRESET),
        ModelChoice(
            "deepseek:deepseek-chat",
            ModelOrigin.PRESET,
            "no API key for deepseek: set DEEPSEEK_API_KEY",
        ),
        ModelChoice("corp:", ModelOrigin.CONFIGURED),
    ]


async def test_model_picker_marks_the_current_one_and_filters() -> None:
    screen = ModelScreen(_choices(), current="openai:gpt-5.1")
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.pause()
        options = screen.query_one("#model-list", OptionList)
        assert options.highlighted == 1  # the current model
        current = str(options.get_option_at_index(1).prompt)
        assert current.startswith("● openai:gpt-5.1") and "current" in current
        assert str(options.get_option_at_index(2).prompt).endswith(
            "⚠ no API key for deepseek"
        )  # the mark in words
        assert "type the model name" in str(options.get_option_at_index(3).prompt)
        await pilot.press("down")  # to the model that lacks a key: the status line says so
        await pilot.pause()
        assert "set DEEPSEEK_API_KEY" in _text(screen.query_one("#model-status", Label))
        await pilot.press(*"deep")
        await pilot.pause()
        assert [c.spec for c in screen.shown] == ["deepseek:deepseek-chat"]
        await pilot.press("enter")
        await pilot.pause()
    assert host.result == "deepseek:deepseek-chat"


async def test_model_picker_says_what_a_guessed_profile_assumes() -> None:
    guessed = ModelChoice(
        "vllm:mystery", ModelOrigin.RECENT, guessed="image_inputs = false, max_input_tokens = 32768"
    )
    screen = ModelScreen([*_choices(), guessed], current="openai:gpt-5.1")
    async with ScreenHost(screen).run_test() as pilot:
        await pilot.pause()
        options = screen.query_one("#model-list", OptionList)
        assert str(options.get_option_at_index(4).prompt).endswith("⚠ profile guessed")
        assert "⚠" not in str(options.get_option_at_index(1).prompt)
        options.highlighted = 4
        await pilot.pause()
        assert _text(screen.query_one("#model-status", Label)) == (
            '⚠ profile guessed: dcode assumes image_inputs = false, max_input_tokens = 32768; if wrong, set them under [models."vllm:mystery"] in config.toml'
        )


async def test_model_picker_takes_a_typed_spec_no_row_names() -> None:
    screen = ModelScreen(_choices(), current="openai:gpt-5.1")
    host = ScreenHost(screen)
    async with host.run_test() as pilot:
        await pilot.press(*"vllm:my-model")
        await pilot.pause()
        assert screen.shown == []
        assert "Enter switches to vllm:my-model" in _text(screen.query_one("#model-status", Label))
        await pilot.press("enter")
        await pilot.pause()
    assert host.result == "vllm:my-model"


async def test_model_picker_escape_dismisses_none() -> None:
    host = ScreenHost(ModelScreen(_choices(), current="openai:gpt-5.1"))
    async with host.run_test() as pilot:
        await pilot.press(*"nothing like it", "enter")  # no row, no spec: Enter does nothing
        await pilot.pause()
        assert host.result is NO_RESULT
        await pilot.press("escape")
        await pilot.pause()
    assert host.result is None
