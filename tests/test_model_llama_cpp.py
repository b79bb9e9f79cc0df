"""A server as strict as llama-cpp-python's: the scripted server in its strict mode
(``tests/support/llama_cpp_wire.py``) refuses what that server's request types refuse, answers
a prompt over its context with an empty event stream, and streams no usage.

Real sessions (the engine, SQLite, the real ChatOpenAI client) run against it: a turn with a
tool call is accepted whole, a request over the window ends the turn with one line that says
what to change, and the status figures come out estimated instead of missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.events import ErrorEvent, TurnFinished, UsageUpdated
from dcode.agent.tools.spec import READ_FILE
from dcode.models.message_dicts import plain_content
from dcode.tui.status import context_label
from tests.support.llama_cpp_wire import LlamaCppPython, request_problems
from tests.support.model_server import LLAMA_CPP_INVALID, ScriptedModelServer, reply, tool_call


async def one_turn(engine: Engine, prompt: str, session_id: str | None = None) -> list:
    runner = engine.runner(HeadlessApprover(), session_id=session_id)
    return [event async for event in runner.run_turn(prompt)]


async def test_a_tool_turn_is_taken_by_llama_cpp_python(
    server: ScriptedModelServer, make_settings, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("first line\n")
    server.imitate = LlamaCppPython(n_ctx=1_000_000)
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.txt"})]), reply("read it")
    )
    async with await Engine.open(make_settings()) as engine:
        events = await one_turn(engine, "read notes.txt")
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert [r.refused for r in server.requests] == [None, None]
    last = server.requests[-1].body["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool"]
    assert isinstance(last[0]["content"], str) and last[0]["content"].startswith("You are dcode")
    assert "content" not in last[2] and last[2]["tool_calls"]  # a tool call with nothing said
    assert events[-1].result == "read it"


def test_the_strict_server_refuses_what_llama_cpp_python_refuses(
    server: ScriptedModelServer,
) -> None:
    """The mirror itself: the shapes that server's types reject are named, the rest pass."""
    parts = [{"type": "text", "text": "rules"}]
    assert request_problems({"messages": [{"role": "system", "content": parts}]}) == [
        "messages.0.ChatCompletionRequestSystemMessage.content: Input should be a valid string"
    ]
    assert request_problems(
        {"messages": [{"role": "assistant", "content": None, "tool_calls": []}]}
    )
    assert request_problems({"messages": [{"role": "tool", "content": parts, "tool_call_id": "c"}]})
    assert request_problems({"messages": [{"role": "developer", "content": "x"}]})
    fine = [
        {"role": "system", "content": "rules"},
        {
            "role": "user",
            "content": [*parts, {"type": "image_url", "image_url": {"url": "data:,"}}],
        },
    ]
    assert request_problems({"messages": fine}) == []


async def test_a_system_message_in_parts_is_refused_by_the_strict_server(
    server: ScriptedModelServer,
) -> None:
    """As llama-cpp-python answers it: a 500 whose message is the validation error, no step used."""
    import openai

    server.imitate = LlamaCppPython()
    server.script(reply("never"))
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": [{"type": "text", "text": "rules"}]}],
    }
    with pytest.raises(
        openai.InternalServerError,
        match=r"ChatCompletionRequestSystemMessage\.content: Input should be a valid string",
    ):
        client.chat.completions.create(**body)
    assert server.requests[-1].refused == LLAMA_CPP_INVALID and len(server.remaining) == 1


def test_the_system_message_is_one_string_and_its_prefix_stays_when_a_part_is_added() -> None:
    """Sections are appended to the system message as parts: sent as one string, a request with
    one more section starts with the same bytes as the one before (the provider's cached prefix)."""
    base = [
        {"type": "text", "text": "You are terse."},
        {"type": "text", "text": "\n\n<memory>\nmake test\n</memory>"},
    ]
    before = plain_content({"role": "system", "content": base})
    after = plain_content(
        {
            "role": "system",
            "content": [*base, {"type": "text", "text": "\n\n<skills>\nrelease\n</skills>"}],
        }
    )
    assert before["content"] == "You are terse.\n\n<memory>\nmake test\n</memory>"
    assert json.dumps(after).startswith(json.dumps(before)[: -len('"}')])
    glued = plain_content(
        {
            "role": "tool",
            "content": [
                {"type": "text", "text": "answer"},
                {"type": "text", "text": "Earlier images: a.png"},
            ],
        }
    )
    assert (
        glued["content"] == "answer\nEarlier images: a.png"
    )  # parts that would run together get a newline
    marked = {
        "role": "user",
        "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}],
    }
    assert plain_content(marked) == marked  # a part with more than text keeps the list


