"""The real ``dcode`` binary in headless mode, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.model_server import fault, reply, tool_call
from tests.support.stores import store_env

DCODE = str(Path(sys.executable).with_name("dcode"))


def run(
    args: list[str],
    workspace: Path,
    home: Path,
    *,
    stdin: str | None = None,
    env: dict | None = None,
    timeout: float = 60,
):
    full_env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
        **store_env(),
        **(env or {}),
    }
    return subprocess.run(
        [DCODE, *args],
        cwd=workspace,
        env=full_env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def model_args(server, api: str = "chat") -> list[str]:
    return ["-m", "openai:test-model", "--base-url", server.base_url, "--api", api]


def test_text_answer_and_json_shape(server, workspace, home, api) -> None:
    server.script(reply("The answer is 42."), reply("Again 42."))
    result = run(["-p", "what is it?", *model_args(server, api)], workspace, home)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The answer is 42.\n" and result.stderr == ""
    result = run(
        ["-p", "again", *model_args(server, api), "--output-format", "json"], workspace, home
    )
    data = json.loads(result.stdout)
    assert set(data) == {
        "type",
        "result",
        "session_id",
        "is_error",
        "num_turns",
        "usage",
        "duration_ms",
        "permission_denials",
        "budget_exceeded",
    }
    assert data["permission_denials"] == [] and data["budget_exceeded"] is False
    assert data["type"] == "result" and data["result"] == "Again 42." and data["is_error"] is False
    assert set(data["usage"]) == {"input_tokens", "output_tokens", "cached_input_tokens"}
    assert isinstance(data["duration_ms"], int) and data["num_turns"] == 1


def test_prompt_from_stdin(server, workspace, home) -> None:
    server.script(reply("read it"))
    result = run(["-p", "-", *model_args(server)], workspace, home, stdin="prompt from a pipe\n")
    assert result.returncode == 0
    assert server.requests[0].transcript()[-1] == ("user", "prompt from a pipe\n")


def test_usage_errors_exit_2(server, workspace, home) -> None:
    bad_format = run(["-p", "x", *model_args(server), "--output-format", "yaml"], workspace, home)
    assert bad_format.returncode == 2 and "--output-format" in bad_format.stderr
    no_prompt = run(["-p", "", *model_args(server)], workspace, home)
    assert no_prompt.returncode == 2 and "needs a prompt" in no_prompt.stderr
    unknown_session = run(["-p", "x", "-r", "abcdef123456", *model_args(server)], workspace, home)
    assert unknown_session.returncode == 2 and "no session 'abcdef123456'" in unknown_session.stderr


def test_missing_key_is_one_line(workspace, home) -> None:
    result = run(
        ["-p", "hi", "-m", "deepseek:deepseek-chat"], workspace, home, env={"OPENAI_API_KEY": ""}
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "dcode: error: no API key for deepseek: set DEEPSEEK_API_KEY (export DEEPSEEK_API_KEY=...)"
    ]


def test_dead_endpoint_is_one_line_and_keeps_session(workspace, home) -> None:
    result = run(
        ["-p", "hello there", "-m", "openai:x", "--base-url", "http://127.0.0.1:9/v1"],
        workspace,
        home,
        env={"DCODE_MAX_RETRIES": "0"},
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "dcode: error: cannot reach the model server at http://127.0.0.1:9/v1"
    )
    assert "Traceback" not in result.stderr
    listing = run(["sessions", "list"], workspace, home)
    assert "hello there" in listing.stdout


def test_limits_from_the_environment_reach_the_client(server, workspace, home) -> None:
    server.script(fault.stall_before_headers(20))
    env = {"DCODE_REQUEST_TIMEOUT": "0.3", "DCODE_MAX_RETRIES": "0"}
    result = run(["-p", "hello there", *model_args(server)], workspace, home, env=env, timeout=30)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        (
            f"dcode: error: the model server at {server.base_url} sent nothing for 0.3 s "
            "(first-byte timeout; set request_timeout or DCODE_REQUEST_TIMEOUT)"
        )
    ]


def test_malformed_config_exit_2(server, workspace, home) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text('model = "x"\napprove = [\n')
    result = run(["-p", "hi", *model_args(server)], workspace, home)
    assert result.returncode == 2
    assert str(home / "config.toml") in result.stderr and "line" in result.stderr


@pytest.mark.usefixtures("store_kind")
def test_sessions_commands(server, workspace, home) -> None:
    server.script(reply(tool_calls=[tool_call("ls", {"path": "."})]), reply("listed it"))
    out = run(
        ["-p", "list the files please", *model_args(server), "--output-format", "json"],
        workspace,
        home,
    )
    session_id = json.loads(out.stdout)["session_id"]
    listing = run(["sessions", "list"], workspace, home)
    assert (
        session_id in listing.stdout
        and "list the files please" in listing.stdout
        and "4" in listing.stdout
    )
    shown = run(["sessions", "show", session_id[:6]], workspace, home)
    assert shown.returncode == 0
    assert (
        "[you] list the files please" in shown.stdout
        and "[dcode] listed it" in shown.stdout
        and "→ ls(" in shown.stdout
    )
    # The files beside the database that hold its text: the compacted conversation's archive,
    # its last plan and its subagents' archives go with it; another session's stay.
    history = home / "conversation_history"
    history.mkdir(exist_ok=True)
    beside = [
        history / f"{session_id}.md",
        history / f"{session_id}.plan.md",
        history / f"{session_id}-task-1.md",
    ]
    other = history / "another-session.md"
    for path in (*beside, other):
        path.write_text("the conversation's text")
    assert run(["sessions", "delete", session_id], workspace, home).returncode == 0
    assert run(["sessions", "show", session_id], workspace, home).returncode == 1
    assert [path for path in beside if path.exists()] == [] and other.exists()


@pytest.mark.usefixtures("store_kind")
def test_kill_mid_turn_leaves_session_resumable(server, workspace, home) -> None:
    server.script(
        reply(
            tool_calls=[tool_call("write_file", {"file_path": "step1.txt", "content": "done\n"})]
        ),
        reply("this answer streams very slowly " * 20, chunk_size=2, chunk_delay=0.05),
    )
    env = {
        "PATH": os.environ["PATH"],
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "k",
        "HOME": str(home.parent),
        **store_env(),
    }
    proc = subprocess.Popen(
        [
            DCODE,
            "-p",
            "write step1 then explain",
            *model_args(server),
            "--output-format",
            "stream-json",
        ],
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "text_delta":
            break
        assert time.monotonic() < deadline
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert (workspace / "step1.txt").read_text() == "done\n"
    server.script(reply("resumed fine"))
    result = run(["-p", "carry on", "-c", *model_args(server)], workspace, home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "resumed fine"
    transcript = server.requests[-1].transcript()
    assert ("tool_call", "write_file") in transcript
    assert [t for r, t in transcript if r == "user"] == ["write step1 then explain", "carry on"]


@pytest.mark.usefixtures("store_kind")
def test_resume_flag_without_id_takes_latest(server, workspace, home) -> None:
    server.script(reply("one"), reply("two"))
    first = json.loads(
        run(["-p", "first", *model_args(server), "--output-format", "json"], workspace, home).stdout
    )
    second = json.loads(
        run(
            ["-p", "-r", "--output-format", "json", *model_args(server)],
            workspace,
            home,
            stdin="next",
        ).stdout
    )
    assert second["session_id"] == first["session_id"]


def test_debug_shows_the_traceback(workspace, home) -> None:
    args = ["-p", "hi", "-m", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--debug"]
    result = run(args, workspace, home, env={"DCODE_MAX_RETRIES": "0"})
    assert result.returncode == 1
    assert (
        "Traceback" in result.stderr
        and "dcode: error: cannot reach the model server" in result.stderr
    )


def run_bytes(
    args: list[bytes],
    workspace: Path,
    home: Path,
    *,
    stdin: bytes | None = None,
    locale: str = "C.UTF-8",
    timeout: float = 60,
):
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
        "LC_ALL": locale,
    }
    return subprocess.run(
        [os.fsencode(DCODE), *args],
        cwd=workspace,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_a_prompt_that_is_not_utf8_is_refused_whole(server, workspace, home, locale: str) -> None:
    server.script(reply("never asked"))
    model = [os.fsencode(arg) for arg in model_args(server)]
    in_argv = run_bytes(
        [b"-p", b"caf\xe9 au lait", *model], workspace, home, locale=locale, timeout=30
    )
    on_stdin = run_bytes(
        [b"-p", b"-", *model],
        workspace,
        home,
        stdin=b"caf\xe9 au lait\n",
        locale=locale,
        timeout=30,
    )
    for result in (in_argv, on_stdin):
        assert result.returncode == 2
        lines = result.stderr.decode().strip().splitlines()
        assert (
            len(lines) == 1
            and "not valid UTF-8 (byte 0xe9" in lines[0]
            and "nothing was sent" in lines[0]
        )
    assert not server.requests
    assert run(["sessions", "list"], workspace, home).stdout.strip() == "No sessions yet."


def test_a_session_killed_in_its_first_turn_lists_its_title_and_size(
    server, workspace, home
) -> None:
    server.script(reply("this answer streams very slowly " * 20, chunk_size=2, chunk_delay=0.05))
    env = {
        "PATH": os.environ["PATH"],
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "k",
        "HOME": str(home.parent),
    }
    proc = subprocess.Popen(
        [
            DCODE,
            "-p",
            "explain the build slowly",
            *model_args(server),
            "--output-format",
            "stream-json",
        ],
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    session_id = ""
    try:
        for line in proc.stdout:
            event = json.loads(line)
            session_id = event.get("session_id", session_id)
            if event["type"] == "text_delta":
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    [row] = [
        line
        for line in run(["sessions", "list"], workspace, home).stdout.splitlines()
        if line.startswith(session_id)
    ]
    assert session_id and row.split()[:4] == [session_id, "just", "now", "1"]
    assert "explain the build slowly" in row
