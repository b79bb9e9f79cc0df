"""Eviction ahead of time: a large tool result or a huge paste never enters the history whole."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from dcode.agent.large_results import RESULTS_DIR
from dcode.agent.markers import SAVED_TO_MARKER
from dcode.agent.middleware.result_eviction import EVICT_CHARS, EXEMPT, evicted
from dcode.agent.paste_archive import PASTE_CHARS, archive_paste
from dcode.agent.session_files import HISTORY_DIR
from dcode.agent.tools.spec import EDIT_FILE, EXECUTE, GLOB, GREP, LS, READ_FILE, WRITE_FILE
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.settings.config import ApprovalMode
from tests.support.model_server import reply, tool_call

ROWS = 4_000
# 4,000 rows of 50 chars: a 200 kB shell output.
PRINT_ROWS = f"python3 -c \"[print(f'row {{i:06d}} ' + 'x' * 39) for i in range({ROWS})]\""
BIG = "".join(f"line {n}: {'y' * 90}\n" for n in range(1, 1_001))  # ~100,000 characters


async def run(settings, prompt: str, **kw) -> tuple[int, list[dict]]:  # the make_settings fixture's
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings,
        HeadlessRequest(prompt=prompt, output_format=OutputFormat.STREAM_JSON, **kw),
        out=out,
        err=err,
    )
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def checkpoint_bytes(db: Path) -> tuple[int, bytes]:
    """The session database's size on disk (with its WAL), and every blob and text it holds."""
    size = sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))
    with sqlite3.connect(db) as conn:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        held = b"".join(
            value if isinstance(value, bytes) else str(value).encode()
            for table in tables
            for row in conn.execute(f"SELECT * FROM {table}")  # the database's own table names
            for value in row
            if value is not None
        )
    return size, held


async def test_a_200kB_shell_output_reaches_the_model_as_a_preview_and_a_path(  # noqa: N802 - kB, the unit
    server, make_settings, dcode_home: Path, api: str
) -> None:
    server.script(
        reply(tool_calls=[tool_call("execute", {"command": PRINT_ROWS}, call_id="call.big/1")]),
        reply("Four thousand rows."),
    )
    settings = make_settings(api, approve=ApprovalMode.ALL)
    code, events = await run(settings, "print the rows")
    assert code == 0 and events[-1]["result"] == "Four thousand rows."
    [sent] = [text for role, text in server.transcript(1) if role == "tool"]
    [saved] = [path for path in (dcode_home / RESULTS_DIR).rglob("*") if path.is_file()]
    assert saved.name == "call_big_1" and saved.parent.name == events[-1]["session_id"]
    full = saved.read_text()
    assert len(full) > 200_000 and all(
        f"row {i:06d} " in full for i in range(ROWS)
    )  # the whole output
    assert (
        oct(saved.stat().st_mode & 0o777) == "0o600"
        and oct(saved.parent.stat().st_mode & 0o777) == "0o700"
    )
    # What the model got: the call, the path, how to read it, and the head and tail, numbered.
    assert (
        len(sent) < 3_000
        and "call.big/1" in sent
        and str(saved) in sent
        and "offset and limit" in sent
    )
    assert "     1\trow 000000 " in sent and f"  {ROWS}\trow {ROWS - 1:06d} " in sent
    assert f"... [{len(full.splitlines()) - 10} lines truncated] ..." in sent
    [finished] = [e for e in events if e["type"] == "tool_call_finished"]
    assert finished["saved_to"] == str(saved) and finished["output"] == sent
    # The checkpoint never held the output whole.
    size, held = checkpoint_bytes(settings.sessions_db)
    assert b"row 002000 " not in held and size < 200_000


def test_the_exempt_tools_are_the_references(tmp_path: Path) -> None:
    assert {
        LS.name,
        GLOB.name,
        GREP.name,
        READ_FILE.name,
        EDIT_FILE.name,
        WRITE_FILE.name,
    } == EXEMPT
    for name in EXEMPT:
        message = ToolMessage(content=BIG, tool_call_id="call_1", name=name)
        assert evicted(message, name, tmp_path, "s") is message
    assert list(tmp_path.iterdir()) == []


def test_only_results_over_the_limit_are_evicted_and_a_failed_write_keeps_them(
    tmp_path: Path,
) -> None:
    at_limit = ToolMessage(content="z" * EVICT_CHARS, tool_call_id="call_1", name=EXECUTE.name)
    assert evicted(at_limit, EXECUTE.name, tmp_path, "s") is at_limit
    over = ToolMessage(content="z" * (EVICT_CHARS + 1), tool_call_id="call_1", name=EXECUTE.name)
    out = evicted(over, EXECUTE.name, tmp_path, "s")
    assert (tmp_path / "s" / "call_1").read_text() == over.content and out.additional_kwargs[
        SAVED_TO_MARKER
    ] == str(tmp_path / "s" / "call_1")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert evicted(over, EXECUTE.name, blocked, "s") is over  # the original, whole


