"""The clipboard chain against a real X server (Xvfb) and the real ``xclip``.

Skipped where either is missing. Each test copies with ``xclip -i`` (which forks and serves the
selection until the X server goes away) and reads back through dcode: the reader alone, and
Ctrl+V in the whole app, through to the image the model receives.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from dcode.media.clipboard import ClipboardImage, NoImage, read_clipboard_image
from tests.support.corpus import PILLOW, requires_corpus
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_media import VISION, sent_images
from tests.test_tui_app_support import make_settings, running_app

pytestmark = pytest.mark.skipif(
    shutil.which("Xvfb") is None or shutil.which("xclip") is None, reason="needs Xvfb and xclip"
)

HOPPER = PILLOW / "hopper.png"


@pytest.fixture
def x_display() -> Iterator[str]:
    """A private Xvfb server; its display name, e.g. ``:57``."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "640x480x24"],
        pass_fds=(write_end,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end) as pipe:
            number = pipe.readline().strip()
        if not number:
            pytest.skip("Xvfb did not start")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def x_env(display: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "DISPLAY": display}


def copy(display: str, data: bytes, target: str) -> None:
    """Put ``data`` on the CLIPBOARD selection as ``target``, the way an image viewer would."""
    subprocess.run(
        ["xclip", "-selection", "clipboard", "-t", target, "-i"],
        input=data,
        env=x_env(display),
        check=True,
        timeout=10,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # the forked server keeps them
    )


@requires_corpus(HOPPER)
def test_a_png_on_the_clipboard_is_read_byte_for_byte(x_display: str) -> None:
    data = HOPPER.read_bytes()
    copy(x_display, data, "image/png")
    result = read_clipboard_image(env=x_env(x_display), platform="linux", is_wsl=False)
    assert isinstance(result, ClipboardImage)
    assert result.data == data and result.media_type == "image/png" and result.source == "xclip"


@requires_corpus(HOPPER)
def test_a_jpeg_on_the_clipboard_is_sniffed_as_jpeg(x_display: str) -> None:
    buffer = io.BytesIO()
    with Image.open(HOPPER) as image:
        image.convert("RGB").save(buffer, "JPEG", quality=80)
    copy(x_display, buffer.getvalue(), "image/jpeg")
    result = read_clipboard_image(env=x_env(x_display), platform="linux", is_wsl=False)
    assert isinstance(result, ClipboardImage) and result.media_type == "image/jpeg"
    assert result.data == buffer.getvalue()


def test_text_on_the_clipboard_is_no_image(x_display: str) -> None:
    copy(x_display, b"just some words", "UTF8_STRING")
    result = read_clipboard_image(env=x_env(x_display), platform="linux", is_wsl=False)
    assert isinstance(result, NoImage)


@requires_corpus(HOPPER)
async def test_ctrl_v_in_the_app_sends_the_clipboard_image(
    x_display: str,
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copy(x_display, HOPPER.read_bytes(), "image/png")
    monkeypatch.setenv("DISPLAY", x_display)
    for name in ("WAYLAND_DISPLAY", "SSH_CONNECTION", "SSH_TTY", "WSL_DISTRO_NAME", "WSL_INTEROP"):
        monkeypatch.delenv(name, raising=False)
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    async with running_app(
        server, workspace, dcode_home, reply("A portrait."), settings=settings
    ) as h:
        await h.type("who is this? ")
        await h.press("ctrl+v")
        await h.until(lambda: "[image 1]" in h.app.prompt_input.text, 10, "the image placeholder")
        await h.press("enter")
        await h.idle()
        [image] = sent_images(server.requests[0])
        with Image.open(io.BytesIO(image)) as sent, Image.open(HOPPER) as original:
            assert sent.size == original.size  # 128x128 is within every budget: sent as it is
        assert h.answers() == ["A portrait."]
