"""Media the model will not see is said when it is attached, with the setting that changes it
and whether the profile was guessed: a pasted image in the TUI (the real app, before and after
its engine is ready) and ``dcode -p -i`` (the real binary), against the scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from PIL import Image
from textual import events

from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import GatedApp, Harness, make_settings, running_app

DCODE = str(Path(sys.executable).with_name("dcode"))


def run_dcode(
    server: ScriptedModelServer, workspace: Path, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "k",
    }
    command = [DCODE, *args, "-m", "openai:test-model", "--base-url", server.base_url]
    return subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=120
    )


def toasts(h: Harness) -> list[str]:
    return [str(n.message) for n in h.app._notifications]


def guessed_line(home: Path, attached: str) -> str:
    return (
        "dcode does not know whether openai:test-model takes images (its profile is guessed), so "
        f"{attached} will reach it as a text placeholder. If it does take images, set image_inputs = true "
        f'under [models."openai:test-model"] in {home / "config.toml"}.'
    )


def screenshot(workspace: Path) -> Path:
    shot = workspace / "shot.png"
    Image.new("RGB", (48, 32), (30, 90, 200)).save(shot)
    return shot


async def test_a_pasted_image_for_a_guessed_profile_is_said_at_once(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    shot = screenshot(workspace)
    async with running_app(server, workspace, dcode_home) as h:
        h.app.prompt_input.area.post_message(events.Paste(str(shot)))
        await h.until(lambda: "[image 1]" in h.app.prompt_input.text, what="the image token")
        await h.until(
            lambda: guessed_line(dcode_home, "[image 1]") in toasts(h),
            what="the line naming the setting",
        )
        assert server.requests == []  # said before anything was sent


async def test_a_pasted_image_before_the_engine_is_ready_is_said_too(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    shot = screenshot(workspace)
    async with running_app(
        server, workspace, dcode_home, wait_ready=False, app_class=GatedApp
    ) as h:
        assert h.app.engine is None
        h.app.prompt_input.area.post_message(events.Paste(str(shot)))
        await h.until(lambda: guessed_line(dcode_home, "[image 1]") in toasts(h), what="the line")
        assert isinstance(h.app, GatedApp)
        h.app.open_gate()


async def test_a_profile_that_says_no_images_is_named_and_a_vision_one_is_quiet(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    shot = screenshot(workspace)
    for image_inputs in (False, True):
        settings = replace(
            make_settings(dcode_home, workspace, server),
            model_overrides={"openai:test-model": {"image_inputs": image_inputs}},
        )
        async with running_app(server, workspace, dcode_home, settings=settings) as h:
            h.app.prompt_input.area.post_message(events.Paste(str(shot)))
            await h.until(lambda: "[image 1]" in h.app.prompt_input.text, what="the image token")
            await h.pilot.pause(0.2)
            said = [t for t in toasts(h) if "openai:test-model" in t]
            if image_inputs:
                assert said == []
            else:
                assert said == [
                    (
                        "openai:test-model takes no images (so says its profile, from user config), so [image 1] will reach it as a "
                        f'text placeholder. If it does take images, set image_inputs = true under [models."openai:test-model"] in {dcode_home / "config.toml"}.'
                    )
                ]


def test_dcode_p_says_at_once_that_a_guessed_profile_will_not_see_the_image(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    Image.new("RGB", (40, 30), (200, 20, 20)).save(workspace / "shot.png")
    home = tmp_path / "home"
    server.script(reply("I see a placeholder."))
    done = run_dcode(server, workspace, home, "-p", "what is this?", "-i", "shot.png")
    assert done.returncode == 0, done.stderr
    warning = (
        "dcode: warning: dcode does not know whether openai:test-model takes images (its profile is guessed), so "
        "shot.png will reach it as a text placeholder. If it does take images, set image_inputs = true "
        f'under [models."openai:test-model"] in {home / "config.toml"}.'
    )
    lines = done.stderr.splitlines()
    assert warning in lines
    assert lines.index(warning) < min(
        i for i, line in enumerate(lines) if line.startswith("dcode: note:")
    )  # before the turn's notes


def test_dcode_p_is_quiet_about_images_a_model_takes(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    Image.new("RGB", (40, 30), (200, 20, 20)).save(workspace / "shot.png")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[models."openai:test-model"]\nimage_inputs = true\n')
    server.script(reply("A red square."))
    done = run_dcode(server, workspace, home, "-p", "what is this?", "-i", "shot.png")
    assert done.returncode == 0, done.stderr
    assert "image_inputs" not in done.stderr
