"""Hooks in Claude Code's format through dcode's real loop: real bash and Python hook scripts,
real ChatOpenAI against the scripted server, real tools and SQLite."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.settings.config import ApprovalMode, load_settings
from dcode.settings.hook_sources import HookCommand
from dcode.settings.trust import ProjectFiles, TrustStore
from tests.support.model_server import reply, tool_call


async def headless(settings, prompt: str, fmt: OutputFormat = OutputFormat.STREAM_JSON):
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings, HeadlessRequest(prompt=prompt, output_format=fmt), out=out, err=err
    )
    return code, out.getvalue(), err.getvalue()


def lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def script(folder: Path, name: str, text: str) -> str:
    """A hook script in ``folder``, executable; returns the command that runs it."""
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return str(path) if name.endswith(".sh") else f"{sys.executable} {path}"


def hook(event: str, command: str, matcher: str = "", timeout: float = 60.0) -> HookCommand:
    return HookCommand(event, matcher, command, timeout, "test config")


def tool_texts(server, index: int) -> list[str]:
    return [text for role, text in server.transcript(index) if role == "tool"]


BLOCK_RM = """#!/usr/bin/env bash
input=$(cat)
if printf '%s' "$input" | grep -q '"command": *"rm '; then
  echo "rm is not allowed here; move files to trash/ instead" >&2
  exit 2
fi
exit 0
"""


async def test_a_pre_tool_use_hook_blocks_rm(server, make_settings, workspace: Path, tmp_path):
    (workspace / "keep.txt").write_text("precious\n")
    command = script(tmp_path, "block_rm.sh", BLOCK_RM)
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "rm keep.txt"})]),
        reply("could not remove it"),
    )
    settings = make_settings(approve=ApprovalMode.ALL, hooks=(hook("PreToolUse", command, "Bash"),))
    code, out, _err = await headless(settings, "delete keep.txt")
    assert code == 0
    assert (workspace / "keep.txt").read_text() == "precious\n"
    assert tool_texts(server, 1) == ["denied: rm is not allowed here; move files to trash/ instead"]
    events = lines(out)
    started = [e for e in events if e["type"] == "hook_started"]
    finished = [e for e in events if e["type"] == "hook_finished"]
    assert [e["event"] for e in started] == ["PreToolUse"]
    assert finished[0]["exit_code"] == 2 and str(finished[0]["outcome"]).startswith("blocked")
    assert any(
        e["type"] == "notice" and "PreToolUse hook blocked execute" in str(e["message"])
        for e in events
    )


REWRITE_NPM = """import json, sys
data = json.load(sys.stdin)
command = data["tool_input"].get("command", "")
if data["tool_name"] == "Bash" and command == "npm test":
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"command": "npm test -- --ci"},
    }}))
"""


async def test_a_pre_tool_use_hook_rewrites_the_command(
    server, make_settings, workspace: Path, tmp_path
):
    """The rewritten call is the one asked about, run, and shown in a notice."""
    command = script(tmp_path, "rewrite.py", REWRITE_NPM)
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "npm test"})]),
        reply("tests ran"),
    )
    settings = make_settings(
        approve=ApprovalMode.MANUAL, hooks=(hook("PreToolUse", command, "execute"),)
    )
    code, out, _ = await headless(settings, "run the tests")
    assert code == 0
    events = lines(out)
    asked = next(e for e in events if e["type"] == "approval_requested")
    assert asked["args"] == {"command": "npm test -- --ci"}  # headless denies in manual mode
    assert any(
        e["type"] == "notice"
        and "changed the call" in str(e["message"])
        and "--ci" in str(e["message"])
        for e in events
    )


async def test_a_rewritten_command_runs(
    server, make_settings, workspace: Path, tmp_path, monkeypatch
):
    command = script(tmp_path, "rewrite.py", REWRITE_NPM)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir, "npm", '#!/usr/bin/env bash\necho "npm ran with: $*"\n')
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "npm test"})]),
        reply("tests ran"),
    )
    settings = make_settings(
        approve=ApprovalMode.ALL,
        hooks=(hook("PreToolUse", command, "Bash"),),
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code, _, err = await headless(settings, "run the tests", OutputFormat.JSON)
    assert code == 0, err
    assert "npm ran with: test -- --ci" in tool_texts(server, 1)[0]
    assert "changed the call" in err


FORMATTER = """import json, pathlib, sys
data = json.load(sys.stdin)
path = pathlib.Path(data["tool_input"]["file_path"])
if not path.is_absolute():
    path = pathlib.Path(data["cwd"]) / path