async def test_a_request_over_the_servers_context_says_what_to_change(
    server: ScriptedModelServer, make_settings
) -> None:
    server.imitate = LlamaCppPython()  # n_ctx 2,048: less than dcode's first request
    server.script(reply("never seen"), reply("after the fix"))
    async with await Engine.open(make_settings()) as engine:
        events = await one_turn(engine, "hello there")
        errors = [e.message for e in events if isinstance(e, ErrorEvent)]
        assert len(errors) == 1, errors
        line = errors[0]
        assert "\n" not in line and "No generations" not in line
        assert "returned an empty answer" in line
        tokens = int(line.split("the request was ~")[1].split(" tokens")[0].replace(",", ""))
        assert 2048 < tokens < 20_000
        assert "the configured window is 32,768 (a guess)" in line
        assert (
            "--n_ctx 8192" in line and 'max_input_tokens under [models."openai:test-model"]' in line
        )
        finished = events[-1]
        assert isinstance(finished, TurnFinished) and finished.is_error
        # The message and the session survive: with a larger context the next turn goes on.
        server.imitate = LlamaCppPython(n_ctx=1_000_000)
        again = await one_turn(engine, "and now?", session_id=finished.session_id)
    assert again[-1].result == "after the fix"
    assert "hello there" in json.dumps(server.requests[-1].body["messages"])


async def test_an_answer_without_usage_gets_estimated_figures(
    server: ScriptedModelServer, make_settings
) -> None:
    server.imitate = LlamaCppPython(n_ctx=1_000_000)  # its streams carry no usage
    server.script(reply("a short answer"))
    async with await Engine.open(make_settings()) as engine:
        events = await one_turn(engine, "hi")
    usage = [e for e in events if isinstance(e, UsageUpdated)]
    assert len(usage) == 1 and usage[0].estimated
    assert usage[0].input_tokens > 500 and usage[0].output_tokens >= 1
    assert usage[0].context_tokens == usage[0].input_tokens + usage[0].output_tokens
    assert events[-1].input_tokens == usage[0].input_tokens


async def test_an_answer_with_usage_is_not_marked_estimated(
    server: ScriptedModelServer, make_settings
) -> None:
    server.script(reply("a short answer", usage=(1234, 5)))
    async with await Engine.open(make_settings()) as engine:
        events = await one_turn(engine, "hi")
    usage = [e for e in events if isinstance(e, UsageUpdated)]
    assert [(u.input_tokens, u.estimated) for u in usage] == [(1234, False)]


def test_the_status_bar_marks_an_estimate() -> None:
    assert context_label(1234, 10_000, estimated=True) == "Context ~12% · ~1.2k tokens"
    assert context_label(1234, None, estimated=True) == "Context ~1.2k tokens"
    assert context_label(1234, 10_000) == "Context 12% · 1.2k tokens"
    assert context_label(0, 10_000, estimated=True) == "Context –"


async def test_the_tui_says_what_to_change_and_then_shows_estimated_figures(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """As a user sees it: the empty stream is one line in the transcript naming the fix, and
    after the server's context is raised the status bar shows ``~`` figures, never ``–``."""
    from tests.test_tui_app_support import running_app

    server.imitate = LlamaCppPython()
    async with running_app(
        server, workspace, dcode_home, reply("never seen"), reply("after the fix")
    ) as h:
        await h.send("hello there")
        await h.idle()
        screen = " ".join(h.text().split())
        assert "returned an empty answer" in screen and "No generations" not in screen
        assert "--n_ctx 8192" in screen
        server.imitate = LlamaCppPython(n_ctx=1_000_000)
        await h.send("and now?")
        await h.idle()
        assert h.answers()[-1] == "after the fix"
        assert h.app.status.estimated and h.app.status.context_tokens > 500
        assert "Context ~" in h.text() and "Context –" not in h.text()
