"""One transcript model for the live turn and the resumed session: the same events give the same
entries, and a call id a server reuses in a later turn lands in that turn (real app, engine,
SQLite and scripted server)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from PIL import Image
from textual import events

from dcode.agent.events import ToolStatus
from dcode.tui.approval_widget import ApprovalWidget
from dcode.tui.transcript import AssistantEntry, NoticeEntry, ShellEntry, ToolGroupEntry, UserEntry
from dcode.tui.transcript.entries import Entry, ToolCallEntry
from dcode.tui.transcript.tools import ToolGroupView
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_media import VISION
from tests.test_tui_app_support import Harness, make_settings, running_app
from tests.test_tui_app_tasks import task_call


def facts(entries: list[Entry]) -> list[tuple[Any, ...]]:
    """What each entry shows, without its widget or what only a running turn has."""
    shown: list[tuple[Any, ...]] = []
    for entry in entries:
        match entry:
            case UserEntry():
                shown.append(
                    ("user", entry.text, [seen.strip for seen in entry.videos], entry.files)
                )
            case AssistantEntry():
                shown.append(("answer", entry.text, entry.reasoning, entry.interrupted))
            case ShellEntry():
                shown.append(
                    (
                        "shell",
                        entry.command,
                        entry.output,
                        entry.exit_code,
                        entry.private,
                        entry.running,
                    )
                )
            case NoticeEntry():
                shown.append(("notice", entry.text, entry.level, entry.path))
            case ToolGroupEntry():
                shown.append(("step", entry.open, [call_facts(call) for call in entry.calls]))
            case _:
                shown.append((type(entry).__name__,))
    return shown


def call_facts(call: ToolCallEntry) -> tuple[Any, ...]:
    run = call.task
    task = None
    if run is not None:
        task = (
            run.path,
            run.agent_type,
            run.description,
            run.status,
            run.result,
            run.error,
            run.num_turns,
            facts(run.entries),
        )
    frames = call.frames.strip if call.frames is not None else None
    return (
        call.call_id,
        call.name,
        call.summary,
        call.args,
        call.status,
        call.preview,
        call.output,
        call.diff,
        call.saved_to,
        frames,
        task,
    )


async def resumed_facts(
    server: ScriptedModelServer, workspace: Path, home: Path, session_id: str, **changes: Any
) -> list[tuple[Any, ...]]:
    settings = replace(make_settings(home, workspace, server), **changes)
    async with running_app(server, workspace, home, session_id=session_id, settings=settings) as h:
        await h.until(lambda: h.prompts(), what="the resumed transcript")
        await h.until(lambda: h.entries(NoticeEntry), what="the resumed session's line")
        *shown, said = facts(h.app.transcript.entries)
        assert said[0] == "notice" and said[1].startswith(
            f"Resumed session {session_id} · "
        )  # the resume's own line
        return shown


def notices(h: Harness) -> list[str]:
    return [entry.text for entry in h.entries(NoticeEntry)]


async def paste_image(h: Harness, path: Path, text: str) -> None:
    h.app.prompt_input.area.post_message(events.Paste(f"'{path}'"))
    await h.until(lambda: "[image 1]" in h.app.prompt_input.text, 10, "the image placeholder")
    await h.type(text)
    await h.press("enter")
    await h.idle()


async def test_a_resumed_transcript_is_the_live_one(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """A ``!cmd`` turn, a pasted image, a subagent, a compaction, a denied call and an
    interrupted answer: the resumed session's entries are the live session's, field for field."""
    (workspace / "a.txt").write_text("alpha\n")
    shot = workspace / "shot.png"
    Image.new("RGB", (64, 64), (20, 120, 200)).save(shot)
    settings = replace(
        make_settings(dcode_home, workspace, server), model_overrides={"openai:test-model": VISION}
    )
    session = "printf"  # in the first user message: the ``!cmd``'s note, then the summary of it
    steps = (
        reply("A blue square. " * 200).answering(session),  # enough history to compact
        reply("Handing it over.", tool_calls=[task_call("Count the files.")]).answering(session),
        reply("One file.").answering("Count the files."),
        reply("There is one file.").answering(session),
        reply("SUMMARY: ran printf, looked at an image, ran a subagent.").answering(session),
        reply(tool_calls=[tool_call("execute", {"command": "make"})]).answering(session),
        reply("word " * 300, chunk_size=3, chunk_delay=0.02).answering(session),
    )
    async with running_app(server, workspace, dcode_home, *steps, settings=settings) as h:
        await h.send("!printf 'one\\ntwo\\n'")
        await h.idle()
        await paste_image(h, shot, "what is this?")
        await h.send("look around")
        await h.idle()
        await h.send("/offload")
        await h.until(
            lambda: any("summarized" in text for text in notices(h)), what="the compaction"
        )
        await h.idle()
        await h.send("build it")
        await h.approval()
        await h.press("n")
        await h.until(lambda: len((h.answers() or [""])[-1]) > 20, what="some streamed text")
        await h.press("escape")
        await h.idle()
        assert h.app.runner is not None
        session_id = h.app.runner.session_id
        live = facts(h.app.transcript.entries)
    kinds = [
        "shell",
        "user",
        "answer",
        "user",
        "answer",
        "step",
        "answer",
        "notice",
        "notice",
        "user",
        "step",
        "answer",
    ]
    assert [fact[0] for fact in live] == kinds
    assert live[0][1:4] == ("printf 'one\\ntwo\\n'", "one\ntwo\n", 0)
    assert live[1][1] == "[image 1] what is this?"
    resumed = await resumed_facts(
        server, workspace, dcode_home, session_id, model_overrides={"openai:test-model": VISION}
    )
    assert resumed == live


async def test_a_call_id_reused_in_a_later_turn_lands_in_that_turn(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """A server that starts again at ``call_1`` each turn: the second turn's call, and its
    approval, are drawn in the second turn, live and after a resume."""
    (workspace / "a.txt").write_text("alpha\n")
    first = (
        reply(tool_calls=[tool_call("read_file", {"file_path": "a.txt"}, call_id="call_1")]),
        reply("It says alpha."),
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": "b.txt", "content": "b"}, call_id="call_1")
            ]
        ),
        reply("Wrote b."),
    )
    async with running_app(server, workspace, dcode_home, *first) as h:
        await h.send("read a")
        await h.idle()
        await h.send("write b")
        await approve_in_the_last_step(h, "write_file")
        assert h.app.runner is not None
        session_id = h.app.runner.session_id
    assert (workspace / "b.txt").read_text() == "b"
    again = (
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": "c.txt", "content": "c"}, call_id="call_1")
            ]
        ),
        reply("Wrote c."),
    )
    async with running_app(server, workspace, dcode_home, *again, session_id=session_id) as h:
        await h.until(lambda: h.prompts(), what="the resumed transcript")
        await h.send("write c")
        await approve_in_the_last_step(h, "write_file")
        steps = h.entries(ToolGroupEntry)
        assert [[call.name for call in step.calls] for step in steps] == [
            ["read_file"],
            ["write_file"],
            ["write_file"],
        ]
        assert [call.status for step in steps for call in step.calls] == [ToolStatus.OK] * 3
        assert "alpha" in steps[0].calls[0].output
    assert (workspace / "c.txt").read_text() == "c"


async def approve_in_the_last_step(h: Harness, name: str) -> None:
    """The approval is asked in the turn's own step, on screen; ``y`` runs the call."""
    pending = await h.approval()
    last = h.entries(ToolGroupEntry)[-1]
    assert pending.name == name and last.calls == [pending]
    [question] = h.app.query(ApprovalWidget)
    assert isinstance(last.view, ToolGroupView) and last.view in question.ancestors
    assert h.app.transcript.scroll_y >= h.app.transcript.max_scroll_y - 1  # the question is in view
    await h.press("y")
    await h.idle()
    assert last.calls[0].status is ToolStatus.OK