path.write_text(path.read_text().replace("\\t", "    "))
"""


async def test_a_post_tool_use_formatter_changes_the_file(
    server, make_settings, workspace: Path, tmp_path
):
    command = script(tmp_path, "format.py", FORMATTER)
    server.script(
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": "a.py", "content": "if x:\n\ty = 1\n"})
            ]
        ),
        reply("written"),
    )
    settings = make_settings(hooks=(hook("PostToolUse", command, "Write|Edit"),))
    code, out, _ = await headless(settings, "write a.py")
    assert code == 0
    assert (workspace / "a.py").read_text() == "if x:\n    y = 1\n"
    finished = [e for e in lines(out) if e["type"] == "hook_finished"]
    assert [(e["event"], e["exit_code"]) for e in finished] == [("PostToolUse", 0)]


ADD_CONTEXT = """import json, sys
data = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "UserPromptSubmit",
    "additionalContext": "the build uses make, not npm (prompt was: " + data["prompt"] + ")",
}}))
"""


async def test_a_user_prompt_submit_hook_adds_context(server, make_settings, tmp_path):
    command = script(tmp_path, "context.py", ADD_CONTEXT)
    server.script(reply("noted"))
    settings = make_settings(hooks=(hook("UserPromptSubmit", command),))
    code, _, _ = await headless(settings, "how do I build?", OutputFormat.JSON)
    assert code == 0
    user = [text for role, text in server.transcript(0) if role == "user"][-1]
    assert user.startswith("how do I build?")
    assert "the build uses make, not npm (prompt was: how do I build?)" in user


async def test_a_user_prompt_submit_block_goes_to_the_user(server, make_settings, tmp_path):
    command = script(
        tmp_path, "no.sh", "#!/usr/bin/env bash\necho 'no secrets in prompts' >&2\nexit 2\n"
    )
    settings = make_settings(hooks=(hook("UserPromptSubmit", command),))
    code, out, err = await headless(settings, "my key is sk-123", OutputFormat.JSON)
    assert code == 1
    assert server.requests == []  # the model never saw it
    assert "no secrets in prompts" in err
    assert json.loads(out)["is_error"] is True


STOP_ONCE = """import json, sys
data = json.load(sys.stdin)
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "run the tests before you stop"}))
"""


async def test_a_stop_hook_makes_the_agent_go_on_once(server, make_settings, tmp_path):
    command = script(tmp_path, "stop.py", STOP_ONCE)
    server.script(reply("done, I think"), reply("tests pass now"))
    settings = make_settings(hooks=(hook("Stop", command),))
    code, out, _ = await headless(settings, "fix it")
    assert code == 0
    events = lines(out)
    assert events[-1]["result"] == "tests pass now"
    assert len(server.requests) == 2
    went_on = [e for e in events if e["type"] == "notice" and "go on" in str(e["message"])]
    assert [e["message"] for e in went_on] == [
        "a Stop hook asked the agent to go on: run the tests before you stop"
    ]
    user = [text for role, text in server.transcript(1) if role == "user"]
    assert user[-1] == "Stop hook: run the tests before you stop"


async def test_a_hook_that_hangs_is_ended_and_the_turn_goes_on(
    server, make_settings, workspace: Path, tmp_path
):
    pid_file = tmp_path / "hang.pid"
    command = script(tmp_path, "hang.sh", f"#!/usr/bin/env bash\necho $$ > {pid_file}\nsleep 300\n")
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "echo went on"})]), reply("ok")
    )
    settings = make_settings(
        approve=ApprovalMode.ALL, hooks=(hook("PreToolUse", command, timeout=0.5),)
    )
    started = time.monotonic()
    code, out, _ = await headless(settings, "go")
    assert code == 0 and time.monotonic() - started < 30
    assert "went on" in tool_texts(server, 1)[0]
    events = lines(out)
    assert any(
        e["type"] == "notice" and "timed out and was ended" in str(e["message"]) for e in events
    )
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_hook_that_prints_garbage_gives_one_notice(server, make_settings, tmp_path):
    command = script(tmp_path, "garbage.sh", "#!/usr/bin/env bash\necho '{not json at all'\n")
    server.script(
        reply(tool_calls=[tool_call("read_file", {"file_path": "missing.txt"})]), reply("ok")
    )
    settings = make_settings(hooks=(hook("PreToolUse", command, "Read"),))
    code, out, _ = await headless(settings, "read it")
    assert code == 0
    notices = [e for e in lines(out) if e["type"] == "notice" and "not JSON" in str(e["message"])]
    assert len(notices) == 1
    assert len(server.requests) == 2  # the call ran and the turn went on


async def test_hook_environment_has_the_project_dir_and_no_keys(
    server, make_settings, workspace: Path, tmp_path, monkeypatch
):
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "secret-value")
    seen = tmp_path / "env.txt"
    command = f"env > {seen}"
    server.script(reply("hi"))
    settings = make_settings(hooks=(hook("UserPromptSubmit", command),))
    code, _, _ = await headless(settings, "hello", OutputFormat.JSON)
    assert code == 0
    env = seen.read_text()
    assert f"CLAUDE_PROJECT_DIR={workspace}" in env and f"DCODE_PROJECT_DIR={workspace}" in env
    assert "secret-value" not in env and "test-key" not in env


def allowing_hook_and_a_touch(server, folder: Path) -> str:
    """A PreToolUse hook that answers ``allow`` (its command), and a model that runs
    ``touch made.txt`` then answers ``ok``."""
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "touch made.txt"})]), reply("ok")
    )
    return script(
        folder,
        "allow.sh",
        """#!/usr/bin/env bash
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'
""",
    )


async def test_a_hook_allow_does_not_override_a_deny_rule(
    server, make_settings, workspace: Path, tmp_path
):
    allow = allowing_hook_and_a_touch(server, tmp_path)
    (workspace / ".claude").mkdir()
    base = make_settings(hooks=(hook("PreToolUse", allow),))
    settings = replace(base, approve=ApprovalMode.EDITS)
    from dcode.settings.permission_sources import RuleText

    denied = replace(settings, permission_rules=(RuleText("deny", "Bash(touch:*)", "test"),))
    code, _, _ = await headless(denied, "touch it", OutputFormat.JSON)
    assert code == 0 and not (workspace / "made.txt").exists()
    assert tool_texts(server, 1)[0].startswith("denied:")


async def test_a_hook_allow_runs_what_the_mode_would_ask(
    server, make_settings, workspace: Path, tmp_path
):
    allow = allowing_hook_and_a_touch(server, tmp_path)
    settings = make_settings(approve=ApprovalMode.MANUAL, hooks=(hook("PreToolUse", allow),))
    code, _, _ = await headless(settings, "touch it", OutputFormat.JSON)
    assert code == 0 and (workspace / "made.txt").exists()


def hostile_project(workspace: Path, marker: Path) -> None:
    """A cloned repository whose Claude settings and dcode config both carry hooks."""
    claude = workspace / ".claude"
    claude.mkdir()
    every = {"hooks": [{"type": "command", "command": f"touch {marker}"}]}
    (claude / "settings.json").write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [every], "SessionStart": [every]}})
    )
    (workspace / ".dcode").mkdir()
    (workspace / ".dcode" / "config.toml").write_text(
        f'[[hooks.UserPromptSubmit]]\nhooks = [{{type = "command", command = "touch {marker}"}}]\n'
    )


async def test_an_untrusted_projects_hooks_do_not_run(
    server, workspace: Path, dcode_home: Path, tmp_path, monkeypatch
):
    marker = tmp_path / "ran"
    hostile_project(workspace, marker)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    settings = load_settings(
        workspace=workspace,
        cli={"base_url": server.base_url, "model": "openai:test-model"},
    )
    assert settings.hooks == () and len(settings.skipped_hooks) == 3
    server.script(reply("hi"))
    code, _, err = await headless(settings, "hello", OutputFormat.JSON)
    assert code == 0
    assert not marker.exists()
    warned = [line for line in err.splitlines() if "warning" in line]
    assert warned == [  # one line: the config's hooks are not "settings ignored" too
        "dcode: warning: 3 project hooks skipped: the project is not trusted (trust it with `dcode trust`)"
    ]


async def test_a_trusted_projects_hooks_run(
    server, workspace: Path, dcode_home: Path, tmp_path, monkeypatch
):
    marker = tmp_path / "ran"
    hostile_project(workspace, marker)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    files = ProjectFiles.read(workspace)
    TrustStore(dcode_home).trust(workspace, files.digest)
    settings = load_settings(
        workspace=workspace, cli={"base_url": server.base_url, "model": "openai:test-model"}
    )
    assert len(settings.hooks) == 3 and settings.skipped_hooks == ()
    server.script(reply("hi"))
    code, _, _ = await headless(settings, "hello", OutputFormat.JSON)
    assert code == 0 and marker.exists()
    # Editing the hooks changes the digest: the project is asked about again.
    settings_file = workspace / ".claude" / "settings.json"
    settings_file.write_text(settings_file.read_text().replace("touch", "touch -c"))
    again = load_settings(
        workspace=workspace, cli={"base_url": server.base_url, "model": "openai:test-model"}
    )
    assert again.hooks == () and len(again.skipped_hooks) == 3


SUBAGENT_ONCE = """import json, sys
data = json.load(sys.stdin)
if not data["stop_hook_active"]:
    print("check the tests directory too", file=sys.stderr)
    sys.exit(2)
