"""web_fetch through the whole agent loop: real ChatOpenAI against the scripted server, whose
static pages are what the tool fetches; real approvals, real SQLite, both wires.

The scripted server listens on loopback, which web_fetch reaches only where the user's own
config names the host (``[fetch] allow_private``): ``local`` writes that config, as a user
would, and reads it back."""

from __future__ import annotations

import hashlib
import io
import json
import random
from dataclasses import replace
from pathlib import Path

from PIL import Image

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.large_results import RESULTS_DIR
from dcode.agent.tools.spec import READ_FILE, WEB_FETCH
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.settings.config import ApprovalMode, Settings
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.support.web_hosts import Recorder, user_fetch_config
from tests.test_media_request import sent_images

VISION = {"image_inputs": True, "image_max_pixels": 640_000, "image_max_bytes": 1024 * 1024}
FIXTURE = Path(__file__).parent / "fixtures" / "docs_page.html"


def tool_texts(server: ScriptedModelServer, index: int) -> list[str]:
    return [text for role, text in server.transcript(index) if role == "tool"]


def gets(server: ScriptedModelServer, path: str) -> int:
    return sum(
        1 for request in server.all_requests if request.method == "GET" and request.path == path
    )


def local(settings: Settings, *private: str, allow: tuple[str, ...] = ()) -> Settings:
    """``settings`` with the user's config naming ``private`` in ``[fetch] allow_private`` (and
    ``allow`` in ``[fetch] allow``)."""
    config = user_fetch_config(settings.home, allow_private=private, allow=allow)
    return replace(settings, fetch_private=config.fetch_private, fetch_allow=config.fetch_allow)


async def headless(settings, prompt: str) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings, HeadlessRequest(prompt=prompt, output_format=OutputFormat.JSON), out=out, err=err
    )
    return code, json.loads(out.getvalue() or "{}")


async def test_a_fetched_image_is_saved_and_read_file_shows_it(
    server: ScriptedModelServer, make_settings, api: str
) -> None:
    settings = local(
        make_settings(api, model_overrides={"openai:test-model": VISION}),
        f"127.0.0.1:{server.port}",
    )
    picture = io.BytesIO()
    Image.frombytes("RGB", (320, 200), random.Random(3).randbytes(320 * 200 * 3)).save(
        picture, "PNG"
    )
    image = picture.getvalue()
    server.pages["/charts/brest.png"] = (200, "image/png", image)
    session = "fetchsession"
    saved = (
        settings.home
        / RESULTS_DIR
        / session
        / f"fetch-{hashlib.sha256(image).hexdigest()[:16]}.png"
    )
    server.script(
        reply(tool_calls=[tool_call(WEB_FETCH.name, {"url": f"{server.url}/charts/brest.png"})]),
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": str(saved)})]),
        reply("A tide chart."),
    )
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=session, mode=ApprovalMode.ALL)
        events = [
            event
            async for event in runner.run_turn("show me the chart", prompt_text="show me the chart")
        ]
    assert not events[-1].is_error
    assert saved.read_bytes() == image and saved.stat().st_mode & 0o777 == 0o600
    [fetched] = tool_texts(server, 1)
    assert f"saved to {saved}" in fetched and f"read_file (file_path={saved})" in fetched
    with Image.open(io.BytesIO(sent_images(server.requests[2])[-1][1])) as shown:
        assert shown.size == (320, 200)


async def test_headless_fetches_a_docs_page_with_approve_all(
    server: ScriptedModelServer, make_settings, api: str
) -> None:
    server.pages["/guide/quickstart.html"] = (200, "text/html", FIXTURE.read_bytes())
    url = f"{server.url}/guide/quickstart.html"
    server.script(
        reply(tool_calls=[tool_call(WEB_FETCH.name, {"url": url})]), reply("Install it with pip.")
    )
    code, result = await headless(
        local(make_settings(api, approve=ApprovalMode.ALL), f"127.0.0.1:{server.port}"),
        "how do I install tidewater?",
    )
    assert code == 0 and result["result"] == "Install it with pip."
    [page] = tool_texts(server, 1)
    assert page.startswith(f"Fetched {url} · 200 · text/html · ")
    assert "## Installing" in page and "```console\n$ pip install tidewater\n```" in page


