"""``dcode sessions rewind``: the real binary on a session made by the real loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dcode.agent.store.base import SessionStore
from dcode.agent.tools.spec import WRITE_FILE
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.support.stores import store_env


def dcode(
    args: list[str], home: Path, cwd: Path, *, key: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "DCODE_HOME": str(home), **store_env()}
    if key:
        env["OPENAI_API_KEY"] = "k"
    binary = str(Path(sys.executable).with_name("dcode"))
    return subprocess.run(
        [binary, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90
    )


def session_of_two_prompts(server: ScriptedModelServer, home: Path, workspace: Path) -> str:
    server.script(
        reply(
            tool_calls=[
                tool_call(WRITE_FILE.name, {"file_path": "plan.md", "content": "step one\n"})
            ]
        ),
        reply("planned"),
        reply(
            tool_calls=[
                tool_call(WRITE_FILE.name, {"file_path": "plan.md", "content": "step two\n"})
            ]
        ),
        reply("replanned"),
    )
    base = ["-m", "openai:test-model", "--base-url", server.base_url, "--output-format", "json"]
    first = dcode(["-p", "make a plan", *base], home, workspace)
    assert first.returncode == 0, first.stderr
    session_id = first.stdout.split('"session_id": "')[1].split('"')[0]
    second = dcode(["-p", "change the plan", "-r", session_id, *base], home, workspace)
    assert second.returncode == 0, second.stderr
    return session_id


def test_list_then_rewind_without_a_key(
    server: ScriptedModelServer, workspace: Path, store: SessionStore
) -> None:
    home = store.home
    session_id = session_of_two_prompts(server, home, workspace)
    listed = dcode(["sessions", "rewind", session_id], home, workspace)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[:3] == [
        "  #  WHEN       FILES  PROMPT",
        "  1  just now       1  make a plan",
        "  2  just now       1  change the plan",
    ]

    done = dcode(["sessions", "rewind", session_id, "2"], home, workspace, key=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("the conversation is back to before prompt 2 (")
    assert (
        "1 file put back: plan.md" in done.stdout
        and "the prompt was: change the plan" in done.stdout
    )
    assert (workspace / "plan.md").read_text() == "step one\n"
    shown = dcode(["sessions", "show", session_id], home, workspace)
    assert "[you] make a plan" in shown.stdout and "change the plan" not in shown.stdout


def test_refusals_are_one_line(
    server: ScriptedModelServer, workspace: Path, store: SessionStore
) -> None:
    home = store.home
    session_id = session_of_two_prompts(server, home, workspace)
    for args, words in (
        ([session_id, "9"], "there is no prompt 9: the session has 2"),
        (["nosuchsession"], "no session 'nosuchsession'"),
        ([session_id, "1", "--code-only", "--conversation-only"], "pick one"),
    ):
        refused = dcode(["sessions", "rewind", *args], home, workspace)
        assert (
            refused.returncode in (1, 2)
            and len(refused.stderr.strip().splitlines()) == 1
            and words in refused.stderr
        ), refused.stderr
    with store.hold(session_id):
        held = dcode(["sessions", "rewind", session_id, "1"], home, workspace)
    assert held.returncode == 1 and "quit it there first" in held.stderr
    assert (workspace / "plan.md").read_text() == "step two\n"  # nothing was touched


@pytest.mark.parametrize("store_kind", ["postgres"], indirect=True)
def test_another_machine_rewinds_the_conversation_and_names_what_it_cannot_put_back(
    server: ScriptedModelServer, workspace: Path, tmp_path: Path, store: SessionStore
) -> None:
    """The kept contents are files under the first machine's ``$DCODE_HOME``; the second has
    the session (one server) but not them."""
    session_id = session_of_two_prompts(server, store.home, workspace)
    other = tmp_path / "machine2" / "home"
    other.mkdir(parents=True)
    done = dcode(["sessions", "rewind", session_id, "2"], other, workspace, key=False)
    assert done.returncode == 0, done.stderr
    not_here = (
        "plan.md could not be put back: its earlier content is not kept on this machine (it is "
        "in the file-history of the $DCODE_HOME where the change was made)"
    )
    assert done.stdout.splitlines()[:2] == [
        "the conversation is back to before prompt 2 (4 messages)",
        not_here,
    ]
    assert (workspace / "plan.md").read_text() == "step two\n"  # left as it is
    assert [turn.prompt for turn in store.turns(session_id)] == ["make a plan"]