"""


async def test_a_subagent_stop_hook_makes_the_subagent_go_on_once(server, make_settings, tmp_path):
    from tests.test_subagents import JOB, PROMPT, task_call

    command = script(tmp_path, "substop.py", SUBAGENT_ONCE)
    server.script(
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply("first look").answering(JOB),
        reply("found it in tests too").answering(JOB),
        reply("done").answering(PROMPT),
    )
    settings = make_settings(hooks=(hook("SubagentStop", command),))
    code, out, err = await headless(settings, PROMPT)
    assert code == 0, err
    assert any("found it in tests too" in text for text in tool_texts(server, 3))
    finished = [e for e in lines(out) if e["type"] == "hook_finished"]
    assert [(e["event"], e["exit_code"], e["agent"]) for e in finished] == [
        ("SubagentStop", 2, ["task:1"]),
        ("SubagentStop", 0, ["task:1"]),
    ]


async def test_debug_logs_a_hooks_stdin_and_stdout(server, make_settings, caplog) -> None:
    """``--debug`` routes dcode's DEBUG records to stderr; the hooks' stdin and stdout are
    among them."""
    caplog.set_level("DEBUG", logger="dcode.agent.hooks.runner")
    server.script(reply("hi"))
    settings = make_settings(hooks=(hook("UserPromptSubmit", "echo said-on-stdout"),))
    code, _, _ = await headless(settings, "hello there", OutputFormat.JSON)
    assert code == 0
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert '"prompt": "hello there"' in logged and '"hook_event_name": "UserPromptSubmit"' in logged
    assert "stdout: said-on-stdout" in logged


def test_a_replayed_thread_shows_hook_messages_as_notices_and_prompts_as_typed() -> None:
    from langchain_core.messages import HumanMessage

    from dcode.agent.events import Notice, UserMessage
    from dcode.agent.hooks.context_text import with_context
    from dcode.agent.markers import HOOK_MARKER
    from dcode.agent.stream import StreamTranslator

    translator = StreamTranslator(None)
    prompt = HumanMessage(content=with_context("how do I build?", ["use make"]))
    assert "use make" in prompt.content
    said = HumanMessage(content="Stop hook: run the tests", additional_kwargs={HOOK_MARKER: "Stop"})
    events = [*translator.on_message(prompt), *translator.on_message(said)]
    assert events == [
        UserMessage("how do I build?"),
        Notice("a Stop hook asked the agent to go on: run the tests"),
    ]


async def test_a_hook_runs_inside_the_sandbox(server, make_settings, workspace: Path, tmp_path):
    """With the sandbox on, a hook cannot write outside the workspace, as the shell cannot."""
    from dcode.sandbox.modes import SandboxMode, SandboxSettings
    from dcode.sandbox.probe import availability

    if not availability().works:
        pytest.skip(f"no working sandbox here: {availability().problem}")
    outside = tmp_path / "outside.txt"
    command = f"touch {outside}; touch inside.txt; echo done"
    server.script(reply("hi"))
    settings = make_settings(
        hooks=(hook("UserPromptSubmit", command),),
        sandbox=SandboxSettings(SandboxMode.WORKSPACE_WRITE),
    )
    code, _, _ = await headless(settings, "hello", OutputFormat.JSON)
    assert code == 0
    assert (workspace / "inside.txt").exists() and not outside.exists()


async def test_pre_compact_fires_before_a_manual_compaction(server, make_settings, tmp_path):
    from dcode.agent.approval import HeadlessApprover
    from dcode.agent.engine import Engine
    from tests.test_agent_summarization import ONE, TWO

    seen = tmp_path / "precompact.json"
    server.script(reply(ONE), reply(TWO), reply("the summary"))
    settings = make_settings(hooks=(hook("PreCompact", f"cat > {seen}", "manual"),))
    async with await Engine.open(settings) as engine:
        runner = engine.runner(HeadlessApprover())
        for prompt in ("first", "second"):
            [event async for event in runner.run_turn(prompt)]
        events = await runner.compact("keep the names")
    payload = json.loads(seen.read_text())
    assert payload["trigger"] == "manual" and payload["custom_instructions"] == "keep the names"
    assert [e.type for e in events if e.type.startswith("hook")] == [
        "hook_started",
        "hook_finished",
    ]


async def test_a_hook_ask_asks_where_the_mode_would_not(
    server, make_settings, workspace: Path, tmp_path
):
    ask = script(
        tmp_path,
        "ask.sh",
        """#!/usr/bin/env bash
echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "a person checks deploys"}}'
""",
    )
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "touch deployed.txt"})]), reply("ok")
    )
    settings = make_settings(approve=ApprovalMode.ALL, hooks=(hook("PreToolUse", ask, "Bash"),))
    code, out, _ = await headless(settings, "deploy")
    assert code == 0 and not (workspace / "deployed.txt").exists()  # headless answers no
    asked = next(e for e in lines(out) if e["type"] == "approval_requested")
    assert asked["reason"] == "a person checks deploys" and asked["every_time"] is True


async def test_a_post_tool_use_hook_s_objection_and_context_reach_the_model(
    server, make_settings, tmp_path
):
    objection = script(
        tmp_path, "lint.sh", "#!/usr/bin/env bash\necho 'line 1: trailing space' >&2\nexit 2\n"
    )
    context = script(
        tmp_path,
        "ctx.sh",
        """#!/usr/bin/env bash
echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "CI runs on push"}}'
""",
    )
    server.script(
        reply(tool_calls=[tool_call("write_file", {"file_path": "a.txt", "content": "x \n"})]),
        reply("ok"),
    )
    settings = make_settings(
        hooks=(hook("PostToolUse", objection, "Write"), hook("PostToolUse", context, "Write"))
    )
    code, out, _ = await headless(settings, "write")
    assert code == 0
    result = tool_texts(server, 1)[0]
    assert "PostToolUse hook: line 1: trailing space" in result and "CI runs on push" in result
    started = [e for e in lines(out) if e["type"] == "hook_started"]
    assert len(started) == 2  # both ran, at once


async def test_continue_false_before_a_call_ends_the_turn(
    server, make_settings, workspace, tmp_path
):
    stop = script(
        tmp_path,
        "stop.sh",
        """#!/usr/bin/env bash
