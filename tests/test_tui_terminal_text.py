"""The TUI draws what the model, a file or an MCP server wrote, but never lets it drive the
terminal: no escape sequence, C1 control or bidi override reaches a rendered line, and nothing
is read as Textual markup (real app and engine, scripted model server, real MCP server)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from dcode.settings.config import ApprovalMode, WireApi
from dcode.terminal_text import safe_text
from dcode.tui.app import DcodeApp
from dcode.tui.screens.mcp import McpScreen
from dcode.tui.screens.resume import ResumeScreen
from dcode.tui.transcript import AssistantEntry
from tests.support.hostile_text import HOSTILE, HOSTILE_FILE, TITLE_BEL, unsafe_in
from tests.support.mcp_fixtures import write_config
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import Harness, make_settings, running_app

HOSTILE_SERVER = Path(__file__).with_name("support") / "hostile_mcp_server.py"


def assert_drawn_safely(h: Harness, *, payloads: bool = False) -> str:
    """Every line on screen (toasts and dialogs included) is free of what a terminal obeys;
    the payloads of the sequences removed are gone too, unless shown spelled out as JSON
    (``payloads``: a tool's arguments)."""
    text = h.text()
    assert not unsafe_in(text), unsafe_in(text)
    if not payloads:
        assert "PWNED" not in text and "cm0gLXJmIH4=" not in text  # a title's and a clipboard's
    return text


async def test_a_hostile_answer_is_drawn_not_obeyed_live_and_resumed(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """Streamed three characters at a time, every sequence arrives split across deltas."""
    answer = f"Here you go: {HOSTILE}\n\n- item {TITLE_BEL}one\n\n| a | b |\n|---|---|\n| {TITLE_BEL}x | \u202ey |\n"
    step = reply(answer, reasoning=f"thinking {HOSTILE}", chunk_size=3)
    settings = make_settings(dcode_home, workspace, server, api=WireApi.RESPONSES)
    async with running_app(
        server, workspace, dcode_home, step, settings=settings, branch=f"main{TITLE_BEL}"
    ) as h:
        await h.send(f"hello {TITLE_BEL}there")
        await h.idle()
        [entry] = h.entries(AssistantEntry)
        assert entry.text == safe_text(answer) and entry.reasoning == safe_text(
            f"thinking {HOSTILE}"
        )
        assert h.app.transcript.last_answer() == safe_text(
            answer
        )  # what /copy puts on the clipboard
        text = assert_drawn_safely(h)
        assert "Here you go: before click here" in text  # a link's words stay; where it led goes
        assert "bell␇" in text and "⟨U+202E⟩evil⟨U+202C⟩" in text  # the rest is shown, not hidden
        assert "hello there" in text and "main" in text
        assert h.app.runner is not None
        session_id = h.app.runner.session_id
    async with running_app(server, workspace, dcode_home, session_id=session_id) as h:
        await h.until(lambda: h.answers(), what="the resumed transcript")
        assert h.answers() == [safe_text(answer)]
        assert "before click here" in assert_drawn_safely(h)
        await h.send("/resume")
        await h.until(lambda: isinstance(h.app.screen, ResumeScreen), what="the picker")
        await h.pilot.pause()
        assert "hello there" in assert_drawn_safely(h)  # the session's title is the prompt's


async def test_a_hostile_file_read_by_read_file_is_drawn_safely_when_expanded(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "notes.txt").write_text(HOSTILE_FILE)
    steps = (
        reply(tool_calls=[tool_call("read_file", {"file_path": "notes.txt"})]),
        reply("Read it."),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("read notes.txt")
        await h.idle()
        [call] = h.calls()
        assert "\x1b]0;PWNED" in call.output  # the entry keeps what the tool gave
        assert "\x1b]0;PWNED" in h.tool_results(-1)[0]  # and the model read the file as it is
        assert_drawn_safely(h)
        await h.pilot.press("ctrl+o")  # every tool output, whole
        await h.until(lambda: "last line" in h.text(), what="the expanded output")
        text = assert_drawn_safely(h)
        assert "first line" in text and "click here" in text and "⟨U+202E⟩evil" in text
        await h.send("!!cat notes.txt")  # the user's own shell shows the file too
        await h.until(
            lambda: "last line" in h.text().split("cat notes.txt", 1)[-1], what="the shell's output"
        )
        assert "rm -rf ~" in assert_drawn_safely(h).split("cat notes.txt", 1)[-1]


async def test_a_hostile_mcp_server_is_drawn_safely(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """Its result in the transcript, the model's arguments in the approval, and its tool's
    description and its resource's name and description in ``/mcp``."""
    write_config(
        dcode_home / "mcp.json",
        {"hostile": {"command": sys.executable, "args": [str(HOSTILE_SERVER)]}},
    )
    words = f"[@click=app.quit]quit[/] {TITLE_BEL}"
    steps = (
        reply("Ready."),
        reply(tool_calls=[tool_call("mcp__hostile__banner", {"words": words})]),
        reply("Done."),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("warm up")  # the first turn starts the servers
        await h.idle()
        await h.until(lambda: "MCP server hostile connected" in h.text(), 30, "the server")
        await h.send("show the banner")
        await h.approval()
        text = assert_drawn_safely(h, payloads=True)
        assert '"[@click=app.quit]quit[/] \\u001b]2;PWNED\\u0007"' in text  # as written: not markup
        await h.press("y")
        await h.idle()
        [call] = h.calls()
        assert "\x1b]0;PWNED" in call.output
        await h.pilot.press("ctrl+o")
        await h.until(lambda: "lone␛" in h.text(), what="the expanded result")
        assert "banner for [@click=app.quit]quit[/]" in assert_drawn_safely(h)
        await h.send("/mcp")
        await h.until(lambda: isinstance(h.app.screen, McpScreen), what="/mcp")
        await h.until(lambda: "Prints a banner." in h.text(), what="the tool's description")
        text = assert_drawn_safely(h)
        assert "⟨U+202E⟩Nothing to see⟨U+202C⟩" in text
        assert "note://banner  banner The banner's text. before" in text  # its resource, too


async def test_a_subagents_hostile_job_and_answer_are_drawn_safely(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    """The task's head (its job, then its result), the subagent's streamed answer in the nested
    view, and the whole of it once opened (Markdown drawn by Rich, links spelled out)."""
    job = f"Say it {TITLE_BEL}loud"
    answer = f"Sub says {HOSTILE} and [a link](https://example.com/x)"
    steps = (
        reply(
            tool_calls=[tool_call("task", {"description": job, "subagent_type": "general-purpose"})]
        ).answering("delegate"),
        reply(answer, chunk_size=3, chunk_delay=0.01).answering(job),
        reply("All done.").answering("delegate"),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("delegate")
        await h.until(lambda: "Sub says" in h.text(), what="the subagent's answer")
        assert_drawn_safely(h)
        await h.idle()
        text = assert_drawn_safely(h)
        assert "Say it loud" in text and "→ Sub says before click here" in text  # the folded head
        await h.pilot.press("ctrl+o")
        await h.until(lambda: "https://example.com/x" in h.text(), what="the opened task")
        assert "⟨U+202E⟩evil" in assert_drawn_safely(h)


class LinkRecorder(DcodeApp):
    """Records the addresses a click would open in the browser, and opens none."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opened: list[str] = []

    def open_url(self, url: str, *, new_tab: bool = True) -> None:
        self.opened.append(url)


def _offset_of(h: Harness, words: str) -> tuple[int, int]:
    for y, line in enumerate(h.text().splitlines()):
        if (x := line.find(words)) >= 0:
            return x + 1, y
    raise AssertionError(f"{words!r} is not on screen")


async def test_a_link_opens_only_a_web_address_and_says_which(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    # (Markdown itself leaves javascript: and file: links as text; another scheme starts an app.)
    answer = "See [the web page](https://example.com/docs) or [the same page](vscode://evil.example/run)."
    settings = make_settings(dcode_home, workspace, server, approve=ApprovalMode.MANUAL)
    async with running_app(
        server, workspace, dcode_home, reply(answer), settings=settings, app_class=LinkRecorder
    ) as h:
        app = h.app
        assert isinstance(app, LinkRecorder)
        await h.send("links please")
        await h.idle()
        await h.pilot.click(offset=_offset_of(h, "the same page"))
        await h.until(
            lambda: "not opened: vscode://evil.example/run" in _toasts(app), what="the refusal"
        )
        assert app.opened == []
        await h.pilot.click(offset=_offset_of(h, "the web page"))
        await h.until(
            lambda: "opening https://example.com/docs" in _toasts(app), what="the address"
        )
        assert app.opened == ["https://example.com/docs"]


def _toasts(app: DcodeApp) -> str:
    return "\n".join(str(note.message) for note in app._notifications)


async def test_a_toast_quoting_an_error_is_plain_words(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    app = DcodeApp(make_settings(dcode_home, workspace, server), animate=False)
    async with app.run_test(
        size=(100, 34), notifications=True
    ) as pilot:  # toasts drawn, as for real
        h = Harness(app, pilot, server, workspace, app.settings)  # type: ignore[arg-type]
        await h.ready()
        app.notify(
            f"could not do it: [bold]server said[/bold] {TITLE_BEL}[link=http://evil.example/]x[/link]"
        )
        await h.until(lambda: "could not do it" in h.text(), what="the toast")
        text = assert_drawn_safely(h)
        assert "[bold]server said[/bold]" in text and "[link=http://evil.example/]x[/link]" in text
