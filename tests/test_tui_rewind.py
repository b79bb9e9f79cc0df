"""``/rewind`` in the app: pick a prompt, choose what goes back, and the prompt returns to the input."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual import events

from dcode.settings.config import ApprovalMode
from dcode.tui.screens.rewind import RewindChoiceScreen, RewindScreen
from dcode.tui.transcript import NoticeEntry
from dcode.tui.widgets.media_content import media_items
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import make_settings, running_app

VISION = {"image_inputs": True, "image_max_pixels": 640_000, "image_max_bytes": 1024 * 1024}


def notices(h) -> list[str]:
    return [entry.text for entry in h.entries(NoticeEntry)]


@pytest.mark.usefixtures("store_kind")
async def test_rewind_both_repaints_the_transcript_deletes_the_new_file_and_returns_the_prompt(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    steps = (
        reply("Hello."),
        reply(
            tool_calls=[tool_call("write_file", {"file_path": "b.py", "content": "print('b')\n"})]
        ),
        reply("Wrote b.py."),
    )
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("say hello")
        await h.idle()
        await h.send("write b.py please")
        await h.idle()
        assert (workspace / "b.py").exists()
        await h.send("/rewind")
        await h.until(
            lambda: isinstance(h.app.screen, RewindScreen) and h.app.screen.is_mounted,
            what="the rewind picker",
        )
        await h.pilot.pause()  # its list is filled as it mounts
        picker = h.app.screen
        assert isinstance(picker, RewindScreen)
        assert [turn.prompt for turn in picker.shown] == ["write b.py please", "say hello"]
        assert "1 file changed since" in h.text()
        await h.press("enter")  # the newest prompt is highlighted
        await h.until(lambda: isinstance(h.app.screen, RewindChoiceScreen), what="the choice")
        assert "b.py: deleted (dcode created it)" in h.text()
        await h.press("b")
        await h.until(
            lambda: (
                not (workspace / "b.py").exists() and h.app.prompt_input.text == "write b.py please"
            ),
            what="the rewind",
        )
        await h.until(lambda: not h.app.busy, what="the session to be released")
        assert h.prompts() == ["say hello"] and h.answers() == ["Hello."]
        assert any(
            n.startswith("the conversation is back to before prompt 2") and "b.py deleted" in n
            for n in notices(h)
        )
        server.script(reply("Another answer."))
        await h.press("enter")  # the prompt, sent again as it was put back
        await h.idle()
        assert [t for r, t in server.requests[-1].transcript() if r in ("user", "assistant")] == [
            "say hello",
            "Hello.",
            "write b.py please",
        ]


async def test_rewind_code_only_keeps_the_conversation_and_escape_changes_nothing(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "a.txt").write_text("before\n")
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    steps = (
        reply(tool_calls=[tool_call("write_file", {"file_path": "a.txt", "content": "after\n"})]),
        reply("Done."),
    )
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("change a.txt")
        await h.idle()
        await h.send("/rewind")
        await h.until(lambda: isinstance(h.app.screen, RewindScreen), what="the rewind picker")
        await h.press("escape")
        await h.until(
            lambda: not isinstance(h.app.screen, RewindScreen) and not h.app.busy,
            what="the picker to close",
        )
        assert (workspace / "a.txt").read_text() == "after\n" and h.prompts() == ["change a.txt"]
        await h.send("/rewind")
        await h.until(lambda: isinstance(h.app.screen, RewindScreen), what="the rewind picker")
        await h.press("enter")
        await h.until(lambda: isinstance(h.app.screen, RewindChoiceScreen), what="the choice")
        await h.press("f")
        await h.until(
            lambda: (workspace / "a.txt").read_text() == "before\n", what="the file put back"
        )
        await h.until(lambda: not h.app.busy, what="the session to be released")
        assert h.prompts() == ["change a.txt"] and h.app.prompt_input.text == ""
        assert any(n == "1 file put back: a.txt" for n in notices(h))


async def test_a_rewound_prompt_comes_back_with_its_image_bound(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from PIL import Image

    shot = workspace / "shot.png"
    Image.new("RGB", (64, 48), (200, 40, 40)).save(shot)
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    async with running_app(
        server, workspace, dcode_home, reply("A red box."), settings=settings
    ) as h:
        h.app.prompt_input.area.post_message(events.Paste(f"'{shot}'"))
        await h.until(lambda: "[image 1]" in h.app.prompt_input.text, 10, "the image placeholder")
        await h.type("what is this?")
        await h.press("enter")
        await h.idle()
        await h.send("/rewind")
        await h.until(lambda: isinstance(h.app.screen, RewindScreen), what="the rewind picker")
        await h.press("enter")
        await h.until(lambda: isinstance(h.app.screen, RewindChoiceScreen), what="the choice")
        await h.press("c")
        await h.until(
            lambda: "[image 1]" in h.app.prompt_input.text, what="the prompt back in the input"
        )
        [item] = media_items(h.app.prompt_input.area.snapshot().placeholders)
        assert item.kind == "image" and item.attachment is not None and h.prompts() == []


async def test_escape_twice_on_an_empty_prompt_opens_the_picker(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("Hi.")) as h:
        await h.press("escape", "escape")  # no session yet: nothing to rewind, nothing opens
        await h.pilot.pause(0.1)
        assert not isinstance(h.app.screen, RewindScreen) and notices(h) == []
        await h.send("hello")
        await h.idle()
        await h.type("a draft")
        await h.press("escape", "escape")  # a draft: the first double Esc clears it
        assert h.app.prompt_input.text == "" and not isinstance(h.app.screen, RewindScreen)
        await h.pilot.pause(1.1)  # past the double-press window
        await h.press("escape", "escape")
        await h.until(
            lambda: isinstance(h.app.screen, RewindScreen) and h.app.screen.is_mounted,
            what="the rewind picker",
        )
        await h.pilot.pause()  # its list is filled as it mounts
        assert [turn.prompt for turn in h.app.screen.shown] == ["hello"]