echo '{"continue": false, "stopReason": "the release freeze is on"}'
""",
    )
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": "touch x.txt"})]), reply("never asked")
    )
    settings = make_settings(approve=ApprovalMode.ALL, hooks=(hook("PreToolUse", stop),))
    code, out, _ = await headless(settings, "go")
    assert code == 0 and not (workspace / "x.txt").exists()
    assert len(server.requests) == 1  # the model is not asked again
    assert any(
        e["type"] == "notice"
        and e["message"] == "a hook stopped the turn: the release freeze is on"
        for e in lines(out)
    )


def test_a_hook_that_ends_without_reading_its_input_is_no_failure_on_uvloop(
    tmp_path: Path,
) -> None:
    """A dcode server's loop is uvloop's, whose pipe says a hook that ended before its input
    was written with a ``RuntimeError`` (asyncio's with a ``BrokenPipeError``): the hook ran,
    and its exit code is what counts."""
    import asyncio

    uvloop = pytest.importorskip("uvloop")
    from dcode.agent.events import Event, HookFinished
    from dcode.agent.hooks.runner import Hooks

    hooks = Hooks([hook("Stop", "exit 0")], workspace=tmp_path)
    payload = {"session_id": "s", "stop_hook_active": False, "padding": "x" * 100_000}

    async def fire_often() -> list[Event]:
        events: list[Event] = []
        for _ in range(20):  # the hook often ends before its input is written
            await hooks.fire("Stop", payload, events.append)
        return events

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        events = runner.run(fire_often())
    finished = [e for e in events if isinstance(e, HookFinished)]
    assert [e.exit_code for e in finished] == [0] * 20
