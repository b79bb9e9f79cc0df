"""Prompt caching: the prefix a provider caches (the system message and the tool schemas) is the
same bytes on every request of a thread, across turns and across a resume in a new engine; and
``prompt_cache_key`` goes only where the endpoint accepts it.

A real session (SQLite checkpoints, the real ChatOpenAI client, the scripted server) runs on a
workspace with memory, a skill and a git repository that changes between turns.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from dcode.agent.approval import HeadlessApprover
from dcode.agent.engine import Engine
from dcode.agent.tools.spec import READ_FILE, WRITE_FILE
from tests.support.model_server import RecordedRequest, reply, tool_call


def prefix_parts(request: RecordedRequest) -> list[Any]:
    """What a provider's prompt cache keys on before the conversation: Chat Completions' leading
    system (or developer) messages, the Responses API's instructions and leading system items,
    and the tools on either wire."""
    body = request.body
    conversation = body["messages"] if request.wire == "chat" else body.get("input", [])
    leading = []
    for item in conversation:
        if item.get("role") not in {"system", "developer"}:
            break
        leading.append(item)
    parts: list[Any] = [body.get("instructions")] if request.wire == "responses" else []
    return [*parts, *leading, body["tools"]]


def prefix_bytes(request: RecordedRequest) -> bytes:
    """The prefix as the bytes the client sent: each part, serialized as the client serializes
    it, must appear in the raw body (so a re-ordered dict or a changed byte shows)."""
    pieces = []
    for part in prefix_parts(request):
        for separators in ((",", ":"), (", ", ": ")):
            piece = json.dumps(part, separators=separators, ensure_ascii=False).encode()
            if piece in request.raw_body:
                break
        else:
            raise AssertionError(
                f"a prefix part is not in the raw body as serialized: {part!r:.200}"
            )
        pieces.append(piece)
    return b"\n".join(pieces)


def git(workspace: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)


def project(workspace: Path) -> None:
    """A repository with memory and a skill, so each prompt section has something in it."""
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "AGENTS.md").write_text("Run the tests with `make test`.\n")
    (workspace / "Makefile").write_text("test:\n\tpytest\n")
    skill = workspace / ".dcode" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release\ndescription: How to cut a release.\n---\nTag it.\n"
    )


async def turns(engine: Engine, session_id: str | None, *prompts: str) -> str:
    runner = engine.runner(HeadlessApprover(), session_id=session_id)
    for prompt in prompts:
        async for _ in runner.run_turn(prompt):
            pass
    return runner.session_id


async def test_prefix_bytes_are_stable_across_turns_and_a_resume(
    server, make_settings, workspace: Path, api: str
) -> None:
    project(workspace)
    server.script(
        reply(
            tool_calls=[tool_call(WRITE_FILE.name, {"file_path": "notes.txt", "content": "one\n"})]
        ),
        reply("wrote it"),
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "notes.txt"})]),
        reply("read it"),
        reply("third"),
    )
    settings = make_settings(api)
    async with await Engine.open(settings) as engine:
        session_id = await turns(engine, None, "write notes", "read them back")
    # Between the two processes: the memory, the skills and the repository all change.
    (workspace / "AGENTS.md").write_text("Something else entirely.\n")
    (workspace / ".dcode" / "skills" / "release" / "SKILL.md").write_text(
        "---\nname: release\ndescription: Changed.\n---\n"
    )
    (workspace / "new.py").write_text("x = 1\n")
    async with await Engine.open(settings) as engine:
        await turns(engine, session_id, "and again")

    requests = server.requests
    assert len(requests) == 5 and {r.wire for r in requests} == {api}
    first = prefix_bytes(requests[0])
    assert b"make test" in first and b"release" in first and b"Git: branch" in first
    for later in requests[1:]:
        assert prefix_bytes(later) == first


def test_prefix_bytes_are_stable_across_processes(
    server, workspace: Path, home: Path, api: str
) -> None:
    """A resume is usually another process, with another hash seed: nothing in the prefix may
    depend on the order of a set."""
    from tests.test_cli_headless import model_args, run

    project(workspace)
    server.script(reply("one"), reply("two"))
    first = run(
        ["-p", "first", *model_args(server, api), "--output-format", "json"],
        workspace,
        home,
        env={"PYTHONHASHSEED": "1"},
    )
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    again = run(
        ["-p", "again", "-r", session_id, *model_args(server, api)],
        workspace,
        home,
        env={"PYTHONHASHSEED": "2"},
    )
    assert again.returncode == 0, again.stderr
    assert len(server.requests) == 2
    assert prefix_bytes(server.requests[1]) == prefix_bytes(server.requests[0])


async def test_prompt_cache_key_is_the_session_id_where_configured(
    server, make_settings, api: str
) -> None:
    server.script(
        reply(tool_calls=[tool_call(READ_FILE.name, {"file_path": "missing.txt"})]),
        reply("one"),
        reply("two"),
    )
    # The scripted server stands in for OpenAI's endpoint; the setting says it accepts the key.
    settings = make_settings(api, model_overrides={"openai:test-model": {"prompt_cache_key": True}})
    async with await Engine.open(settings) as engine:
        assert engine.resolved.prompt_cache_key
        first = await turns(engine, None, "first")
        second = await turns(engine, None, "second")  # another session on the same model
    keys = [request.body.get("prompt_cache_key") for request in server.requests]
    assert keys == [first, first, second] and first != second


async def test_no_prompt_cache_key_for_other_endpoints(server, make_settings, api: str) -> None:
    server.script(reply("one"), reply("two"))
    async with await Engine.open(make_settings(api)) as engine:  # openai on another base URL
        assert not engine.resolved.prompt_cache_key
        await turns(engine, None, "first")
    local = make_settings(api, model="ollama:qwen3-coder")
    async with await Engine.open(local) as engine:
        await turns(engine, None, "second")
    assert [request.model for request in server.requests] == ["test-model", "qwen3-coder"]
    assert all("prompt_cache_key" not in request.body for request in server.requests)


def test_which_endpoints_take_prompt_cache_key(make_settings) -> None:
    from dataclasses import replace

    from dcode.models.factory import resolve_model

    def takes(model: str, base_url: str | None = None, **override: bool) -> bool:
        overrides = {model: dict(override)} if override else {}
        settings = replace(
            make_settings(), model=model, base_url=base_url, model_overrides=overrides
        )
        return resolve_model(
            settings, env={"OPENAI_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}
        ).prompt_cache_key

    assert takes("openai:gpt-5.1")  # the preset: OpenAI's own endpoint
    assert takes("openai:gpt-5.1", "https://api.openai.com/v1/")
    assert not takes("openai:gpt-5.1", prompt_cache_key=False)  # switched off
    assert not takes("openai:gpt-5.1", "http://localhost:8080/v1")  # a proxy in OpenAI's name
    assert not takes("deepseek:deepseek-chat")
    assert not takes("ollama:qwen3-coder")
    assert takes("vllm:qwen3-coder", prompt_cache_key=True)  # a server the user says takes it
