"""Turn control: interrupts, the queue, the Esc and Ctrl+C chains, quitting, shell escapes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from dcode.agent.events import ToolStatus
from dcode.settings.config import ApprovalMode
from dcode.tui.transcript.answer import AssistantMessage
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_exit_signals import running
from tests.test_tui_app_support import make_settings, running_app

LONG = " ".join(f"word{n}" for n in range(400))


def slow(text: str = LONG) -> object:
    return reply(text, chunk_size=6, chunk_delay=0.02)


async def test_esc_interrupts_and_keeps_the_partial_text(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, slow(), reply("next answer")) as h:
        await h.send("write a lot")
        await h.until(lambda: len((h.answers() or [""])[-1]) > 30, what="some streamed text")
        await h.press("escape")
        await h.idle()
        partial = h.answers()[-1]
        assert 30 < len(partial) < len(LONG)
        assert LONG.startswith(partial)
        assert h.app.query(AssistantMessage).last().entry.interrupted
        screen = h.text()
        assert (
            screen.count("interrupted") == 1
            and "⏹ interrupted · the partial answer was kept" in screen
        )
        await h.send("go on")
        await h.idle()
        assert h.answers()[-1] == "next answer"
        # The partial answer stayed in the thread the model sees next.
        history = h.server.transcript(1)
        assert ("assistant", partial) in history and history[-1] == ("user", "go on")


async def test_interrupt_before_any_output_puts_the_prompt_back(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server, workspace, dcode_home, reply("late", chunk_delay=2.0, chunk_size=1)
    ) as h:  # nothing comes for 2 s
        await h.send("please wait")
        await h.until(lambda: h.app.busy)
        await h.until(
            lambda: h.app.runner is not None and h.app.runner.busy,
            what="the turn to reach the runner",
        )
        await h.press("escape")
        await h.idle()
        assert h.app.prompt_input.text == "please wait"
        screen = h.text()
        assert screen.count("interrupted") == 1 and "partial answer" not in screen
        assert "interrupted before any answer: the prompt is back in the input" in screen
        h.app.prompt_input.clear()
        await h.send("/offload")  # notices after the interrupted turn are shown again
        await h.until(lambda: "nothing to compact yet" in h.text(), what="the offload notice")


async def test_an_interrupted_tool_call_is_the_one_line(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    steps = (
        reply("Waiting.", tool_calls=[tool_call("execute", {"command": "sleep 30"})]),
        reply("never"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("/approve all")
        await h.send("wait for it")
        await h.until(lambda: h.calls() and h.calls()[0].summary, what="the shell call to run")
        await h.press("escape")
        await h.idle()
        screen = h.text()
        assert screen.count("interrupted") == 1 and "└ interrupted" in screen


async def test_esc_right_after_enter_stops_the_turn_before_it_starts(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("too late")) as h:
        # Hold the turn where Enter has made the app busy but its worker has not reached the
        # runner yet: the moment a fast Esc lands in.
        gate = asyncio.Event()
        add_user = h.app.transcript.add_user

        async def held_add_user(*args: Any, **kwargs: Any) -> None:
            await gate.wait()
            await add_user(*args, **kwargs)

        h.app.transcript.add_user = held_add_user  # type: ignore[method-assign]
        await h.send("never mind")
        await h.until(lambda: h.app.busy, what="the turn to be on its way")
        await h.press("escape")
        gate.set()
        await h.idle()
        assert h.app.prompt_input.text == "never mind"
        assert "too late" not in h.text() and not server.requests


async def test_messages_typed_while_busy_are_queued_then_sent(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server, workspace, dcode_home, slow(LONG[:600]), reply("second answer")
    ) as h:
        await h.send("first")
        await h.until(lambda: h.answers(), what="streaming")
        await h.send("second")
        assert [item.text for item in h.app.session.queue] == ["second"]
        assert "⧗ queued second" in h.text() and "1 queued" in h.text()
        await h.idle(20)
        assert h.prompts() == ["first", "second"]
        assert h.answers() == [LONG[:600], "second answer"]
        assert "queued" not in h.text()


async def test_esc_unqueues_the_last_message_before_interrupting(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, slow()) as h:
        await h.send("first")
        await h.until(lambda: h.answers(), what="streaming")
        await h.send("queued one")
        await h.send("queued two")
        await h.press("escape")
        assert [item.text for item in h.app.session.queue] == ["queued one"]
        assert h.app.prompt_input.text == "queued two"
        assert h.app.busy  # the turn goes on
        await h.press("escape")
        assert not h.app.session.queue
        assert h.app.prompt_input.text.startswith("queued one")
        await h.press("escape")  # now the turn itself
        await h.idle()
        assert h.app.query(AssistantMessage).last().entry.interrupted


async def test_ctrl_c_interrupts_then_quits_on_a_double_press(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, slow()) as h:
        await h.send("go")
        await h.until(lambda: h.answers(), what="streaming")
        await h.press("ctrl+c")
        await h.idle()
        assert h.app.query(AssistantMessage).last().entry.interrupted
        assert h.app.is_running
        await h.press("ctrl+c")
        await h.pilot.pause()
        assert h.app.is_running  # one press only warns
        await h.press("ctrl+c")
        await h.until(lambda: not h.app.is_running, what="the app to quit")
        assert h.app.return_code == 0


async def test_ctrl_c_copies_a_selection_first(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("copy me please")) as h:
        await h.send("hi")
        await h.idle()
        h.app.prompt_input.area.load_text("selected words")
        h.app.prompt_input.area.select_all()
        await h.press("ctrl+c")
        assert h.app.clipboard == "selected words"
        assert h.app.is_running


async def test_ctrl_d_quits(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.type("a draft")
        await h.press("ctrl+d")
        await h.until(lambda: not h.app.is_running, what="the app to quit")


async def test_private_shell_output_stays_out_of_the_context(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home, reply("noted")) as h:
        await h.send("!!echo secret-value")
        await h.until(
            lambda: "secret-value" in h.text().split("echo secret-value", 1)[-1], what="the output"
        )
        assert "not sent to the model" in h.text()
        await h.send("!echo shared-value")
        await h.until(
            lambda: not h.app.busy and "shared-value" in h.text().split("echo shared-value", 1)[-1],
            what="the shared output",
        )
        await h.send("what did I run?")
        await h.idle()
        sent = "\n".join(text for _, text in h.server.transcript(0))
        assert "shared-value" in sent and "secret-value" not in sent


async def test_a_large_streamed_write_reaches_the_file_and_the_screen(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """60 KB of arguments in 3-character deltas: merged on the way, none of them lost."""
    content = 'print("café ✓")\n' * 4_000
    arguments = json.dumps({"file_path": "big.py", "content": content})
    big = reply(
        tool_calls=[tool_call("write_file", {"file_path": "big.py", "content": content})],
        chunk_size=3,
    )
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    async with running_app(
        server, workspace, dcode_home, big, reply("written"), settings=settings
    ) as h:
        await h.send("write big.py")
        await h.idle(60)
        assert (workspace / "big.py").read_text(encoding="utf-8") == content
        [call] = h.calls()
        assert call.status is ToolStatus.OK
        assert call.args_chars == len(arguments)  # the live deltas add up to the whole arguments
        assert h.answers()[-1] == "written"


async def test_quitting_mid_answer_ends_the_turn_there(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """Ctrl+D while the answer streams interrupts the turn as Esc does (its partial answer kept)
    and exits 0, without waiting for the rest of the answer."""
    words = 400
    async with running_app(
        server, workspace, dcode_home, reply("word " * words, chunk_size=5, chunk_delay=0.02)
    ) as h:
        await h.send("go")
        await h.until(
            lambda: h.answers() and len(h.answers()[-1]) > 20, what="the answer to stream"
        )
        await h.press("ctrl+d")
        await h.until(lambda: not h.app.is_running, what="the app to quit", timeout=30)
        assert h.app.return_code == 0
        assert len(h.answers()[-1]) < len("word " * words) - 1  # it stopped where it was


async def test_quitting_mid_command_lets_the_turn_end_first(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """The cancelled turn ends its command and writes its end to the transcript: the screen must
    still be there then (a worker that finds it gone fails, and dcode would exit 1)."""
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.ALL)
    command = reply(
        tool_calls=[tool_call("execute", {"command": "sleep 60 & echo $! > sleep.pid; wait"})]
    )
    async with running_app(server, workspace, dcode_home, command, settings=settings) as h:
        await h.send("go")
        await h.until(
            lambda: (
                (workspace / "sleep.pid").exists() and (workspace / "sleep.pid").read_text().strip()
            ),
            what="the command",
        )
        sleeper = int((workspace / "sleep.pid").read_text())
        await h.press("ctrl+d")
        await h.until(lambda: not h.app.is_running, what="the app to quit")
        assert h.app.return_code == 0
        assert not running(sleeper)
        [call] = h.calls()
        assert call.status is ToolStatus.CANCELLED  # the turn ended while its screen was there


async def test_an_app_closed_mid_turn_exits_without_an_error(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """The app closed from outside while an answer streams (its widgets taken down before the
    turn's worker is cancelled): the turn's end touches no widget that is gone, so the app
    exits without an error (``run_test`` re-raises a worker's failure on the way out)."""
    async with running_app(
        server, workspace, dcode_home, reply("word " * 400, chunk_size=5, chunk_delay=0.02)
    ) as h:
        await h.send("go")
        await h.until(
            lambda: h.answers() and len(h.answers()[-1]) > 20, what="the answer to stream"
        )
        h.app.exit()
        await h.until(lambda: not h.app.is_running, what="the app to close", timeout=30)
    assert h.app.return_code == 0
