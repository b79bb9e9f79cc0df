"""Two ``dcode -p -r SID`` at once: the second is refused with one line, the first loses nothing.

The first run is held mid-turn by a shell command that waits for a file the test creates, so
the two overlap for as long as the test needs, with no timing involved.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dcode.agent.store.base import SessionStore
from tests.support.model_server import ScriptedModelServer, Step, reply, tool_call
from tests.support.session_holder import held_elsewhere
from tests.support.stores import store_env
from tests.test_cli_headless import DCODE, model_args, run

WAIT_FOR_GO = "touch started; while [ ! -f go ]; do sleep 0.05; done; echo went on"


def _env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
        **store_env(),
    }


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _session(server: ScriptedModelServer, workspace: Path, home: Path) -> str:
    server.script(reply("first answer"))
    result = run(["-p", "start", *model_args(server), "--output-format", "json"], workspace, home)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["session_id"]


def _start_long_turn(
    server: ScriptedModelServer, workspace: Path, home: Path, session_id: str, *then: Step
) -> subprocess.Popen[str]:
    """``dcode -p -r SID`` stopped inside its turn, in a shell command waiting for ``go``;
    ``then``: what the model answers once the command has finished."""
    server.script(reply(tool_calls=[tool_call("execute", {"command": WAIT_FOR_GO})]), *then)
    proc = subprocess.Popen(
        [DCODE, "-p", "the long turn", "-r", session_id, *model_args(server), "--approve", "all"],
        cwd=workspace,
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_until(
        lambda: (workspace / "started").exists() or proc.poll() is not None,
        "the first turn's command",
    )
    assert proc.poll() is None, proc.communicate()
    return proc


def test_a_second_resume_of_an_open_session_is_refused_and_the_first_turn_is_kept(
    server: ScriptedModelServer, workspace: Path, home: Path, store: SessionStore
) -> None:
    session_id = _session(server, workspace, home)
    first = _start_long_turn(server, workspace, home, session_id, reply("the long turn is done"))
    try:
        refused = run(
            ["-p", "a second turn", "-r", session_id, *model_args(server)], workspace, home
        )
        latest = run(["-p", "a turn for the latest", "-c", *model_args(server)], workspace, home)
    finally:
        (workspace / "go").touch()
    out, err = first.communicate(timeout=60)
    expected = (
        f"dcode: error: session {session_id} is open in another dcode (pid {first.pid}): "
        "wait for it to finish, or leave out -r/-c to start a new session"
    )
    for second in (refused, latest):
        assert second.returncode == 2
        assert second.stderr.splitlines() == [expected] and second.stdout == ""
    assert (
        len(server.requests) == 3
    )  # "start", then the long turn's two: neither refused run reached the model
    assert first.returncode == 0, err
    assert out.strip() == "the long turn is done"
    saved = store.read_thread(session_id)
    assert saved is not None
    kinds = [(m.type, m.content if isinstance(m.content, str) else "") for m in saved.messages]
    assert [text for kind, text in kinds if kind == "human"] == ["start", "the long turn"]
    assert kinds[-1] == ("ai", "the long turn is done")
    assert any(kind == "tool" and "went on" in text for kind, text in kinds)
    # Free again once the first has finished.
    server.script(reply("the second turn, later"))
    again = run(["-p", "a second turn", "-r", session_id, *model_args(server)], workspace, home)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "the second turn, later"


def _refused_line(session_id: str, pid: int) -> str:
    return (
        f"dcode: error: session {session_id} is open in another dcode (pid {pid}): "
        "wait for it to finish, or leave out -r/-c to start a new session"
    )


@pytest.mark.parametrize("store_kind", ["postgres"], indirect=True)
def test_another_machine_resuming_an_open_session_gets_the_same_line(
    server: ScriptedModelServer, workspace: Path, home: Path, tmp_path: Path, store: SessionStore
) -> None:
    """The other machine is a ``$DCODE_HOME`` of its own on the same server: no lock file of the
    first machine's to find there, so only the server's hold can refuse it."""
    other = tmp_path / "machine2" / "home"
    other.mkdir(parents=True)
    session_id = _session(server, workspace, home)
    first = _start_long_turn(server, workspace, home, session_id, reply("the long turn is done"))
    try:
        listed = run(["sessions", "list"], workspace, other)
        refused = run(
            ["-p", "from the other machine", "-r", session_id, *model_args(server)],
            workspace,
            other,
        )
    finally:
        (workspace / "go").touch()
    out, err = first.communicate(timeout=60)
    assert session_id in listed.stdout
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.splitlines() == [_refused_line(session_id, first.pid)]
    assert first.returncode == 0 and out.strip() == "the long turn is done", err
    server.script(reply("the other machine's turn"))
    again = run(["-p", "my turn now", "-r", session_id, *model_args(server)], workspace, other)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "the other machine's turn"
    saved = store.read_thread(session_id)
    assert saved is not None
    assert [m.content for m in saved.messages if m.type == "human"] == [
        "start",
        "the long turn",
        "my turn now",
    ]
    assert not (other / "sessions.db").exists()


@pytest.mark.usefixtures("store_kind")
def test_a_session_whose_dcode_was_killed_opens_again(
    server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    session_id = _session(server, workspace, home)
    first = _start_long_turn(server, workspace, home, session_id)
    try:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        # The shell command the killed dcode started may still run: it must not hold the session.
        server.script(reply("resumed after the kill"))
        result = run(["-p", "carry on", "-r", session_id, *model_args(server)], workspace, home)
    finally:
        (workspace / "go").touch()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "resumed after the kill"


@pytest.mark.usefixtures("store_kind")
def test_a_session_open_elsewhere_is_not_deleted(
    server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    session_id = _session(server, workspace, home)
    with held_elsewhere(home, session_id) as holder:
        refused = run(["sessions", "delete", session_id[:6]], workspace, home)
        assert refused.returncode == 1
        assert refused.stderr.splitlines() == [
            f"dcode: error: session {session_id} is open in another dcode (pid {holder.pid}): quit it there first"
        ]
        assert session_id in run(["sessions", "list"], workspace, home).stdout
    deleted = run(["sessions", "delete", session_id], workspace, home)
    assert deleted.returncode == 0 and deleted.stdout.strip() == f"Deleted session {session_id}."
    assert session_id not in run(["sessions", "list"], workspace, home).stdout
