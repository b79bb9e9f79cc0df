"""The app end to end: typing, streaming, tools, queueing, first paint (real engine, scripted server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownFence

from dcode.agent.events import ToolStatus
from dcode.settings.config import WireApi
from dcode.tui.status import StatusBar
from dcode.tui.transcript.answer import AssistantMessage
from dcode.tui.transcript.blocks import ReasoningView
from dcode.tui.transcript.tools import ToolCallView, ToolGroupView
from dcode.tui.widgets.prompt_input import BUSY_PLACEHOLDER, DEFAULT_PLACEHOLDER
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import GatedApp, make_settings, running_app

ROOT = Path(__file__).resolve().parents[1]


async def test_typing_and_sending_streams_markdown(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    answer = (
        "Here is **bold** text.\n\n```python\nprint('hi')\n```\n\nAnd a list:\n\n- one\n- two\n"
    )
    async with running_app(
        server, workspace, dcode_home, reply(answer, chunk_size=7, usage=(2_000, 40))
    ) as h:
        await h.send("say hello")
        await h.idle()
        assert h.prompts() == ["say hello"]
        assert h.answers() == [answer]
        view = h.app.query_one(AssistantMessage)
        assert view.query_one(Markdown).source == answer
        fences = view.query(MarkdownFence)
        assert len(fences) == 1 and fences.first().code.strip() == "print('hi')"
        screen = h.text()
        assert "say hello" in screen and "Here is bold text." in screen and "• one" in screen
        status = h.app.query_one(StatusBar)
        assert status.context_tokens == 2_040
        assert "Context 6% · 2.0k tokens" in screen
        assert h.server.requests[0].transcript()[-1] == ("user", "say hello")
        assert h.app.prompt_input.text == ""


async def test_reasoning_is_dimmed_and_folds(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    step = reply("The answer is 4.", reasoning="Two plus two is four, obviously.")
    settings = make_settings(dcode_home, workspace, server, api=WireApi.RESPONSES)
    async with running_app(server, workspace, dcode_home, step, settings=settings) as h:
        await h.send("2+2?")
        await h.idle()
        view = h.app.query_one(ReasoningView)
        assert "▸ Thought (6 words" in str(view.render())
        assert "obviously" not in h.text()
        await h.pilot.click(ReasoningView)
        assert "obviously" in str(view.render())
        assert h.answers()[-1] == "The answer is 4."


async def test_prompt_given_at_start_waits_for_the_engine(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply("first"),
        reply("second"),
        prompt="from the command line",
        wait_ready=False,
        app_class=GatedApp,
    ) as h:
        # Before the engine is ready the prompt is queued and shown as such, not lost.
        assert not h.app.ready
        assert [item.text for item in h.app.session.queue] == ["from the command line"]
        await h.send("typed while loading")
        assert [item.text for item in h.app.session.queue] == [
            "from the command line",
            "typed while loading",
        ]
        assert "⧗ queued from the command line" in h.text()
        h.app.open_gate()
        await h.ready()
        await h.until(lambda: len(h.answers()) == 2 and not h.app.busy, what="both queued prompts")
        assert h.prompts() == ["from the command line", "typed while loading"]
        assert h.answers() == ["first", "second"]
        assert "queued" not in h.text()


async def test_while_the_engine_loads_the_prompt_says_it_is_starting(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server, workspace, dcode_home, reply("answer"), wait_ready=False, app_class=GatedApp
    ) as h:
        await h.pilot.pause()
        screen = h.text()
        assert (
            "Starting the agent…" in screen
            and "what you send goes as soon as it is ready" in screen
        )
        assert "Working" not in screen
        h.app.open_gate()
        await h.ready()
        await h.pilot.pause()
        assert h.app.prompt_input.area.placeholder == DEFAULT_PLACEHOLDER
        await h.send("go")
        await h.until(lambda: h.app.busy, what="the turn")
        assert h.app.prompt_input.area.placeholder == BUSY_PLACEHOLDER
        await h.idle()


async def test_tool_call_widget_preview_and_expansion(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 41)))
    steps = (
        reply(tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})]),
        reply("I read it."),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("read notes")
        await h.idle()
        [call] = h.calls()
        assert call.status is ToolStatus.OK and call.name == "read_file"
        screen = h.text()
        assert "✓ read_file notes.txt" in screen
        assert "line 1" in screen and "line 30" not in screen  # a short preview only
        view = h.app.query_one(ToolCallView)
        await h.pilot.click(ToolCallView)
        assert view.expanded
        await h.pilot.pause()
        assert "line 30" in h.text()
        head = view.query_one(".tool-head")
        h.app.transcript.scroll_to_widget(head, animate=False, top=True)
        await h.pilot.pause()
        await h.pilot.click(head)
        assert not view.expanded
        await h.pilot.press("ctrl+o")  # Ctrl+O expands every tool output
        assert view.expanded and h.app.transcript.expanded
        await h.pilot.press("ctrl+o")
        assert not view.expanded


async def test_calls_of_one_step_are_grouped_and_errors_stay_visible(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    calls = [
        tool_call("read_file", {"file_path": "a.txt"}),
        tool_call("ls", {"path": "."}),
        tool_call("read_file", {"file_path": "missing.txt"}),
    ]
    async with running_app(
        server, workspace, dcode_home, reply(tool_calls=calls), reply("done")
    ) as h:
        await h.send("look around")
        await h.idle()
        group = h.app.query_one(ToolGroupView)
        assert group.has_class("-folded")
        screen = h.text()
        assert "Ran 3 tools" in screen and "read_file ×2, ls" in screen and "1 failed" in screen
        failed = [
            view for view in group.query(ToolCallView) if view.entry.status is ToolStatus.ERROR
        ]
        assert len(failed) == 1 and failed[0].display and failed[0].region.height > 0
        ok = [view for view in group.query(ToolCallView) if view.entry.status is ToolStatus.OK]
        assert all(view.region.height == 0 for view in ok)  # folded away
        await h.pilot.click(group.query_one(".group-head"))
        await h.pilot.pause()
        assert all(view.region.height > 0 for view in ok)


async def test_write_shows_a_diff(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\ny = 2\n")
    edit = tool_call(
        "edit_file", {"file_path": "app.py", "old_string": "y = 2", "new_string": "y = 3"}
    )
    async with running_app(
        server, workspace, dcode_home, reply(tool_calls=[edit]), reply("edited")
    ) as h:
        h.app.set_mode(h.app.mode.next())  # edits: no approval needed
        await h.send("edit it")
        await h.idle()
        screen = h.text()
        assert "✓ edit_file app.py" in screen and "+1 -1" in screen
        assert "-y = 2" in screen and "+y = 3" in screen
        assert (workspace / "app.py").read_text() == "x = 1\ny = 3\n"


async def test_model_error_is_one_line(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    from tests.support.model_server import fault

    async with running_app(
        server, workspace, dcode_home, fault.status(401, message="bad key")
    ) as h:
        await h.send("hi")
        await h.idle()
        errors = [line for line in h.text().splitlines() if "✗" in line]
        assert errors, h.text()
        assert h.app.ready and not h.app.busy


def test_first_paint_happens_before_langchain_is_imported(tmp_path: Path) -> None:
    """In a fresh process: when the first frame is up, no langchain module has been imported,
    nor Markdown (an empty transcript has no answer to render)."""
    probe = f"""
import asyncio, json, sys
from pathlib import Path
from dcode.settings.config import Settings
from dcode.tui.app import DcodeApp

class Probe(DcodeApp):
    def _after_first_paint(self):
        heavy = ('langchain', 'langchain_core', 'langgraph', 'openai', 'markdown_it')
        self.seen = sorted(m for m in sys.modules if m.split('.')[0] in heavy or m == 'textual.widgets._markdown')
        self.exit(0)

async def main():
    settings = Settings(home=Path({str(tmp_path / "home")!r}), workspace=Path({str(tmp_path)!r}), model='openai:test-model', base_url='http://127.0.0.1:9/v1')
    app = Probe(settings, animate=False)
    async with app.run_test() as pilot:
        await pilot.pause()
    print(json.dumps(app.seen))

asyncio.run(main())
"""
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
