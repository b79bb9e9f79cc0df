"""An answer the model server stops sending halfway is kept in the session, as an interrupted
one is: ``sessions show`` and the next turn's request hold the text that had streamed. The turn
ends with the stall's one line, and no library's log line reaches stderr."""

from __future__ import annotations

import json

from tests.support.model_server import ScriptedModelServer, fault, reply
from tests.test_cli_headless import model_args, run

TEXT = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
STALL = {"DCODE_STALL_TIMEOUT": "0.5", "DCODE_MAX_RETRIES": "0"}


def test_a_stalled_answer_is_kept_and_resumed(
    server: ScriptedModelServer, workspace, home, api: str
) -> None:
    server.script(fault.stall_mid_stream(after_chunks=8, seconds=20, text=TEXT), reply("Going on."))
    result = run(
        ["-p", "tell me", *model_args(server, api), "--output-format", "stream-json"],
        workspace,
        home,
        env=STALL,
    )
    assert result.returncode == 1, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    streamed = "".join(event["text"] for event in events if event["type"] == "text_delta")
    assert (
        streamed.strip() and TEXT.startswith(streamed) and len(streamed) < len(TEXT)
    )  # cut mid-answer
    # One line, the stall's: nothing of langchain-openai's own logging.
    assert result.stderr.splitlines() == [
        (
            f"dcode: error: the model server at {server.base_url} stopped sending mid-answer: nothing for 0.5 s "
            "(stall timeout; set stall_timeout or DCODE_STALL_TIMEOUT)"
        )
    ]
    session_id = events[-1]["session_id"]

    shown = run(["sessions", "show", session_id], workspace, home)
    assert shown.returncode == 0, shown.stderr
    assert f"[dcode] {streamed.strip()} (interrupted)" in shown.stdout.splitlines()

    resumed = run(["-p", "go on", "-c", *model_args(server, api)], workspace, home, env=STALL)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "Going on.\n"
    assert server.requests[-1].transcript()[-3:] == [
        ("user", "tell me"),
        ("assistant", streamed),
        ("user", "go on"),
    ]


def test_a_dropped_answer_is_kept_too(server: ScriptedModelServer, workspace, home) -> None:
    """A connection closed mid-answer is the same loss as a stall: the text that came stays."""
    server.script(fault.drop_mid_stream(after_chunks=4, text=TEXT))
    result = run(
        ["-p", "tell me", *model_args(server), "--output-format", "stream-json"],
        workspace,
        home,
        env=STALL,
    )
    assert result.returncode == 1
    events = [json.loads(line) for line in result.stdout.splitlines()]
    streamed = "".join(event["text"] for event in events if event["type"] == "text_delta")
    assert streamed.strip() and len(streamed) < len(TEXT)
    [line] = result.stderr.splitlines()
    assert "closed mid-answer" in line, line
    shown = run(["sessions", "show", events[-1]["session_id"]], workspace, home)
    assert f"[dcode] {streamed.strip()} (interrupted)" in shown.stdout.splitlines()