async def test_a_huge_paste_is_archived_and_the_history_holds_its_preview(
    server, make_settings, dcode_home: Path, api: str
) -> None:
    paste = "".join(f"pasted {n:06d} {'p' * 40}\n" for n in range(5_000))  # 250 kB
    server.script(reply("A long paste."), reply("Still here."))
    settings = make_settings(api)
    code, events = await run(settings, paste)
    assert code == 0
    [archive] = (dcode_home / HISTORY_DIR).glob("*.md")
    assert archive.read_text() == paste and oct(archive.stat().st_mode & 0o777) == "0o600"
    [sent] = [text for role, text in server.transcript(0) if role == "user"]
    assert (
        str(archive) in sent
        and "pasted 000000" in sent
        and "pasted 004999" in sent
        and len(sent) < 3_000
    )
    assert any(e["type"] == "notice" and str(archive) in e["message"] for e in events)
    size, held = checkpoint_bytes(settings.sessions_db)
    assert b"pasted 002500" not in held and size < 200_000
    # From then on: the next turn of the session sends the preview again, not the paste.
    code, _ = await run(settings, "and now?", resume_id=events[-1]["session_id"])
    assert code == 0
    assert [text for role, text in server.transcript(1) if role == "user"] == [sent, "and now?"]


def test_a_paste_under_the_limit_or_one_that_cannot_be_archived_goes_in_whole(
    tmp_path: Path,
) -> None:
    small = "q" * PASTE_CHARS
    assert archive_paste(small, tmp_path).content is small
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    big = [
        {"type": "text", "text": "q" * (PASTE_CHARS + 1)},
        {"type": "image", "base64": "AA==", "mime_type": "image/png"},
    ]
    kept = archive_paste(big, blocked)
    assert kept.content is big and kept.failed and not kept.paths  # never lost
    done = archive_paste(big, tmp_path / "history")
    [path] = done.paths
    assert (
        isinstance(done.content, list)
        and done.content[1] == big[1]
        and str(path) in done.content[0]["text"]
    )
    assert path.read_text() == big[0]["text"]


@pytest.mark.parametrize("api", ["chat"], indirect=True)
async def test_a_resumed_session_says_the_same(server, make_settings, api: str) -> None:
    from dcode.agent.saved_thread import replay

    server.script(reply(tool_calls=[tool_call("execute", {"command": PRINT_ROWS})]), reply("done"))
    settings = make_settings(api, approve=ApprovalMode.ALL)
    code, events = await run(settings, "go")
    assert code == 0
    [live] = [e for e in events if e["type"] == "tool_call_finished"]
    from dcode.agent.engine import Engine

    async with await Engine.open(settings) as engine:
        runner = engine.runner(_NoApprover(), session_id=events[-1]["session_id"])
        messages = await runner.messages()
    [again] = [e.to_json() for e in replay(messages) if e.type == "tool_call_finished"]
    assert again == live and again["saved_to"]


class _NoApprover:
    async def decide(self, event):  # never asked here
        raise AssertionError("nothing needs approval")


async def test_both_hooks_evict_and_pass_the_rest_through(tmp_path: Path) -> None:
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command

    from dcode.agent.middleware.result_eviction import ResultEvictionMiddleware

    middleware = ResultEvictionMiddleware(tmp_path)
    request = ToolCallRequest(
        tool_call={"name": EXECUTE.name, "args": {}, "id": "call_9", "type": "tool_call"},
        tool=None,
        state={},
        runtime=None,
    )  # type: ignore[arg-type]
    big = ToolMessage(
        content="b" * (EVICT_CHARS + 1), tool_call_id="call_9"
    )  # no name: the call's is used

    async def run(_: ToolCallRequest) -> ToolMessage:
        return big

    out = await middleware.awrap_tool_call(request, run)
    assert isinstance(out, ToolMessage) and out.additional_kwargs[SAVED_TO_MARKER] == str(
        tmp_path / "session" / "call_9"
    )
    assert middleware.wrap_tool_call(request, lambda _: big).additional_kwargs[
        SAVED_TO_MARKER
    ] == str(tmp_path / "session" / "call_9")  # type: ignore[union-attr]
    command = Command(update={})
    assert middleware.wrap_tool_call(request, lambda _: command) is command
