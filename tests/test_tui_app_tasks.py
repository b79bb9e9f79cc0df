"""Subagents in the TUI: each ``task`` call is one widget with the subagent's own stream, folded
when done, approvals that name the agent asking, and the same on resume (real app, engine,
SQLite and scripted server)."""

from __future__ import annotations

from pathlib import Path

from dcode.agent.events import ToolStatus
from dcode.tui.approval_widget import ApprovalWidget
from dcode.tui.transcript import AssistantEntry
from dcode.tui.transcript.nested_answer import NestedAnswer
from dcode.tui.transcript.task_view import TaskView
from dcode.tui.transcript.tools import ToolCallView
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import Harness, running_app

PROMPT = "look around the workspace"
JOB = "Count and name the files."
JOB_2 = "Read a.txt and report its first word."


def task_call(description: str, call_id: str | None = None):
    return tool_call(
        "task", {"description": description, "subagent_type": "general-purpose"}, call_id=call_id
    )


def task_views(h: Harness) -> list[TaskView]:
    return list(h.app.query(TaskView))


def nested_text(view: TaskView) -> str:
    """What a task's nested view shows: its subagent's answers and calls, as plain text."""
    parts = [widget.entry.text for widget in view.query(NestedAnswer)]
    parts += [f"{widget.entry.name} {widget.entry.summary}" for widget in view.query(ToolCallView)]
    return "\n".join(parts)


def lines_of(view: TaskView) -> int:
    return view.outer_size.height


