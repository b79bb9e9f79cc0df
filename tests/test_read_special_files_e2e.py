"""The whole agent, asked by the scripted model to read, edit or write named pipes with no writer
and a device: each call is an error result naming what the file is, the model sees it and
answers, the turn ends and ``dcode -p`` exits cleanly. (Before, the first call blocked the turn
for ever.)"""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
from pathlib import Path

from dcode.agent.tools.spec import EDIT_FILE, READ_FILE, WRITE_FILE
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from tests.support.hostile_files import fifo
from tests.support.model_server import reply, tool_call

PIPE = "is a named pipe (FIFO), not a regular file; only regular files are read or written"


async def test_the_model_reads_pipes_and_a_device_and_the_turn_ends(
    server, make_settings, workspace: Path
) -> None:
    for name in ("notes.txt", "stuck.mp4", "shot.png"):
        fifo(workspace / name)
    (workspace / "zeros.bin").symlink_to("/dev/zero")
    settings = make_settings("chat")
    names = ["notes.txt", "stuck.mp4", "shot.png", "zeros.bin"]
    server.script(
        reply(
            tool_calls=[
                tool_call(READ_FILE.name, {"file_path": name}, call_id=f"c{n}")
                for n, name in enumerate(names)
            ]
        ),
        reply("None of those are files I can read."),
    )
    out, err = io.StringIO(), io.StringIO()
    request = HeadlessRequest(prompt="read them", output_format=OutputFormat.STREAM_JSON)
    assert await asyncio.wait_for(run_headless(settings, request, out=out, err=err), 60) == 0, (
        err.getvalue()
    )

    events = [json.loads(line) for line in out.getvalue().splitlines()]
    finished = {e["call_id"]: e for e in events if e["type"] == "tool_call_finished"}
    assert [finished[f"c{n}"]["status"] for n in range(4)] == ["error"] * 4
    assert [finished[f"c{n}"]["output"] for n in range(3)] == [
        f"{READ_FILE.name}: {name} {PIPE}" for name in names[:3]
    ]
    assert finished["c3"]["output"].startswith(
        f"{READ_FILE.name}: /dev/zero is a character device, not a regular file"
    )
    # The model was told, in the next request, what each file is; then it answered.
    sent = json.dumps(server.requests[1].body)
    assert sent.count("named pipe (FIFO)") == 3 and "character device" in sent
    [turn] = [e for e in events if e["type"] == "turn_finished"]
    assert not turn["is_error"]
    assert events[-1] == {
        **events[-1],
        "type": "result",
        "result": "None of those are files I can read.",
        "is_error": False,
    }


async def test_the_model_edits_and_writes_a_pipe_and_the_turn_ends(
    server, make_settings, workspace: Path
) -> None:
    """What a write holds before is kept for /rewind: that must not read the pipe either."""
    pipe = fifo(workspace / "notes.txt")
    settings = make_settings("chat")
    server.script(
        reply(
            tool_calls=[
                tool_call(
                    EDIT_FILE.name,
                    {"file_path": "notes.txt", "old_string": "a", "new_string": "b"},
                    call_id="e",
                ),
                tool_call(
                    WRITE_FILE.name, {"file_path": "notes.txt", "content": "hello\n"}, call_id="w"
                ),
            ]
        ),
        reply("It is a pipe; I left it alone."),
    )
    out, err = io.StringIO(), io.StringIO()
    request = HeadlessRequest(prompt="fix notes", output_format=OutputFormat.STREAM_JSON)
    assert await asyncio.wait_for(run_headless(settings, request, out=out, err=err), 60) == 0, (
        err.getvalue()
    )
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    finished = {e["call_id"]: e for e in events if e["type"] == "tool_call_finished"}
    assert finished["e"]["output"] == f"{EDIT_FILE.name}: notes.txt {PIPE}"
    assert finished["w"]["output"] == f"{WRITE_FILE.name}: notes.txt {PIPE}"
    assert not [
        e for e in events if e["type"] == "notice"
    ]  # nothing to keep for /rewind, and no noise about it
    assert events[-1]["result"] == "It is a pipe; I left it alone."
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
