"""Snapshots of the layouts that matter: the main screen, an approval, the resume and model pickers.

Everything that varies is pinned: terminal size, clock and spinner (``animate=False``), cwd and
git branch (injected), token figures (scripted usage; the encoding the streamed tokens are
counted with is loaded before the app starts), session rows (fixed ids, paths, times).
Update with ``pytest tests/test_tui_snapshots.py --snapshot-update`` after checking the SVGs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.screen import Screen

from dcode.agent.store.sqlite import SqliteStore
from dcode.context.tokens.encodings import encoding
from dcode.tui.app import DcodeApp
from dcode.tui.screens.model import ModelScreen
from dcode.tui.screens.resume import ResumeScreen
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import Harness, make_settings

SIZE = (100, 30)
ANSWER = """I looked at the project. Here is the fix:

```python
def greet(name: str) -> str:
    return f"Hello, {name}!"
```

- `greet` now takes a **name**
- the tests pass
"""


def build_app(server: ScriptedModelServer, workspace: Path, home: Path) -> DcodeApp:
    encoding()  # as it is in a worker soon after the engine opens: the count is the encoding's
    return DcodeApp(
        make_settings(home, workspace, server),
        animate=False,
        clock=lambda: 1000.0,
        cwd_label="~/projects/demo",
        branch="main",
    )


def harness(app: DcodeApp, pilot: Pilot, server: ScriptedModelServer, workspace: Path) -> Harness:
    # A blinking cursor would make the picture depend on when it is taken.
    app.prompt_input.area.cursor_blink = False
    return Harness(app, pilot, server, workspace, app.settings)


def opening(
    app: DcodeApp,
    server: ScriptedModelServer,
    workspace: Path,
    command: str,
    screen: type[Screen[Any]],
) -> Callable[[Pilot], Awaitable[None]]:
    """The steps before a picker's snapshot: ``command`` sent once the app is ready, and ``screen`` up."""

    async def run_before(pilot: Pilot) -> None:
        h = harness(app, pilot, server, workspace)
        await h.ready()
        await h.send(command)
        await h.until(lambda: isinstance(app.screen, screen), what="the picker")
        await pilot.pause(0.2)

    return run_before


def test_main_screen(
    snap_compare, server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "greet.py").write_text("def greet():\n    return 'Hello'\n")
    server.script(
        reply(tool_calls=[tool_call("read_file", {"file_path": "greet.py"})], usage=(1_500, 20)),
        reply(ANSWER, usage=(2_400, 80)),
    )
    app = build_app(server, workspace, dcode_home)

    async def run_before(pilot: Pilot) -> None:
        h = harness(app, pilot, server, workspace)
        await h.ready()
        await h.send("fix greet so it takes a name")
        await h.idle()
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval(
    snap_compare, server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    (workspace / "greet.py").write_text("def greet():\n    return 'Hello'\n")
    edit = tool_call(
        "edit_file",
        {
            "file_path": "greet.py",
            "old_string": "def greet():\n    return 'Hello'",
            "new_string": "def greet(name):\n    return f'Hello, {name}!'",
        },
    )
    server.script(
        reply("I will edit greet.py.", tool_calls=[edit], usage=(1_800, 40)), reply("done")
    )
    app = build_app(server, workspace, dcode_home)

    async def run_before(pilot: Pilot) -> None:
        h = harness(app, pilot, server, workspace)
        await h.ready()
        await h.send("make greet take a name")
        await h.approval()
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_resume_picker(
    snap_compare, server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    store = SqliteStore(dcode_home / "sessions.db", dcode_home)
    rows = [
        ("a1b2c3d4e5f6", "/work/projects/demo", "Fix the flaky login test"),
        ("0f9e8d7c6b5a", "/work/projects/api", "Add pagination to /users"),
        ("112233445566", "/work/projects/demo", "Explain the build pipeline"),
    ]
    for session_id, cwd, title in rows:
        store.create(session_id, Path(cwd), "openai:gpt-5.1")
        store.record_turn(
            session_id,
            prompt=title,
            model="openai:gpt-5.1",
            message_count=4,
            input_tokens=100,
            output_tokens=10,
            context_tokens=110,
        )
    app = build_app(server, workspace, dcode_home)
    assert snap_compare(
        app, terminal_size=SIZE, run_before=opening(app, server, workspace, "/resume", ResumeScreen)
    )


def test_model_picker(
    snap_compare, server: ScriptedModelServer, workspace: Path, dcode_home: Path, monkeypatch
) -> None:
    for name in ("DEEPSEEK_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_API_KEY", "DCODE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    store = SqliteStore(dcode_home / "sessions.db", dcode_home)
    store.create("a1b2c3d4e5f6", workspace, "deepseek:deepseek-chat")
    store.create("0f9e8d7c6b5a", workspace, "openai:gpt-5.1")
    app = build_app(server, workspace, dcode_home)
    assert snap_compare(
        app, terminal_size=SIZE, run_before=opening(app, server, workspace, "/model", ModelScreen)
    )
