"""Media on the wire, per profile field and on both APIs: the part where the model takes it, or
its one-line placeholder, never a 400; and a replayed or resumed thread sends the same bytes.

Each test gives a real session (SQLite checkpoints, the real ChatOpenAI client, the scripted
server) a history holding read_file results in the contract's shape, then runs a turn and reads
what the server received.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import Notice
from dcode.agent.media_placement import MOVED_NOTE
from dcode.agent.tools.spec import READ_FILE
from dcode.media.store import AttachmentStore
from tests.support.corpus import VIDEOS, corpus_file
from tests.support.media_results import (
    CORPUS_PNGS,
    PILLOW,
    audio_result,
    image_result,
    pdf_bytes,
    pdf_result,
    read_batch,
    requires_pngs,
    text,
    video_result,
    wav_bytes,
)
from tests.support.model_server import RecordedRequest, reply

pytest.importorskip("pypdf")


def refusal(path: str, kind: str, mime: str) -> str:
    return f"[{READ_FILE.name}: {path} was not attached because this model does not support {kind} content ({mime}).]"


async def send(settings, history: list[BaseMessage], server) -> RecordedRequest:
    """Put ``history`` in a new session and run one turn on it; the request the model got."""
    server.script(reply("answered"))
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        await engine.graph.aupdate_state(
            runner.config, {"messages": thread(history)}, as_node="model"
        )
        async for _ in runner.run_turn("go on"):
            pass
    return server.requests[-1]


def thread(history: list[BaseMessage]) -> list[BaseMessage]:
    return [
        HumanMessage(content="start", id="h-start"),
        *history,
        AIMessage(content="noted", id="ai-noted"),
    ]


def items(request: RecordedRequest) -> list[tuple[str, list[dict[str, Any]]]]:
    """(role, content parts) of every message sent, on either wire; a tool result is "tool"."""
    out = []
    for item in request.messages:
        if request.wire == "chat":
            role, content = item["role"], item.get("content")
        elif item.get("type") == "function_call_output":
            role, content = "tool", item["output"]
        elif item.get("type") == "message":
            role, content = item["role"], item["content"]
        else:
            continue
        if isinstance(content, str):
            try:
                content = json.loads(content)
            except ValueError:  # text parts alone go as one string, a line apart
                content = [{"type": "text", "text": line} for line in content.split("\n")]
        out.append((role, content if isinstance(content, list) else []))
    return out


def texts(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if p.get("type") in {"text", "input_text"}]


def media(parts: list[dict[str, Any]]) -> list[tuple[str, str, bytes]]:
    """(kind, mime, bytes) of each media part, whichever wire's shape it has."""
    found = []
    for part in parts:
        kind = part.get("type")
        if kind == "image_url":
            found.append(("image", *_data_url(part["image_url"]["url"])))
        elif kind == "input_image":
            found.append(("image", *_data_url(part["image_url"])))
        elif kind == "file":
            found.append(("file", *_data_url(part["file"]["file_data"])))
        elif kind == "input_file":
            found.append(("file", *_data_url(part["file_data"])))
        elif kind == "input_audio":
            found.append(
                (
                    "audio",
                    f"audio/{part['input_audio']['format']}",
                    base64.b64decode(part["input_audio"]["data"]),
                )
            )
        elif kind in {"image", "audio", "video"} or "base64" in part:
            found.append((str(kind), str(part.get("mime_type")), b""))
    return found


def _data_url(url: str) -> tuple[str, bytes]:
    header, data = url.split(",", 1)
    return header.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data)


