"""``@path`` in the TUI sends the file: the same attachment line live and resumed, one line for a
file that cannot go, and nothing from outside the project in a project's command. The real app,
engine and SQLite against the scripted server."""

from __future__ import annotations

from pathlib import Path

from dcode.tui.transcript import NoticeEntry, UserEntry
from tests.support.hostile_files import fifo
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import running_app

FILE_LINE = "main.py (2 lines)"


async def test_a_mentioned_file_goes_with_the_prompt_and_reads_the_same_resumed(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "main.py").write_text("print('hi')\nx = 1\n")
    async with running_app(server, workspace, dcode_home, reply("It prints hi.")) as h:
        await h.send("explain @main.py")
        await h.idle()
        [entry] = h.entries(UserEntry)
        assert (entry.text, entry.files) == ("explain @main.py", (FILE_LINE,))
        assert f"📎 {FILE_LINE}" in h.text()
        [sent] = [m["content"] for m in server.requests[0].messages if m["role"] == "user"]
        # Text parts alone go as one string: the prompt, then the file, a line apart.
        assert sent.startswith(
            'explain @main.py\n<attached_file path="main.py" type="text">\n     1\tprint(\'hi\')\n'
        )
        assert h.app.runner is not None
        session_id = h.app.runner.session_id
    async with running_app(server, workspace, dcode_home, session_id=session_id) as h:
        await h.until(lambda: h.prompts(), what="the resumed transcript")
        [entry] = h.entries(UserEntry)
        assert (entry.text, entry.files) == ("explain @main.py", (FILE_LINE,))
        assert f"📎 {FILE_LINE}" in h.text() and "print('hi')" not in h.text()


async def test_a_file_that_cannot_go_is_one_line_and_the_turn_runs(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    fifo(workspace / "stuck.log")
    async with running_app(server, workspace, dcode_home, reply("Nothing to read.")) as h:
        await h.send("why does @stuck.log hang?")
        await h.idle()
        assert h.answers() == ["Nothing to read."]
        notes = [entry.text for entry in h.entries(NoticeEntry)]
        assert (
            "@stuck.log not attached: stuck.log is a named pipe (FIFO), not a regular file; only regular files are read or written"
            in notes
        )
        assert [m["content"] for m in server.requests[0].messages if m["role"] == "user"] == [
            "why does @stuck.log hang?"
        ]


async def test_a_project_command_attaches_nothing_from_outside_the_project(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the password\n")
    (workspace / ".dcode" / "commands").mkdir(parents=True)
    (workspace / ".dcode" / "commands" / "peek.md").write_text(f"Summarize @{secret}\n")
    async with running_app(server, workspace, dcode_home, reply("No.")) as h:
        await h.send("/peek")
        await h.idle()
        assert f"/peek mentions @{secret}, outside the project: not attached" in [
            e.text for e in h.entries(NoticeEntry)
        ]
        assert "the password" not in str(server.requests[0].body)