async def test_a_task_is_one_widget_with_the_subagents_calls_and_text_then_folds(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    steps = (
        reply(
            "Handing it to a subagent.", tool_calls=[task_call(JOB)], usage=(3_000, 20)
        ).answering(PROMPT),
        reply(
            "Listing first.", tool_calls=[tool_call("ls", {"path": "."})], usage=(90_000, 10)
        ).answering(JOB),
        reply(
            "There is one file, a.txt.", usage=(91_000, 12), chunk_size=2, chunk_delay=0.05
        ).answering(JOB),
        reply("The workspace holds one file.", usage=(3_500, 15)).answering(PROMPT),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send(PROMPT)
        await h.until(
            lambda: (
                task_views(h)
                and "There is" in nested_text(task_views(h)[0])
                and "There is" in h.text()
            ),
            what="the subagent's text",
        )
        [view] = task_views(h)
        screen = h.text()
        assert "Listing first." in screen and "✓ ls ." in screen  # live, under the task's head
        assert "general-purpose  Count and name the files." in screen
        assert "ls ." in nested_text(view) and "Listing first." in nested_text(view)
        # Its tool call and text are in its widget, not the session's answer or steps.
        assert [call.name for call in h.calls()] == ["task"]
        assert all("Listing" not in text and "There is" not in text for text in h.answers())
        assert "Context 9% · 3.0k tokens" in screen  # the subagent's window is not the session's
        await h.idle()
        assert h.answers() == ["Handing it to a subagent.", "The workspace holds one file."]
        run = view.entry.task
        assert (
            run is not None
            and run.status is ToolStatus.OK
            and run.result == "There is one file, a.txt."
        )
        assert (run.input_tokens, run.output_tokens) == (181_000, 22)
        await h.pilot.pause()
        # Done: one line, with its figures and its result's preview.
        assert lines_of(view) == 1
        [head] = [line for line in h.text().splitlines() if "Count and name" in line]
        assert (
            "✓ general-purpose" in head
            and "181k tokens" in head
            and "→ There is one file, a.txt." in head
        )
        assert "Listing first." not in h.text()
        assert "Context 11% · 3.5k tokens" in h.text()
        # Ctrl+O opens everything it did; again, it folds.
        await h.press("ctrl+o")
        await h.until(
            lambda: "Listing first." in h.text() and "✓ ls ." in h.text(), what="the opened task"
        )
        assert "a.txt" in h.text() and lines_of(view) > 4
        await h.press("ctrl+o")
        await h.until(lambda: lines_of(view) == 1, what="the task folded again")


async def test_parallel_tasks_stream_into_separate_widgets(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "a.txt").write_text("alpha beta\n")
    first = "one file " * 12
    second = "alpha is first " * 12
    steps = (
        reply(tool_calls=[task_call(JOB, "call_a"), task_call(JOB_2, "call_b")]).answering(PROMPT),
        reply(first, chunk_size=6, chunk_delay=0.03).answering(JOB),
        reply(tool_calls=[tool_call("read_file", {"file_path": "a.txt"})]).answering(JOB_2),
        reply(second, chunk_size=6, chunk_delay=0.03).answering(JOB_2),
        reply("Both are done.").answering(PROMPT),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send(PROMPT)
        overlapped = False
        while h.app.busy:
            views = task_views(h)
            if len(views) == 2 and all(
                v.entry.task and v.entry.task.running and nested_text(v) for v in views
            ):
                overlapped = True
            await h.pilot.pause(0.02)
        await h.idle()
        assert overlapped, "the two subagents never streamed at the same time"
        one, two = task_views(h)
        assert (one.entry.task.description, two.entry.task.description) == (JOB, JOB_2)
        # Each its own stream, never mixed.
        assert [e.text for e in one.entry.task.entries if isinstance(e, AssistantEntry)] == [first]
        assert [e.text for e in two.entry.task.entries if isinstance(e, AssistantEntry)] == [second]
        assert h.answers() == ["Both are done."]
        await h.pilot.pause()
        assert lines_of(one) == lines_of(two) == 1
        screen = h.text()
        assert "→ one file" in screen and "→ alpha is" in screen
        # A click on one head opens that one only.
        await h.pilot.click(TaskView, offset=(4, 0))
        await h.until(lambda: lines_of(one) > 1, what="the clicked task to open")
        assert lines_of(two) == 1 and "read_file a.txt" not in h.text()
        # A click in what it did leaves it open; one on its head folds it again.
        opened = lines_of(one)
        assert await h.pilot.click(one.query_one(NestedAnswer))
        await h.pilot.pause()
        assert one.expanded and lines_of(one) == opened
        await h.pilot.click(TaskView, offset=(4, 0))
        await h.until(lambda: lines_of(one) == 1, what="the clicked task to fold")


async def test_approvals_inside_parallel_subagents_name_the_agent_and_take_y_and_n(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    jobs = {"one.txt": "Write one.txt and say so.", "two.txt": "Write two.txt and say so."}
    steps = [reply(tool_calls=[task_call(job) for job in jobs.values()]).answering(PROMPT)]
    for name, job in jobs.items():
        steps += [
            reply(
                tool_calls=[tool_call("write_file", {"file_path": name, "content": f"{name}\n"})]
            ).answering(job),
            reply(f"finished with {name}").answering(job),
        ]
    steps.append(reply("Both asked.").answering(PROMPT))
    async with running_app(server, workspace, dcode_home, *steps) as h:  # manual: every write asks
        await h.send(PROMPT)
        await h.until(
            lambda: (
                len(h.app.transcript.pending_approvals) == 2
                and len(h.app.query(ApprovalWidget)) == 2
            ),
            what="both questions",
        )
        # Both questions are drawn once the screen has caught up (a busy machine lags it).
        await h.until(
            lambda: all(
                f"task:{n} · general-purpose asks: allow this edit?" in h.text() for n in (1, 2)
            ),
            what="both questions on screen",
        )
        first, second = h.app.transcript.pending_approvals
        assert h.app.focused is first.view.query_one(ApprovalWidget)  # the first keeps the keys
        approved, refused = first.args["file_path"], second.args["file_path"]
        await h.pilot.pause(0.05)
        await h.press("y")
        # The second question takes the keys once the first is answered.
        await h.until(
            lambda: (
                isinstance(h.app.focused, ApprovalWidget)
                and h.app.focused.request.call_id == second.call_id
            ),
            what="the second question to take the keys",
        )
        assert len(h.app.transcript.pending_approvals) == 1
        await h.press("n")
        await h.idle()
        assert (workspace / approved).read_text() == f"{approved}\n"
        assert not (workspace / refused).exists()
        assert first.status is ToolStatus.OK and second.status is ToolStatus.DENIED
        assert h.app.focused is h.app.prompt_input.area
        assert h.answers() == ["Both asked."]


async def test_a_resumed_session_shows_its_tasks_and_what_they_did(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    steps = (
        reply(tool_calls=[task_call(JOB)]).answering(PROMPT),
        reply(
            "Listing first.", tool_calls=[tool_call("ls", {"path": "."})], usage=(100, 10)
        ).answering(JOB),
        reply("There is one file, a.txt.", usage=(120, 12)).answering(JOB),
        reply("One file.").answering(PROMPT),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send(PROMPT)
        await h.idle()
        assert h.app.runner is not None
        session_id = h.app.runner.session_id
    async with running_app(server, workspace, dcode_home, session_id=session_id) as h:
        await h.until(lambda: task_views(h), what="the resumed task")
        [view] = task_views(h)
        await h.pilot.pause()
        assert lines_of(view) == 1, h.text()
        [head] = [line for line in h.text().splitlines() if "Count and name" in line]
        assert (
            "✓ general-purpose" in head
            and "242 tokens" in head
            and "→ There is one file, a.txt." in head
        )
        assert h.answers() == ["One file."]
        await h.press("ctrl+o")
        await h.until(
            lambda: "Listing first." in h.text() and "✓ ls ." in h.text(),
            what="the resumed task opened",
        )
        assert "Listing first." in nested_text(view)


def test_the_tui_knows_the_task_tool_by_the_core_name() -> None:
    from dcode.agent.tools.spec import TASK
    from dcode.tui.transcript.entries import TASK_TOOL

    assert TASK.name == TASK_TOOL


def test_no_foldable_widget_has_a_click_handler_of_its_own() -> None:
    """Textual would call it and ``Foldable``'s both, so a click anywhere on a task would fold
    it: a widget says ``FOLDS_ON_CLICK`` instead."""
    from dcode.tui.transcript.plan_view import PlanCallView
    from dcode.tui.transcript.remote_task_view import RemoteTaskView
    from dcode.tui.transcript.tools import Foldable

    def below(cls: type) -> list[type]:
        return [sub for child in cls.__subclasses__() for sub in (child, *below(child))]

    widgets = below(Foldable)
    assert {ToolCallView, PlanCallView, TaskView, RemoteTaskView} <= set(widgets)
    assert [w for w in widgets if "on_click" in vars(w) or "_on_click" in vars(w)] == []
    assert not TaskView.FOLDS_ON_CLICK and ToolCallView.FOLDS_ON_CLICK