async def test_headless_denies_a_fetch_in_edits_mode(
    server: ScriptedModelServer, make_settings, api: str
) -> None:
    server.pages["/guide/quickstart.html"] = (200, "text/html", FIXTURE.read_bytes())
    url = f"{server.url}/guide/quickstart.html"
    server.script(
        reply(tool_calls=[tool_call(WEB_FETCH.name, {"url": url})]), reply("I could not read it.")
    )
    code, _ = await headless(
        local(make_settings(api, approve=ApprovalMode.EDITS), f"127.0.0.1:{server.port}"),
        "read the quickstart",
    )
    assert code == 0
    assert tool_texts(server, 1) == [
        "denied: fetching a URL needs approval; rerun with --approve all"
    ]
    assert gets(server, "/guide/quickstart.html") == 0


async def test_with_approve_all_a_private_address_is_still_refused_and_the_turn_goes_on(
    server: ScriptedModelServer, make_settings, api: str
) -> None:
    server.pages["/admin"] = (200, "text/plain", b"the keys")
    url = f"http://2130706433:{server.port}/admin"  # 127.0.0.1, spelled as one number
    server.script(
        reply(tool_calls=[tool_call(WEB_FETCH.name, {"url": url})]),
        reply("That address is private."),
    )
    code, result = await headless(
        make_settings(api, approve=ApprovalMode.ALL), "read the admin page"
    )
    assert code == 0 and result["result"] == "That address is private."
    [refusal] = tool_texts(server, 1)
    assert refusal.startswith(
        f"web_fetch: http://127.0.0.1:{server.port}/admin is not fetched: 127.0.0.1 is a loopback address."
    )
    assert f'allow_private = ["127.0.0.1:{server.port}"]' in refusal
    assert gets(server, "/admin") == 0


async def test_a_redirect_from_an_allowed_host_to_another_is_not_followed_headless(
    server: ScriptedModelServer, make_settings, api: str
) -> None:
    """``[fetch] allow`` names 127.0.0.1; its redirect to localhost (another host, allowed to be
    private but not to be read unasked) stops there, and the model's own fetch of it is denied:
    nobody is there to approve it. The turn ends normally."""
    server.redirects["/docs"] = f"http://localhost:{server.port}/elsewhere"
    server.pages["/elsewhere"] = (200, "text/plain", b"not for reading")
    landing = f"http://localhost:{server.port}/elsewhere"
    server.script(
        reply(tool_calls=[tool_call(WEB_FETCH.name, {"url": f"{server.url}/docs"})]),
        reply(tool_calls=[tool_call(WEB_FETCH.name, {"url": landing})]),
        reply("I could not read it."),
    )
    settings = local(
        make_settings(api, approve=ApprovalMode.EDITS),
        f"127.0.0.1:{server.port}",
        f"localhost:{server.port}",
        allow=("127.0.0.1",),
    )
    code, result = await headless(settings, "read the docs")
    assert code == 0 and result["result"] == "I could not read it."
    assert tool_texts(server, 1) == [
        (
            f"web_fetch: {server.url}/docs redirected to {landing}, on another host, which needs the user's approval: "
            "not followed. To read it, fetch that URL (the user is asked first)"
        )
    ]
    assert (
        tool_texts(server, 2)[-1]
        == "denied: fetching a URL needs approval; rerun with --approve all"
    )
    assert gets(server, "/docs") == 1 and gets(server, "/elsewhere") == 0


async def test_a_redirect_into_loopback_is_refused_with_approve_all(
    server: ScriptedModelServer, make_settings, api: str
) -> None:
    with Recorder() as recorder:
        server.redirects["/docs"] = f"http://127.0.0.1:{recorder.port}/latest/meta-data"
        server.script(
            reply(tool_calls=[tool_call(WEB_FETCH.name, {"url": f"{server.url}/docs"})]),
            reply("Refused."),
        )
        settings = local(
            make_settings(api, approve=ApprovalMode.ALL),
            f"127.0.0.1:{server.port}",
            allow=("127.0.0.1",),
        )
        code, result = await headless(settings, "read the docs")
        assert code == 0 and result["result"] == "Refused."
        [refusal] = tool_texts(server, 1)
        assert refusal.startswith(
            f"web_fetch: {server.url}/docs redirected to http://127.0.0.1:{recorder.port}/latest/meta-data is not fetched: "
            "127.0.0.1 is a loopback address."
        )
        assert recorder.hits == []
