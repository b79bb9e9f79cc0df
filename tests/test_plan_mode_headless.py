"""``dcode -p --approve plan`` as a user runs it (the real binary, the scripted server): nothing
is changed, the plan is printed (text), carried as ``plan`` (json) or as an event
(stream-json), and the run exits 0."""

from __future__ import annotations

import json
from pathlib import Path

from dcode.agent.tools.spec import EXIT_PLAN_MODE, WRITE_FILE
from tests.support.model_server import reply, tool_call
from tests.test_cli_headless import model_args, run

PLAN = "# Rename the helper\n\n1. Rename `old()` to `new()` in `lib.py`.\n2. Run the tests."


def planning(server, preamble: str = "") -> None:
    server.script(
        reply(tool_calls=[tool_call(WRITE_FILE.name, {"file_path": "lib.py", "content": "pwned"})]),
        reply(preamble, tool_calls=[tool_call(EXIT_PLAN_MODE.name, {"plan": PLAN})]),
    )  # nothing more: a third request would find no answer, and the run would fail


def test_text_prints_the_plan_and_changes_nothing(server, workspace: Path, home: Path) -> None:
    (workspace / "lib.py").write_text("def old(): ...\n")
    planning(server, "Here is my plan.")
    result = run(
        ["-p", "plan the rename", *model_args(server), "--approve", "plan"], workspace, home
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == PLAN + "\n" and result.stderr == ""
    assert (workspace / "lib.py").read_text() == "def old(): ...\n"
    assert len(server.requests) == 2
    refused = [text for role, text in server.transcript(1) if role == "tool"]
    assert refused[0].startswith("denied: plan mode:")
    [saved] = (home / "conversation_history").glob("*.plan.md")
    assert saved.read_text() == PLAN + "\n"


def test_json_carries_the_plan_and_stream_json_the_event(
    server, workspace: Path, home: Path
) -> None:
    planning(server)
    result = run(
        ["-p", "plan", *model_args(server), "--approve", "plan", "--output-format", "json"],
        workspace,
        home,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["plan"] == PLAN and data["is_error"] is False and data["type"] == "result"
    planning(server)
    result = run(
        ["-p", "plan", *model_args(server), "--approve", "plan", "--output-format", "stream-json"],
        workspace,
        home,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["type"] == "init" and lines[0]["approve"] == "plan"
    assert sorted(lines[0]["tools"]) == sorted(
        server.requests[-1].tool_names
    )  # what the model was given
    assert EXIT_PLAN_MODE.name in lines[0]["tools"]
    [asked] = [line for line in lines if line["type"] == "approval_requested"]
    assert asked["kind"] == "plan" and asked["args"] == {"plan": PLAN}
    assert lines[-1]["type"] == "result" and lines[-1]["plan"] == PLAN


def test_a_run_without_a_plan_says_so_in_json(server, workspace: Path, home: Path) -> None:
    server.script(reply("I need to know which file you mean."))
    result = run(
        ["-p", "plan", *model_args(server), "--approve", "plan", "--output-format", "json"],
        workspace,
        home,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["plan"] is None and data["result"] == "I need to know which file you mean."
    result = run(["-p", "again", *model_args(server), "--output-format", "json"], workspace, home)
    assert "plan" not in json.loads(result.stdout)  # other modes keep the documented shape


def test_the_plan_is_carried_out_by_continuing_in_another_mode(
    server, workspace: Path, home: Path
) -> None:
    (workspace / "lib.py").write_text("def old(): ...\n")
    planning(server)
    assert (
        run(
            ["-p", "plan the rename", *model_args(server), "--approve", "plan"], workspace, home
        ).returncode
        == 0
    )
    server.script(
        reply(
            tool_calls=[
                tool_call(WRITE_FILE.name, {"file_path": "lib.py", "content": "def new(): ...\n"})
            ]
        ),
        reply("Renamed."),
    )
    result = run(
        ["-p", "go ahead", "-c", *model_args(server), "--approve", "edits"], workspace, home
    )
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout == "Renamed.\n" and (workspace / "lib.py").read_text() == "def new(): ...\n"
    )
    history = server.transcript(2)
    assert ("tool_call", EXIT_PLAN_MODE.name) in history and history[-1] == ("user", "go ahead")