def after_results(request: RecordedRequest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the tool result's parts, the parts of the message right after it)."""
    sent = items(request)
    index = max(i for i, (role, _) in enumerate(sent) if role == "tool")
    return sent[index][1], sent[index + 1][1]


def all_media(request: RecordedRequest) -> list[tuple[str, str, bytes]]:
    return [m for _, parts in items(request) for m in media(parts)]


@pytest.fixture
def store(make_settings) -> AttachmentStore:
    return AttachmentStore(make_settings().attachments_dir)


def with_profile(make_settings, api: str, **profile: Any):
    return make_settings(api, model_overrides={"openai:test-model": profile})


@requires_pngs
@pytest.mark.parametrize(
    "in_tool", [False, True], ids=["image_tool_message=false", "image_tool_message=true"]
)
async def test_image_inputs_place_the_image_by_image_tool_message(
    server, make_settings, store, api, in_tool
) -> None:
    settings = with_profile(make_settings, api, image_inputs=True, image_tool_message=in_tool)
    history = read_batch(
        "ai-img", [("shots/a.png", image_result(store, PILLOW / CORPUS_PNGS[0], "shots/a.png"))]
    )
    tool, following = after_results(await send(settings, history, server))
    if in_tool:
        assert [kind for kind, _, _ in media(tool)] == ["image"] and media(following) == []
    else:
        assert media(tool) == [] and texts(tool)[-1] == MOVED_NOTE
        assert [kind for kind, _, _ in media(following)] == ["image"]
        assert texts(following)[0] == f"Attached by {READ_FILE.name} shots/a.png:"


@requires_pngs
async def test_no_image_inputs_is_a_placeholder(server, make_settings, store, api) -> None:
    settings = with_profile(make_settings, api, image_inputs=False, image_tool_message=True)
    history = read_batch(
        "ai-img", [("shots/a.png", image_result(store, PILLOW / CORPUS_PNGS[0], "shots/a.png"))]
    )
    request = await send(settings, history, server)
    tool, _ = after_results(request)
    assert all_media(request) == []
    assert texts(tool)[-1] == refusal("shots/a.png", "image", "image/png")


@pytest.mark.parametrize(
    "in_tool", [False, True], ids=["pdf_tool_message=false", "pdf_tool_message=true"]
)
async def test_pdf_inputs_send_the_file_placed_by_pdf_tool_message(
    server, make_settings, store, api, in_tool
) -> None:
    settings = with_profile(make_settings, api, pdf_inputs=True, pdf_tool_message=in_tool)
    history = read_batch("ai-pdf", [("docs/spec.pdf", pdf_result(store, "docs/spec.pdf"))])
    tool, following = after_results(await send(settings, history, server))
    expected = [("file", "application/pdf", pdf_bytes())]
    if in_tool:
        assert media(tool) == expected and media(following) == []
    else:
        assert media(tool) == [] and media(following) == expected and texts(tool)[-1] == MOVED_NOTE


async def test_no_pdf_inputs_is_a_placeholder(server, make_settings, store, api) -> None:
    settings = with_profile(
        make_settings, api, pdf_inputs=False, pdf_tool_message=True, image_inputs=True
    )
    history = read_batch("ai-pdf", [("docs/spec.pdf", pdf_result(store, "docs/spec.pdf"))])
    request = await send(settings, history, server)
    assert all_media(request) == []
    assert texts(after_results(request)[0])[-1] == refusal(
        "docs/spec.pdf", "pdf", "application/pdf"
    )


@pytest.mark.parametrize(
    "audio_inputs", [True, False], ids=["audio_inputs=true", "audio_inputs=false"]
)
async def test_audio_goes_where_the_wire_takes_it(
    server, make_settings, store, api, audio_inputs
) -> None:
    """Chat Completions takes ``input_audio`` in a user message; langchain-openai cannot put
    audio on the Responses API (it drops the part), so there it is the placeholder too."""
    settings = with_profile(make_settings, api, audio_inputs=audio_inputs)
    history = read_batch("ai-wav", [("sounds/a.wav", audio_result(store, "sounds/a.wav"))])
    request = await send(settings, history, server)
    tool, following = after_results(request)
    if audio_inputs and api == "chat":
        assert media(tool) == [] and media(following) == [("audio", "audio/wav", wav_bytes())]
    else:
        assert all_media(request) == []
        assert texts(tool)[-1] == refusal("sounds/a.wav", "audio", "audio/wav")


@pytest.mark.parametrize(
    "video_inputs", [True, False], ids=["video_inputs=true", "video_inputs=false"]
)
async def test_a_whole_video_is_a_placeholder_on_both_wires(
    server, make_settings, store, api, video_inputs
) -> None:
    """langchain-openai encodes no video block on either API (it raises), whatever the profile."""
    settings = with_profile(make_settings, api, video_inputs=video_inputs)
    clip = corpus_file(VIDEOS / "carphone_pristine.mp4")
    history = read_batch(
        "ai-mp4", [("clip.mp4", video_result(store, "clip.mp4", clip.read_bytes()))]
    )
    request = await send(settings, history, server)
    assert all_media(request) == []
    assert texts(after_results(request)[0])[-1] == refusal("clip.mp4", "video", "video/mp4")


@requires_pngs
async def test_one_notice_per_thread_for_each_refused_kind(server, make_settings, store) -> None:
    settings = with_profile(make_settings, "chat", image_inputs=False, pdf_inputs=False)
    history = read_batch(
        "ai-2",
        [
            ("a.pdf", pdf_result(store, "a.pdf")),
            ("a.png", image_result(store, PILLOW / CORPUS_PNGS[0], "a.png")),
        ],
    )
    server.script(reply("one"), reply("two"))
    notices = []
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        await engine.graph.aupdate_state(
            runner.config, {"messages": thread(history)}, as_node="model"
        )
        for prompt in ("first", "second"):
            notices += [e.message async for e in runner.run_turn(prompt) if isinstance(e, Notice)]
    assert notices == [
        "this model takes no images: they are sent as text placeholders",
        "this model takes no PDFs: they are sent as text placeholders",
    ]
    assert all_media(server.requests[1]) == []


async def test_a_missing_file_attachment_is_a_placeholder(
    server, make_settings, store, api
) -> None:
    settings = with_profile(make_settings, api, pdf_inputs=True)
    result = pdf_result(store, "docs/gone.pdf")
    gone = store.path_for(store.get_file(result[1]["attachment_id"]))
    gone.chmod(0o644)
    gone.unlink()
    request = await send(settings, read_batch("ai-gone", [("docs/gone.pdf", result)]), server)
    _, following = after_results(request)
    assert all_media(request) == []
    assert any(t.startswith("[pdf docs/gone.pdf could not be attached: ") for t in texts(following))


@requires_pngs
async def test_a_raw_image_another_tool_returned_is_scrubbed(server, make_settings, api) -> None:
    settings = with_profile(make_settings, api, image_inputs=False)
    raw = base64.b64encode((PILLOW / CORPUS_PNGS[0]).read_bytes()).decode()
    ai = AIMessage(
        content="",
        tool_calls=[{"id": "c1", "name": "screenshot", "args": {}, "type": "tool_call"}],
        id="ai-raw",
    )
    result = ToolMessage(
        content=[
            text("Took a screenshot."),
            {"type": "image", "base64": raw, "mime_type": "image/png"},
        ],
        tool_call_id="c1",
        name="screenshot",
    )
    pasted = HumanMessage(
        content=[
            text("and mine"),
            {"type": "image", "base64": raw, "mime_type": "image/png", "name": "mine.png"},
        ]
    )
    request = await send(
        settings, [ai, result, AIMessage(content="ok", id="ai-ok"), pasted], server
    )
    assert all_media(request) == []
    sent = [t for _, parts in items(request) for t in texts(parts)]
    assert (
        "[screenshot: (unnamed) was not attached because this model does not support image content (image/png).]"
        in sent
    )
    assert (
        "[mine.png was not attached because this model does not support image content (image/png).]"
        in sent
    )


@requires_pngs
async def test_a_replayed_or_resumed_thread_sends_the_same_bytes(
    server, make_settings, store, api
) -> None:
    settings = with_profile(make_settings, api, image_inputs=True, pdf_inputs=True)
    shots = [(f"shots/{n}", image_result(store, PILLOW / n, f"shots/{n}")) for n in CORPUS_PNGS]
    history = [
        *read_batch("ai-1", shots),
        AIMessage(content="three shots", id="ai-2"),
        *read_batch("ai-3", [("docs/spec.pdf", pdf_result(store, "docs/spec.pdf"))]),
    ]
    first = await send(settings, history, server)
    again = await send(settings, history, server)
    assert first.raw_body == again.raw_body and first.raw_body
    # The same history put in a session by one process and run by the next, from SQLite.
    server.script(reply("answered"), reply("and again"))
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        await engine.graph.aupdate_state(
            runner.config, {"messages": thread(history)}, as_node="model"
        )
        session = runner.session_id
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover(), session_id=session)
        async for _ in runner.run_turn("go on"):
            pass
        resumed = server.requests[-1]
        async for _ in runner.run_turn("more"):
            pass
        later = server.requests[-1]
    assert resumed.raw_body == first.raw_body
    # The next turn's request starts with the same messages, byte for byte.
    prefix = len(first.messages)
    assert json.dumps(later.messages[:prefix]) == json.dumps(first.messages)
    # One media message after the three results of the first batch, one after the PDF's.
    roles = [role for role, _ in items(first)]
    assert roles.count("tool") == 4 and roles[roles.index("tool") + 3] == "user"
