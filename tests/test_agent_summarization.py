"""Compaction, tier 2: the older part of a long conversation summarized, archived, and sent as a summary."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from dcode.agent.compaction.record import effective_messages, summary_message
from dcode.agent.compaction.summary import (
    archive_section,
    latest_user_index,
    next_cutoff,
    safe_cutoff,
)
from dcode.agent.compaction_words import compacted_words
from dcode.agent.events import CompactionFinished
from dcode.agent.session_files import HISTORY_DIR
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from tests.support.model_server import fault, reply, tool_call


def ai_call(call_id: str) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "ls", "args": {"path": "."}, "id": call_id, "type": "tool_call"}],
    )


def test_a_cut_never_separates_results_from_their_call() -> None:
    messages = [
        HumanMessage(content="go"),
        ai_call("a"),
        ToolMessage(content="r", tool_call_id="a"),
        AIMessage(content="done"),
    ]
    assert safe_cutoff(messages, 2) == 1  # back to the call
    assert safe_cutoff(messages, 3) == 3 and safe_cutoff(messages, 0) == 0
    orphans = [
        ToolMessage(content="r", tool_call_id="x"),
        ToolMessage(content="s", tool_call_id="y"),
        HumanMessage(content="next"),
    ]
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
        AIMessage(
            content="checking",
            tool_calls=[
                {"name": "grep", "args": {"pattern": "a<b"}, "id": "c1", "type": "tool_call"}
            ],
        ),
        ToolMessage(content="x.py:1:a<b", tool_call_id="c1"),
    ]
    section = archive_section(messages, now=datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    assert section.startswith("## Summarized at 2026-12-01T12:00:00+00:00\n")
    assert '<message type="human">is a &lt; b?</message>' in section
    assert (
        '<content>checking</content>\n<tool_call id="c1" name="grep">{"pattern": "a&lt;b"}</tool_call></message>'
        in section
    )
    assert '<message type="tool">x.py:1:a&lt;b</message>' in section
    assert "earlier" not in section  # an earlier summary is not archived again


async def run(settings, prompt: str, **kw) -> list[dict]:  # the make_settings fixture's
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings,
        HeadlessRequest(prompt=prompt, output_format=OutputFormat.STREAM_JSON, **kw),
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_a_long_conversation_is_summarized_archived_and_goes_on(
    server, make_settings, dcode_home: Path, api: str
) -> None:
    long_answer = (
        "The answer, at length. " * 400
    )  # ~9,200 characters: past 85 % of a 2,000-token window
    server.script(
        reply(long_answer),
        reply("SUMMARY: the user asked for a long text and got it."),  # the summarizer
        reply("second answer"),
        reply("third answer"),
    )
    settings = make_settings(
        api, model_overrides={"openai:test-model": {"max_input_tokens": 2_000}}
    )
    first = await run(settings, "write me a long text")
    session_id = first[-1]["session_id"]
    second = await run(settings, "now something short", resume_id=session_id)
    kinds = [event["type"] for event in second]
    assert "compaction_started" in kinds and kinds.index("compaction_started") < kinds.index(
        "compaction_finished"
    )
    finished = next(event for event in second if event["type"] == "compaction_finished")
    assert (
        finished["messages_summarized"] == 2
        and finished["tokens_after"] < finished["tokens_before"]
    )
    assert second[-1]["result"] == "second answer"  # the summarizer's words never reach the answer
    streamed = "".join(event.get("text", "") for event in second if event["type"] == "text_delta")
    assert streamed == "second answer"  # nor the stream the transcript is painted from

    summarizer = server.transcript(1)
    assert (
        "compacting a coding session" in summarizer[0][1]
        and "write me a long text" in summarizer[1][1]
    )
    sent = server.transcript(2)
    assert [role for role, _ in sent] == ["system", "user", "user"]
    assert (
        "SUMMARY: the user asked for a long text" in sent[1][1]
        and sent[2][1] == "now something short"
    )
    assert long_answer[:200] not in "".join(text for _, text in sent)
    archive = dcode_home / HISTORY_DIR / f"{session_id}.md"
    assert (
        str(archive) in sent[1][1]
        and archive.read_text().count('<message type="human">write me a long text</message>') == 1
    )

    await run(settings, "and a third", resume_id=session_id)  # the summary stays in place
    third = server.transcript(3)
    assert "SUMMARY: the user asked" in third[1][1] and [
        text for role, text in third if role == "assistant"
    ] == ["second answer"]
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
    assert any(
        event["type"] == "notice" and "could not compact the conversation" in event["message"]
        for event in second
    )
    assert long_answer[:200] in "".join(
        text for _, text in server.transcript(2)
    )  # sent whole, as before
    # One try per user message: the turn's second step did not ask the summarizer again.
    assert len(server.requests) == 4


ONE = "The first answer, with the detail the summary will drop. " * 20  # ~1,140 characters
TWO = "The second answer. " * 10


async def test_offload_compacts_everything_before_the_latest_exchange(
    server, make_settings, dcode_home: Path
) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from dcode.agent.events import CompactionFinished, CompactionStarted, Notice
    from dcode.agent.token_count import count_messages

    server.script(reply(ONE), reply(TWO), reply("SUMMARY of one and two."), reply("three"))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        assert [type(e) for e in await runner.compact()] == [
            Notice
        ]  # an empty session: nothing to do
        for prompt in ("first", "second"):
            async for _ in runner.run_turn(prompt):
                pass
        saved = await runner.messages()
        events = await runner.compact()
        assert [type(e) for e in events] == [CompactionStarted, CompactionFinished]
        done = events[1]
        # before: the history as it was sent; after: the summary and the two kept messages,
        # counted by the session's counter (the model's encoding and its calibration)
        archive = dcode_home / HISTORY_DIR / f"{runner.session_id}.md"
        summary = summary_message(
            {"cutoff": 2, "summary": "SUMMARY of one and two.", "archive": str(archive)}
        )
        assert done.tokens_before == count_messages(saved, engine.tokens)
        assert (
            done.tokens_after
            == count_messages([summary, *saved[2:]], engine.tokens)
            < done.tokens_before
        )
        async for _ in runner.run_turn("third"):
            pass
        assert len(await runner.messages()) == 6
    # first and its answer are summarized; "second" (the latest exchange) stays verbatim
    assert (done.messages_summarized, done.messages_kept, done.archive_path) == (2, 2, str(archive))
    assert (
        archive.read_text().count(f'<message type="ai">{ONE}</message>') == 1
        and TWO not in archive.read_text()
    )
    sent = server.transcript(3)
    assert [role for role, _ in sent] == ["system", "user", "user", "assistant", "user"]
    assert sent[1][1] == summary.content and [text for _, text in sent[2:]] == [
        "second",
        TWO,
        "third",
    ]


async def test_a_summary_longer_than_what_it_replaces_is_refused_and_nothing_is_written(
    server, make_settings, dcode_home: Path
) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.compaction.record import read_compaction
    from dcode.agent.compaction.summary import NOT_SMALLER
    from dcode.agent.engine import Engine
    from dcode.agent.events import CompactionRefused, CompactionStarted

    wordy = "SUMMARY: " + "a summary that says more than the conversation did. " * 60
    server.script(reply(ONE), reply(TWO), reply(wordy), reply("three"))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        for prompt in ("first", "second"):
            async for _ in runner.run_turn(prompt):
                pass
        events = await runner.compact()
        assert [type(e) for e in events] == [CompactionStarted, CompactionRefused]
        refused = events[1]
        assert (
            refused.reason == NOT_SMALLER
            and refused.tokens_after >= refused.tokens_before
            and refused.messages_summarized == 2
        )
        snapshot = await engine.graph.aget_state(runner.config)
        assert read_compaction(snapshot.values) is None  # the thread's state is as it was
        async for _ in runner.run_turn("third"):
            pass
    assert not (
        dcode_home / HISTORY_DIR / f"{runner.session_id}.md"
    ).exists()  # nor was the archive appended
    assert [text for _, text in server.transcript(3)[1:]] == [
        "first",
        ONE,
        "second",
        TWO,
        "third",
    ]  # sent whole


async def test_a_history_smaller_than_any_summary_is_refused_without_asking_the_model(
    server, make_settings, dcode_home: Path
) -> None:
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.compaction.summary import SUMMARY_ALONE
    from dcode.agent.engine import Engine
    from dcode.agent.events import CompactionRefused

    server.script(reply("one"), reply("two"))
    async with await Engine.open(make_settings()) as engine:
        runner = engine.runner(HeadlessApprover())
        for prompt in ("first", "second"):
            async for _ in runner.run_turn(prompt):
                pass
        [refused] = await runner.compact()
    assert isinstance(refused, CompactionRefused) and refused.reason == SUMMARY_ALONE
    assert (
        refused.tokens_after >= refused.tokens_before
    )  # the preamble alone: "57 → 109 tokens" is not a compaction
    assert len(server.requests) == 2 and not (dcode_home / HISTORY_DIR).exists()


async def test_the_model_can_compact_once_the_context_is_half_way_to_the_trigger(
    server, make_settings, api: str
) -> None:
    from dcode.agent.tools.compact import NOTHING_YET

    settings = make_settings(
        api, model_overrides={"openai:test-model": {"max_input_tokens": 10_000}}
    )
    server.script(
        reply(
            "first answer: " + "the details, " * 300, usage=(1_000, 10)
        ),  # long enough for a summary to shrink it
        reply(
            tool_calls=[tool_call("compact_conversation")], usage=(1_200, 10)
        ),  # too early: 1,210 < 4,250
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
    assert (
        any(event["type"] == "compaction_finished" for event in later)
        and later[-1]["result"] == "compacted, carrying on"
    )
    [result] = [text for role, text in server.transcript(5) if role == "tool"][-1:]
    finished = next(event for event in later if event["type"] == "compaction_finished")
    assert finished["tokens_after"] < finished["tokens_before"] and finished[
        "archive_path"
    ].endswith(f"conversation_history/{session_id}.md")
    facts = CompactionFinished(**{key: value for key, value in finished.items() if key != "type"})
    assert (
        result == f"Conversation compacted: {compacted_words(facts)}."
    )  # the facts /offload shows
    assert (
        f"summarized {facts.messages_summarized} messages: history {facts.tokens_before:,} → {facts.tokens_after:,} tokens"
        in result
    )
    assert (
        f"kept the last {facts.messages_kept} messages verbatim" in result
        and facts.archive_path in result
    )
    assert "SUMMARY: an early question was answered." in server.transcript(5)[1][1]
    assert ("user", "an early question") not in server.transcript(5)


async def test_the_model_is_told_when_its_compaction_is_refused(
    server, make_settings, dcode_home: Path, api: str
) -> None:
    settings = make_settings(
        api, model_overrides={"openai:test-model": {"max_input_tokens": 10_000}}
    )
    wordy = "SUMMARY: " + "a summary that says more than the conversation did. " * 200
    server.script(
        reply(ONE, usage=(5_000, 10)),
        reply(tool_calls=[tool_call("compact_conversation")], usage=(5_000, 10)),
        reply(wordy),  # the summarizer
        reply("refused, carrying on"),
        reply("next"),
    )
    first = await run(settings, "an early question")
    session_id = first[-1]["session_id"]
    later = await run(settings, "now compact", resume_id=session_id)
    [refused] = [event for event in later if event["type"] == "compaction_refused"]
    [result] = [text for role, text in server.transcript(3) if role == "tool"]
    assert result.startswith(
        "Compaction refused: summarizing 2 messages would take the history from "
    )
    assert (
        f"{refused['tokens_before']:,} to {refused['tokens_after']:,} tokens" in result
        and "unchanged" in result
    )
    await run(settings, "go on", resume_id=session_id)
    assert ("assistant", ONE) in server.transcript(4) and not (dcode_home / HISTORY_DIR).exists()


async def test_the_summary_trigger_and_keep_window_can_count_messages(
    server, make_settings, dcode_home: Path
) -> None:
    from dcode.settings.compaction_triggers import Threshold

    server.script(reply(ONE), reply(TWO), reply("SUMMARY: two exchanges."), reply("three"))
    settings = make_settings(
        compact_at=Threshold.parse("5 messages"), compact_keep=Threshold.parse("1 message")
    )
    first = await run(
        settings, "first"
    )  # far below the window in tokens: only the count can trigger
    second = await run(settings, "second", resume_id=first[-1]["session_id"])
    assert not any(
        event["type"] == "compaction_finished" for event in first + second
    )  # 1, then 3 messages
    third = await run(
        settings, "third", resume_id=first[-1]["session_id"]
    )  # 5 messages: summarized
    [finished] = [event for event in third if event["type"] == "compaction_finished"]
    assert (finished["messages_summarized"], finished["messages_kept"]) == (4, 1)
    assert [role for role, _ in server.transcript(3)] == [
        "system",
        "user",
        "user",
    ] and server.transcript(3)[2][1] == "third"


async def test_the_window_trigger_refuses_a_summary_that_does_not_help_and_tries_once_per_message(
    server, make_settings, dcode_home: Path
) -> None:
    long_answer = "The answer, at length. " * 400
    wordy = "SUMMARY: " + "more words than the conversation had. " * 400
    server.script(
        reply(long_answer),
        reply(wordy),
        reply(tool_calls=[tool_call("ls", {"path": "."})]),
        reply("second answer"),
    )
    settings = make_settings(model_overrides={"openai:test-model": {"max_input_tokens": 2_000}})
    first = await run(settings, "write me a long text")
    second = await run(settings, "now look around", resume_id=first[-1]["session_id"])
    [refused] = [event for event in second if event["type"] == "compaction_refused"]
    assert (
        refused["tokens_after"] >= refused["tokens_before"]
        and second[-1]["result"] == "second answer"
    )
    assert long_answer[:200] in "".join(
        text for _, text in server.transcript(2)
    )  # sent whole, as before
    assert (
        len(server.requests) == 4 and not (dcode_home / HISTORY_DIR).exists()
    )  # no second summary at the next step


class _Visited(list):
    """A history that counts the messages looked at, however they are reached."""

    visited = 0

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        _Visited.visited += 1
        return super().__getitem__(index)

    def __iter__(self):  # type: ignore[no-untyped-def]
        for item in super().__iter__():
            _Visited.visited += 1
            yield item


def test_the_latest_user_message_is_found_from_the_end_of_a_long_history() -> None:
    # It is looked for before every model call, on the whole thread: a long session's turn
    # must not walk its thousands of messages to find the prompt just sent.
    history = [HumanMessage(f"q{i}") if i % 3 == 0 else AIMessage(f"a{i}") for i in range(6_000)]
    history += [
        HumanMessage("the prompt"),
        AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
        ToolMessage("out", tool_call_id="c1"),
    ]
    _Visited.visited = 0
    assert latest_user_index(_Visited(history)) == 6_000
    assert _Visited.visited <= 3
    assert latest_user_index([AIMessage("a"), ToolMessage("t", tool_call_id="x")]) == -1
    assert latest_user_index([]) == -1
