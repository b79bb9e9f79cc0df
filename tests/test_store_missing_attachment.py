"""A session whose attachment files are not on this machine (``$DCODE_HOME/attachments`` is
not shared with the store) resumes: its transcript shows, and its next turn sends a placeholder
naming the missing file instead of the image, and ends well."""

from __future__ import annotations

import io
import shutil

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import TurnFinished
from dcode.agent.store.base import SessionStore
from dcode.cli.headless import HeadlessRequest, run_headless
from dcode.cli.headless_media import attach_images
from dcode.cli.sessions import show_session
from tests.support.model_server import reply
from tests.test_media_request import VISION, request_texts, screenshot, sent_images


async def test_a_session_missing_its_attachment_resumes_with_a_placeholder(
    server, make_settings, workspace, store: SessionStore
) -> None:
    settings = make_settings("chat", model_overrides={"openai:test-model": VISION})
    server.script(reply("I see stripes."), reply("Going on without it."))
    shot = screenshot(workspace / "shot.png")
    request = attach_images(settings, HeadlessRequest(prompt="what is in [image 1]?"), [shot])
    err = io.StringIO()
    assert await run_headless(settings, request, out=io.StringIO(), err=err) == 0, err.getvalue()
    assert len(sent_images(server.requests[0])) == 1
    # Another machine: the same store, without the files kept beside it.
    shutil.rmtree(settings.attachments_dir)
    session = store.latest()
    assert session is not None

    shown = show_session(settings, session.id)
    assert "[you] what is in [image 1]?" in shown and "[dcode] I see stripes." in shown

    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=session.id)
        events = [event async for event in runner.run_turn("and now?")]
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and not finished.is_error, finished
    assert finished.result == "Going on without it."
    resumed = server.requests[1]
    assert sent_images(resumed) == []
    [placeholder] = [t for t in request_texts(resumed) if "could not be attached" in t]
    assert placeholder.startswith("[image shot.png could not be attached: "), placeholder
    info = store.get(session.id)
    assert info is not None and info.message_count == 4


async def test_the_tui_resumes_it_and_goes_on(
    server, make_settings, workspace, dcode_home, store: SessionStore
) -> None:
    from dataclasses import replace

    from tests.test_tui_app_support import make_settings as tui_settings
    from tests.test_tui_app_support import running_app

    settings = make_settings("chat", model_overrides={"openai:test-model": VISION})
    server.script(reply("I see stripes."))
    shot = screenshot(workspace / "shot.png")
    request = attach_images(settings, HeadlessRequest(prompt="what is in [image 1]?"), [shot])
    assert await run_headless(settings, request, out=io.StringIO(), err=io.StringIO()) == 0
    shutil.rmtree(settings.attachments_dir)
    session = store.latest()
    assert session is not None
    tui = replace(
        tui_settings(dcode_home, workspace, server),
        model_overrides={"openai:test-model": VISION},
    )
    async with running_app(
        server, workspace, dcode_home, reply("Still going."), settings=tui, session_id=session.id
    ) as h:
        await h.until(lambda: "I see stripes." in h.text(), what="the resumed transcript")
        await h.send("and now?")
        await h.idle()
        assert "Still going." in h.text()
    [placeholder] = [t for t in request_texts(server.requests[1]) if "could not be attached" in t]
    assert "shot.png" in placeholder