# --- the model and the replay, without the app


def test_the_model_knows_nothing_of_textual() -> None:
    import ast

    import dcode.tui.transcript.model as model

    tree = ast.parse(Path(model.__file__).read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert imported and not [
        name
        for name in imported
        if name.startswith("textual") or ".view" in name or "widget" in name
    ]


def test_a_reused_call_id_replays_into_its_own_turn() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from dcode.agent.saved_thread import replay
    from dcode.tui.transcript.model import TranscriptModel

    def turn(prompt: str, name: str, result: str) -> list[Any]:
        call = {"id": "call_1", "name": name, "args": {"file_path": "a.txt"}}
        return [
            HumanMessage(prompt),
            AIMessage("", tool_calls=[call]),
            ToolMessage(result, tool_call_id="call_1", name=name),
            AIMessage("done"),
        ]

    model = TranscriptModel.replayed(
        replay([*turn("one", "read_file", "alpha"), *turn("two", "ls", "a.txt")])
    )
    steps = [entry for entry in model.entries if isinstance(entry, ToolGroupEntry)]
    assert [[(call.name, call.output) for call in step.calls] for step in steps] == [
        [("read_file", "alpha")],
        [("ls", "a.txt")],
    ]
    assert not any(step.open for step in steps)


def test_a_shell_note_replays_as_the_command_only_when_marked() -> None:
    from langchain_core.messages import HumanMessage

    from dcode.agent.events import ShellCommandRan, UserMessage
    from dcode.agent.saved_thread import replay
    from dcode.agent.shell_note import shell_note

    text, marks = shell_note("git diff --stat", 1, " a.txt | 2 +-\n```nested```")
    assert list(replay([HumanMessage(text, additional_kwargs=marks)])) == [
        ShellCommandRan("git diff --stat", " a.txt | 2 +-\n```nested```", 1)
    ]
    assert list(replay([HumanMessage(text)])) == [UserMessage(text)]  # typed by the user: a prompt
    forged = {
        key: {"command": "ls", "exit_code": 0} for key in marks
    }  # a mark that does not fit the text
    assert list(replay([HumanMessage(text, additional_kwargs=forged)])) == [UserMessage(text)]


def test_an_image_named_in_the_prompt_gets_no_second_mark() -> None:
    from langchain_core.messages import HumanMessage

    from dcode.agent.stream import user_text

    image = {"type": "image", "source_type": "base64", "data": "", "mime_type": "image/png"}
    assert (
        user_text(HumanMessage([{"type": "text", "text": "[image 1] what is this?"}, image]))
        == "[image 1] what is this?"
    )
    # ``dcode -p -i shot.png``: the prompt does not name it, so the mark says it was there.
    assert (
        user_text(HumanMessage([{"type": "text", "text": "what is this?"}, image]))
        == "what is this?[image]"
    )
    two = [{"type": "text", "text": "[image 2] and this?"}, image, image]
    assert user_text(HumanMessage(two)) == "[image 2] and this?[image]"
