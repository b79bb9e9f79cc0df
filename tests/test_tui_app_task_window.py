"""A running task's nested view keeps one size while its subagent streams, its newest rows in
sight; a question of the subagent's opens it to its full size (real app, engine and scripted
server)."""

from __future__ import annotations

from pathlib import Path

from dcode.tui.approval_widget import ApprovalWidget
from dcode.tui.transcript.task_view import WINDOW_ROWS, TaskView
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import running_app

PROMPT = "look around the workspace"
JOB = "Read the notes, then say what they hold."


def task_call(description: str):
    return tool_call("task", {"description": description, "subagent_type": "general-purpose"})


def window_rows(view: TaskView) -> int:
    return view.query_one(".task-window").outer_size.height


async def test_a_running_task_keeps_its_size_and_shows_its_newest_rows(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "notes.txt").write_text("".join(f"line {n}\n" for n in range(40)))
    answer = " ".join(f"word{n}" for n in range(120)) + " THE-END"
    steps = (
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(
            "Reading.", tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})]
        ).answering(JOB),
        reply(
            "Searching. " * 25, tool_calls=[tool_call("grep", {"pattern": "line", "path": "."})]
        ).answering(JOB),
        reply(answer, chunk_size=12, chunk_delay=0.02).answering(JOB),
        reply("The notes are read.").answering(PROMPT),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send(PROMPT)
        seen: set[int] = set()
        overflowed = newest = False
        while h.app.busy:
            views = list(h.app.query(TaskView))
            if views and views[0].has_class("-windowed"):
                [view] = views
                await h.pilot.pause()
                if view.has_class("-windowed") and view.is_mounted:
                    seen.add(window_rows(view))
                    body = view.query_one(".task-body")
                    if (
                        body.children and body.outer_size.height > WINDOW_ROWS
                    ):  # more than the window holds
                        overflowed = True
                        last = body.children[-1].region
                        window = view.query_one(".task-window").content_region
                        newest = newest or (last.bottom == window.bottom and last.height > 0)
            await h.pilot.pause(0.02)
        await h.idle()
        assert seen == {WINDOW_ROWS}, f"the running task's window took {seen} rows"
        assert overflowed, "the nested entries never overflowed the window"
        assert newest, "the newest entry's last row never showed at the window's foot"
        [view] = h.app.query(TaskView)
        assert not view.has_class("-windowed") and view.outer_size.height == 1  # done: folded


async def test_a_question_in_a_running_task_opens_its_window(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (
        reply(tool_calls=[task_call("Write one.txt and say so.")]).answering(PROMPT),
        reply(
            tool_calls=[tool_call("write_file", {"file_path": "one.txt", "content": "one\n" * 12})]
        ).answering("Write one.txt and say so."),
        reply("finished with one.txt").answering("Write one.txt and say so."),
        reply("It asked.").answering(PROMPT),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:  # manual: the write asks
        await h.send(PROMPT)
        await h.until(lambda: len(h.app.query(ApprovalWidget)) == 1, what="the question")
        await h.pilot.pause()
        [view] = h.app.query(TaskView)
        [question] = h.app.query(ApprovalWidget)
        assert not view.has_class("-windowed")
        window = view.query_one(".task-window").region
        assert window.contains_region(question.region), "the question is cut by the task's window"
        assert question.region.height > WINDOW_ROWS  # taller than the window: it grew to show it
        assert h.app.focused is question
        await h.pilot.pause(0.05)
        await h.press("y")
        await h.idle()
        assert (workspace / "one.txt").read_text() == "one\n" * 12
        assert h.answers() == ["It asked."]
