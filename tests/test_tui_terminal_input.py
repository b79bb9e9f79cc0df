"""Raw terminal input into the real app: bytes parsed by Textual's own xterm parser and handed
over by the app's driver, as the input thread of a real terminal does, with burst detection on.

Text and Enter written at once (tmux ``send-keys "hi" Enter``, expect, voice typing, a laggy
SSH link) must send; a bracketed paste stays a paste; an unbracketed burst that spans several
lines stays in the box; a dropped path typed out by the terminal still becomes an image.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PIL import Image
from textual._xterm_parser import XTermParser

from dcode.tui.app import DcodeApp
from dcode.tui.widgets.burst import BurstKeys
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import Harness, running_app

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


async def one_read(app: DcodeApp, data: str) -> None:
    """``data`` as one read from the terminal: parsed on a thread, posted by the driver."""
    driver = app._driver
    assert driver is not None

    def read() -> None:
        parser = XTermParser()
        for event in parser.feed(data):
            driver.process_message(event)

    await asyncio.to_thread(read)


def detect_bursts(h: Harness) -> BurstKeys:
    """Burst detection as in a real terminal (``run_test`` turns it off: the pilot is fast)."""
    burst = BurstKeys(h.app.prompt_input, enabled=True)
    h.app.prompt_input.area.key_filter = burst
    return burst


async def test_text_and_enter_in_one_write_are_sent(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("hello back")) as h:
        burst = detect_bursts(h)
        await one_read(h.app, "hi there\r")
        await h.until(lambda: h.answers() == ["hello back"], what="the answer")
        await h.idle()
        assert h.prompts() == ["hi there"]
        assert h.app.prompt_input.text == ""
        assert burst.bursts == 1  # it did arrive as a burst, the path this is about


async def test_an_unbracketed_burst_over_several_lines_stays_in_the_box(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("never")) as h:
        burst = detect_bursts(h)
        await one_read(h.app, "line one\rline two\r")
        await h.until(lambda: burst.bursts == 1 and not burst.holding, what="the burst")
        await h.pilot.pause(0.1)
        assert h.app.prompt_input.text == "line one\nline two\n"
        assert h.prompts() == [] and not server.requests


async def test_a_bracketed_paste_ending_in_a_newline_stays_a_paste(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("never")) as h:
        detect_bursts(h)
        await one_read(h.app, f"{PASTE_START}pasted line\n{PASTE_END}")
        await h.until(lambda: h.app.prompt_input.text, what="the paste")
        await h.pilot.pause(0.15)
        assert h.app.prompt_input.text == "pasted line\n"
        assert h.prompts() == [] and not server.requests


async def test_a_dropped_path_typed_out_becomes_an_image(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    picture = workspace / "Screen Shot.png"
    Image.new("RGB", (40, 30), (10, 120, 200)).save(picture)
    async with running_app(server, workspace, dcode_home, reply("never")) as h:
        detect_bursts(h)
        await one_read(h.app, f"'{picture}' ")
        await h.until(
            lambda: h.app.prompt_input.text.startswith("[image 1]"), what="the image token"
        )
        assert h.prompts() == [] and not server.requests


async def test_a_slash_command_and_enter_in_one_write_runs_the_command(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """``/approve`` looks like an absolute path, so the burst goes by the media check first:
    the Enter waits for that check instead of being refused."""
    async with running_app(server, workspace, dcode_home, reply("never")) as h:
        detect_bursts(h)
        await one_read(h.app, "/approve edits\r")
        await h.until(lambda: "approval mode set to" in h.text(), what="the confirmation line")
        assert h.app.prompt_input.text == ""
        assert "Attaching media" not in h.text()
        assert not server.requests


async def test_a_dropped_path_and_enter_in_one_write_send_the_image(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    picture = workspace / "shot.png"
    Image.new("RGB", (40, 30), (10, 120, 200)).save(picture)
    async with running_app(server, workspace, dcode_home, reply("a blue picture")) as h:
        detect_bursts(h)
        await one_read(h.app, f"{picture}\r")
        await h.until(lambda: h.answers() == ["a blue picture"], what="the answer")
        assert h.prompts() == ["[image 1]"]
        assert h.app.prompt_input.text == ""
