"""The token counter: OpenAI's BPEs offline, the chat format's overhead, tool schemas, images by
the route's formula, counted once a message, calibrated against the provider's figures."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from PIL import Image

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.context.tokens.calibration import HIGH, Calibration
from dcode.context.tokens.counter import PER_MESSAGE, REPLY_PRIMING, TokenCounter
from dcode.context.tokens.encodings import CL100K, O200K, encoding
from dcode.context.tokens.family import family_for
from dcode.context.tokens.images import image_pricer
from dcode.media.attachment import to_reference_block
from dcode.media.limits import ImageRoute
from dcode.media.store import AttachmentStore
from dcode.media.tokens import OpenAITiles
from tests.support.model_server import ScriptedModelServer, reply, tool_call

PROSE = "The quick brown fox jumps over the lazy dog, and then it rests under the old oak tree for a while."
CODE = "def handler(request):\n    if not request.ok:\n        raise ValueError(f'bad {request!r}')\n    return {k: v for k, v in request.items()}\n"
JSON_TEXT = json.dumps(
    {"items": [{"id": i, "name": f"item-{i}", "tags": ["a", "b"]} for i in range(20)]}, indent=2
)
CJK = "上下文窗口的大小决定了模型一次能读取多少内容。压缩应当在请求溢出之前发生。"


def tokens(text: str, name: str = O200K) -> int:
    return len(encoding(name).encode_ordinary(text))


class CountingEncoder:
    """The real o200k encoding, counting the texts it is given."""

    def __init__(self) -> None:
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return encoding(O200K).encode_ordinary(text)


def test_the_encodings_load_offline_and_give_openais_ids() -> None:
    assert encoding(O200K).encode("hello world") == [24912, 2375]
    assert encoding(CL100K).encode("hello world") == [15339, 1917]
    assert encoding(O200K).decode(encoding(O200K).encode(CJK)) == CJK


def test_each_model_is_counted_with_its_familys_encoding() -> None:
    for model in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-5.1", "o3", "o4-mini", "openai/gpt-4o"):
        assert family_for(model).encoding == O200K and family_for(model).exact, model
    for model in ("gpt-4", "gpt-4-turbo", "gpt-3.5-turbo"):
        assert family_for(model).encoding == CL100K and family_for(model).exact, model
    for model in ("deepseek-chat", "qwen3-coder-plus", "llama3.1:8b", "test-model"):
        assert family_for(model).encoding == O200K and not family_for(model).exact, model
    assert TokenCounter("gpt-4").count_text("hello world") == 2 and TokenCounter(
        "gpt-4"
    ).encoder() is encoding(CL100K)


@pytest.mark.parametrize(
    "text", [PROSE, CODE, JSON_TEXT, CJK], ids=["prose", "code", "json", "cjk"]
)
def test_a_message_costs_its_text_and_the_chat_frame(text: str) -> None:
    counter = TokenCounter("gpt-4o")
    assert counter.count_message(HumanMessage(text)) == PER_MESSAGE + tokens("user") + tokens(text)
    assert counter.count_message(SystemMessage(text)) == PER_MESSAGE + tokens("system") + tokens(
        text
    )
    assert (
        counter.count_request([HumanMessage(text)])
        == PER_MESSAGE + tokens("user") + tokens(text) + REPLY_PRIMING
    )


def test_known_counts() -> None:
    counter = TokenCounter("gpt-4o")
    assert counter.count_request([HumanMessage("hello world")]) == 9  # 3 + "user" + 2 + 3
    assert counter.count_text(CJK) < len(
        CJK
    )  # o200k packs Chinese: far more than 4 chars would guess
    assert (
        counter.count_text(JSON_TEXT) > len(JSON_TEXT) / 4
    )  # indented JSON costs more than 4 chars would guess


def test_tool_calls_results_and_schemas_are_counted_as_the_wire_sends_them() -> None:
    counter = TokenCounter("gpt-4o")
    args = {"file_path": "src/app.py", "content": CODE}
    call = AIMessage(
        "Writing it.",
        tool_calls=[{"name": "write_file", "args": args, "id": "c1", "type": "tool_call"}],
    )
    expected = (
        PER_MESSAGE
        + tokens("assistant")
        + tokens("Writing it.")
        + tokens("write_file")
        + tokens(json.dumps(args, ensure_ascii=False))
    )
    assert counter.count_message(call) == expected
    result = ToolMessage(JSON_TEXT, tool_call_id="c1")
    assert counter.count_message(result) == PER_MESSAGE + tokens("tool") + tokens(JSON_TEXT)
    schema = {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}},
        },
    }
    assert counter.count_tools([schema]) == tokens(json.dumps([schema][0]))
    total = counter.count_request([call, result], system=SystemMessage(PROSE), tools=[schema])
    assert (
        total
        == counter.count_message(SystemMessage(PROSE))
        + expected
        + counter.count_message(result)
        + counter.count_tools([schema])
        + REPLY_PRIMING
    )


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (30, 120, 200)).save(out, "PNG")
    return out.getvalue()


def test_images_cost_the_routes_formula_at_the_size_it_sends(tmp_path: Path) -> None:
    route = ImageRoute(max_pixels=768 * 2048, max_bytes=20 * 2**20, tokens=OpenAITiles())
    counter = TokenCounter("gpt-4o", images=image_pricer(route))
    [attachment] = AttachmentStore(tmp_path / "attachments").admit([(png(1024, 1024), "shot.png")])
    message = HumanMessage(
        [{"type": "text", "text": "what is this?"}, to_reference_block(attachment)]
    )
    assert (
        counter.count_message(message)
        == PER_MESSAGE + tokens("user") + tokens("what is this?") + 765
    )  # 85 + 4 tiles of 170
    import base64

    inline = {
        "type": "image",
        "base64": base64.b64encode(png(512, 512)).decode(),
        "mime_type": "image/png",
    }
    assert counter.count_block(inline) == 255  # 85 + 1 tile, read from the picture's header
    small = TokenCounter(
        "gpt-4o",
        images=image_pricer(
            ImageRoute(max_pixels=512 * 512, max_bytes=2**20, tokens=OpenAITiles())
        ),
    )
    assert (
        small.count_message(message) == PER_MESSAGE + tokens("user") + tokens("what is this?") + 255
    )  # sent at 512x512


def test_a_long_history_is_not_counted_again_after_one_new_message() -> None:
    encoder = CountingEncoder()
    counter = TokenCounter("gpt-4o", encoder=encoder)
    history = []
    for n in range(300):
        history += [
            HumanMessage(f"{PROSE} {n}", id=f"h{n}"),
            ToolMessage(f"{JSON_TEXT} {n}", tool_call_id=f"c{n}", id=f"t{n}"),
        ]
    total = counter.count_messages(history)
    first = encoder.calls
    assert first >= len(history)  # every message went through the encoder once
    history.append(HumanMessage("one more", id="new"))
    assert counter.count_messages(history) == total + PER_MESSAGE + tokens("user") + tokens(
        "one more"
    )
    assert encoder.calls - first == 2  # the new message's role and text, nothing else
    # A message whose content changes under the same id is counted afresh.
    history[0] = HumanMessage(CJK, id="h0")
    counter.count_messages(history)
    assert encoder.calls - first == 4


def test_calibration_converges_on_a_provider_that_counts_differently() -> None:
    calibration = Calibration()
    assert calibration.apply(1_000) == 1_000  # nothing reported yet
    for counted in (900, 1_500, 2_200, 3_000, 4_100, 5_000):
        calibration.observe(round(counted * 1.3), counted)
    assert abs(calibration.factor - 1.3) < 0.01 and calibration.apply(10_000) == pytest.approx(
        13_000, rel=0.01
    )
    calibration.observe(1_000_000, 10)  # an absurd report is bounded
    assert calibration.factor <= HIGH


async def test_the_count_of_a_request_is_within_3_percent_of_the_reported_figure(
    server: ScriptedModelServer, make_settings, workspace: Path, api: str
) -> None:
    (workspace / "data.json").write_text(JSON_TEXT)
    (workspace / "notes.md").write_text((CJK + "\n") * 30)
    server.script(
        reply("Reading.", tool_calls=[tool_call("read_file", {"file_path": "data.json"})]),
        reply(tool_calls=[tool_call("read_file", {"file_path": "notes.md"})]),
        reply("Both read: " + CJK),
    )
    async with await Engine.open(make_settings(api, model="openai:gpt-4o")) as engine:
        runner = engine.runner(HeadlessApprover())
        async for _ in runner.run_turn(
            "read data.json and notes.md, then tell me what they say. " + PROSE
        ):
            pass
        calibration = engine.tokens.calibration(runner.session_id)
    assert calibration.samples == 3 and calibration.last_reported > 2_000
    assert abs(calibration.error) <= 0.03, (calibration.last_counted, calibration.last_reported)


async def test_estimates_follow_a_provider_that_reports_more(
    server: ScriptedModelServer, make_settings, workspace: Path
) -> None:
    server.input_scale = 1.3  # a tokenizer that needs 30% more tokens than o200k
    server.script(*(reply(f"answer {n}") for n in range(4)))
    async with await Engine.open(make_settings(model="openai:qwen3-coder")) as engine:
        runner = engine.runner(HeadlessApprover())
        factors = []
        for n in range(4):
            async for _ in runner.run_turn(f"question {n}: {PROSE}"):
                pass
            factors.append(engine.tokens.calibration(runner.session_id).factor)
        messages = await runner.messages()
        raw = engine.tokens.count_messages(messages)
        estimated = engine.tokens.estimate(raw, runner.session_id)
        report = await engine.context_report(runner.session_id)
    assert all(abs(f - 1.3) < 0.02 for f in factors), factors
    assert estimated == pytest.approx(raw * 1.3, rel=0.02)
    assert "×1.30" in report.counting
    # An OpenAI model is counted with its own encoding: its figures are not scaled.
    openai = TokenCounter("gpt-4o")
    openai.observe(1_300, 1_000)
    assert openai.estimate(1_000) == 1_000 and TokenCounter("qwen3-coder").estimate(1_000) == 1_000


def test_a_rank_file_that_is_not_openais_is_refused_and_counting_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dcode.context.tokens import encodings

    monkeypatch.setattr(encodings, "_rank_bytes", lambda name: b"aGVsbG8= 0\n")
    with pytest.raises(encodings.EncodingUnavailable, match="does not match tiktoken's hash"):
        encodings._build(O200K)
    monkeypatch.setattr(encodings, "_built", {})
    assert TokenCounter("gpt-4o").count_text("x" * 40) == 10  # by characters, rather than no count


def test_an_encoding_needs_nothing_more_of_its_ranks_once_built() -> None:
    """dcode empties the ranks dict it gives tiktoken (tiktoken keeps it only for pickling): if
    a tiktoken release comes to read it after construction, this fails before users do."""
    built = encoding(O200K)
    ids = built.encode_ordinary(CODE + CJK + PROSE)
    assert built.decode(ids) == CODE + CJK + PROSE and built.n_vocab == 200019
    assert (
        built.encode_single_token(b"hello") == 24912
        and built.decode_single_token_bytes(24912) == b"hello"
    )
    assert built.encode("<|endoftext|>", allowed_special="all") == [199999]
