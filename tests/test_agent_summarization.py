"""Compaction, tier 2: the older part of a long conversation summarized, archived, and sent as a summary."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.agent.middleware.summarization import (
    HISTORY_DIR,
    archive_section,
    effective_messages,
    next_cutoff,
    safe_cutoff,
    summary_message,
)
from dcode.headless import HeadlessRequest, OutputFormat, run_headless
from tests.support.model_server import fault, reply, tool_call


def ai_call(call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "ls", "args": {"path": "."}, "id": call_id, "type": "tool_call"}])


def test_a_cut_never_separates_results_from_their_call() -> None:
    messages = [HumanMessage(content="go"), ai_call("a"), ToolMessage(content="r", tool_call_id="a"), AIMessage(content="done")]
    assert safe_cutoff(messages, 2) == 1  # back to the call
    assert safe_cutoff(messages, 3) == 3 and safe_cutoff(messages, 0) == 0
    orphans = [ToolMessage(content="r", tool_call_id="x"), ToolMessage(content="s", tool_call_id="y"), HumanMessage(content="next")]
    assert safe_cutoff(orphans, 1) == 2  # no call before them: past them


def test_chained_cuts_count_in_the_whole_history() -> None:
    first = next_cutoff(None, 6)
    second = next_cutoff({"cutoff": first}, 7)  # 7 in [summary, *messages[6:]] is 12 in the history
    assert (first, second, next_cutoff({"cutoff": second}, 7)) == (6, 12, 18)
    history = [HumanMessage(content=f"m{n}") for n in range(20)]
    sent = effective_messages(history, {"cutoff": 12, "summary": "S", "archive": "/h/s.md"})
    assert [m.content for m in sent[1:]] == [f"m{n}" for n in range(12, 20)]
    assert "/h/s.md" in sent[0].content and "<summary>\nS\n</summary>" in sent[0].content
    assert "saved" not in summary_message({"summary": "S", "archive": None}).content


def test_the_archive_is_markdown_with_escaped_messages() -> None:
    messages = [
        summary_message({"summary": "earlier", "archive": None}),
        HumanMessage(content="is a < b?"),
        AIMessage(content="checking", tool_calls=[{"name": "grep", "args": {"pattern": "a<b"}, "id": "c1", "type": "tool_call"}]),
        ToolMessage(content="x.py:1:a<b", tool_call_id="c1"),
    ]
    section = archive_section(messages, now=datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    assert section.startswith("## Summarized at 2026-12-01T12:00:00+00:00\n")
    assert '<message type="human">is a &lt; b?</message>' in section
    assert '<content>checking</content>\n<tool_call id="c1" name="grep">{"pattern": "a&lt;b"}</tool_call></message>' in section
    assert '<message type="tool">x.py:1:a&lt;b</message>' in section
    assert "earlier" not in section  # an earlier summary is not archived again


async def run(settings, prompt: str, **kw) -> list[dict]:  # noqa: ANN001, ANN003 - the make_settings fixture's
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(settings, HeadlessRequest(prompt=prompt, output_format=OutputFormat.STREAM_JSON, **kw), out=out, err=err)
    assert code == 0, err.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_a_long_conversation_is_summarized_archived_and_goes_on(server, make_settings, dcode_home: Path, api: str) -> None:
    long_answer = "The answer, at length. " * 400  # ~9,200 characters: past 85 % of a 2,000-token window
    server.script(
        reply(long_answer),
        reply("SUMMARY: the user asked for a long text and got it."),  # the summarizer
        reply("second answer"),
        reply("third answer"),
    )
    settings = make_settings(api, model_overrides={"openai:test-model": {"max_input_tokens": 2_000}})
    first = await run(settings, "write me a long text")
    session_id = first[-1]["session_id"]
    second = await run(settings, "now something short", resume_id=session_id)
    kinds = [event["type"] for event in second]
    assert "compaction_started" in kinds and kinds.index("compaction_started") < kinds.index("compaction_finished")
    finished = next(event for event in second if event["type"] == "compaction_finished")
    assert finished["messages_summarized"] == 2 and finished["tokens_after"] < finished["tokens_before"]
    assert second[-1]["result"] == "second answer"  # the summarizer's words never reach the answer
    streamed = "".join(event.get("text", "") for event in second if event["type"] == "text_delta")
    assert streamed == "second answer"  # nor the stream the transcript is painted from

    summarizer = server.transcript(1)
    assert "compacting a coding session" in summarizer[0][1] and "write me a long text" in summarizer[1][1]
    sent = server.transcript(2)
    assert [role for role, _ in sent] == ["system", "user", "user"]
    assert "SUMMARY: the user asked for a long text" in sent[1][1] and sent[2][1] == "now something short"
    assert long_answer[:200] not in "".join(text for _, text in sent)
    archive = dcode_home / HISTORY_DIR / f"{session_id}.md"
    assert str(archive) in sent[1][1] and archive.read_text().count('<message type="human">write me a long text</message>') == 1

    await run(settings, "and a third", resume_id=session_id)  # the summary stays in place
    third = server.transcript(3)
    assert "SUMMARY: the user asked" in third[1][1] and [text for role, text in third if role == "assistant"] == ["second answer"]
    from dcode.agent.engine import Engine

    async with await Engine.open(settings) as engine:
        saved = await engine.runner(None, session_id=session_id).messages()  # type: ignore[arg-type]
    assert saved[1].text == long_answer and len(saved) == 6  # the session keeps every message


async def test_a_failed_summary_leaves_the_conversation_as_it_was(server, make_settings) -> None:
    long_answer = "The answer, at length. " * 400
    server.script(
        reply(long_answer),
        fault.status(400, message="summaries are not allowed"),
        reply(tool_calls=[tool_call("ls", {"path": "."})]),
        reply("second answer"),
    )
    settings = make_settings(model_overrides={"openai:test-model": {"max_input_tokens": 2_000}})
    first = await run(settings, "write me a long text")
    second = await run(settings, "now look around", resume_id=first[-1]["session_id"])
    assert second[-1]["result"] == "second answer"
    assert any(event["type"] == "notice" and "could not compact the conversation" in event["message"] for event in second)
    assert long_answer[:200] in "".join(text for _, text in server.transcript(2))  # sent whole, as before
    # One try per user message: the turn's second step did not ask the summarizer again.
    assert len(server.requests) == 4


async def test_offload_compacts_everything_before_the_latest_exchange(server, make_settings) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import CompactionFinished, CompactionStarted, Notice

    server.script(reply("one"), reply("two"), reply("SUMMARY of one and two."), reply("three"))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        assert [type(e) for e in await runner.compact()] == [Notice]  # an empty session: nothing to do
        for prompt in ("first", "second"):
            async for _ in runner.run_turn(prompt):
                pass
        events = await runner.compact()
        assert [type(e) for e in events] == [CompactionStarted, CompactionFinished]
        assert events[1].messages_summarized == 2  # first and its answer; "second" is the latest exchange
        async for _ in runner.run_turn("third"):
            pass
        assert len(await runner.messages()) == 6
    sent = server.transcript(3)
    assert [role for role, _ in sent] == ["system", "user", "user", "assistant", "user"]
    assert "SUMMARY of one and two." in sent[1][1] and [text for _, text in sent[2:]] == ["second", "two", "third"]


async def test_the_model_can_compact_once_the_context_is_half_way_to_the_trigger(server, make_settings, api: str) -> None:
    from dcode.agent.tools.compact import NOTHING_YET

    settings = make_settings(api, model_overrides={"openai:test-model": {"max_input_tokens": 10_000}})
    server.script(
        reply("first answer", usage=(1_000, 10)),
        reply(tool_calls=[tool_call("compact_conversation")], usage=(1_200, 10)),  # too early: 1,210 < 4,250
        reply("not yet, then"),
        reply(tool_calls=[tool_call("compact_conversation")], usage=(5_000, 10)),
        reply("SUMMARY: an early question was answered."),  # the summarizer
        reply("compacted, carrying on"),
    )
    first = await run(settings, "an early question")
    session_id = first[-1]["session_id"]
    early = await run(settings, "compact please", resume_id=session_id)
    assert [text for role, text in server.transcript(2) if role == "tool"] == [NOTHING_YET]
    assert not any(event["type"] == "compaction_finished" for event in early)
    later = await run(settings, "now compact", resume_id=session_id)
    assert any(event["type"] == "compaction_finished" for event in later) and later[-1]["result"] == "compacted, carrying on"
    [result] = [text for role, text in server.transcript(5) if role == "tool"][-1:]
    assert result.startswith("Conversation compacted: summarized") and "conversation_history" in result
    assert "SUMMARY: an early question was answered." in server.transcript(5)[1][1]
    assert ("user", "an early question") not in server.transcript(5)
