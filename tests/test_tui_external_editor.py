"""Ctrl+G: the prompt written in the user's editor, a real program run on a real file."""

from __future__ import annotations

import contextlib
import stat
import sys
from pathlib import Path

import pytest
from textual import events

from dcode.tui.app import DcodeApp
from dcode.tui.external_editor import EditorUnavailable, edited_draft, editor_command
from dcode.tui.widgets.media_content import media_items
from dcode.tui.widgets.placeholders import Draft, Placeholder
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import make_settings, running_app

VISION = {"image_inputs": True}


def editor_script(tmp_path: Path, body: str) -> str:
    """An "editor": a Python script run on the draft's file, as $EDITOR would be."""
    script = tmp_path / "editor.py"
    script.write_text("import sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n" + body)
    return f"{sys.executable} {script}"


@pytest.fixture
def no_terminal_handover(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The pilot has no terminal to give up: the handover is a no-op that says it happened."""
    handed: list[bool] = []

    @contextlib.contextmanager
    def suspend(self: DcodeApp):
        handed.append(True)
        yield

    monkeypatch.setattr(DcodeApp, "suspend", suspend)
    return handed


def test_the_editor_is_visual_then_editor_then_one_on_the_path(tmp_path: Path) -> None:
    assert editor_command({"VISUAL": "code --wait", "EDITOR": "vi"}) == ["code", "--wait"]
    assert editor_command({"EDITOR": "'my editor' -n"}) == ["my editor", "-n"]
    (tmp_path / "nano").write_text("#!/bin/sh\n")
    (tmp_path / "nano").chmod(0o755)
    assert editor_command({"PATH": str(tmp_path)}) == [str(tmp_path / "nano")]
    with pytest.raises(EditorUnavailable, match="set \\$EDITOR"):
        editor_command({"PATH": str(tmp_path / "nowhere")})


def test_tokens_stay_bound_where_their_labels_are_found_again() -> None:
    image, paste = (
        Placeholder("media", "[image 1]", 0, "img"),
        Placeholder("paste", "[Pasted text #1 +3 lines]", 14, "p"),
    )
    before = Draft("[image 1] and [Pasted text #1 +3 lines]", (image, paste))
    after = edited_draft(before, "look at [image 1], please\n")
    assert after.text == "look at [image 1], please"
    assert [(t.label, t.start, t.payload) for t in after.placeholders] == [("[image 1]", 8, "img")]


async def test_ctrl_g_replaces_the_draft_with_what_the_editor_saved(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_terminal_handover: list[bool],
) -> None:
    seen = tmp_path / "seen.txt"
    monkeypatch.setenv(
        "EDITOR",
        editor_script(
            tmp_path,
            f"Path({str(seen)!r}).write_text(path.read_text())\nimport os\nPath({str(tmp_path / 'mode')!r}).write_text(oct(os.stat(path).st_mode & 0o777))\npath.write_text(path.read_text().replace('first', 'a better first') + '\\nsecond line\\n')\n",
        ),
    )
    monkeypatch.delenv("VISUAL", raising=False)
    async with running_app(server, workspace, dcode_home, reply("Got both lines.")) as h:
        await h.type("first line")
        await h.press("ctrl+g")
        await h.until(lambda: "second line" in h.app.prompt_input.text, what="the edited draft")
        assert (
            h.app.prompt_input.text == "a better first line\nsecond line"
            and no_terminal_handover == [True]
        )
        assert seen.read_text() == "first line" and (tmp_path / "mode").read_text() == "0o600"
        assert not any((dcode_home / "drafts").iterdir())  # the file goes once read
        await h.press("enter")
        await h.idle()
    assert [t for r, t in server.requests[0].transcript() if r == "user"] == [
        "a better first line\nsecond line"
    ]


async def test_a_failing_editor_leaves_the_draft_and_its_image(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_terminal_handover: list[bool],
) -> None:
    from dataclasses import replace

    from PIL import Image

    shot = workspace / "shot.png"
    Image.new("RGB", (32, 32), (0, 90, 0)).save(shot)
    monkeypatch.setenv(
        "EDITOR", editor_script(tmp_path, "path.write_text('ruined')\nsys.exit(3)\n")
    )
    monkeypatch.delenv("VISUAL", raising=False)
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    async with running_app(server, workspace, dcode_home, settings=settings) as h:
        h.app.prompt_input.area.post_message(events.Paste(f"'{shot}'"))
        await h.until(lambda: "[image 1]" in h.app.prompt_input.text, 10, "the image placeholder")
        await h.type("what is it")
        before = h.app.prompt_input.text
        await h.press("ctrl+g")
        await h.until(
            lambda: no_terminal_handover and not h.app.workers_in("editor"),
            what="the editor to exit",
        )
        await h.pilot.pause(0.1)
        assert h.app.prompt_input.text == before
        assert len(media_items(h.app.prompt_input.area.snapshot().placeholders)) == 1
        assert any(
            "exited with status 3: the prompt is as it was" in str(n.message)
            for n in h.app._notifications
        )
    assert stat.S_IMODE((dcode_home / "drafts").stat().st_mode) == 0o700
