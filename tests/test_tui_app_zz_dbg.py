import sys
sys.path.insert(0, "/tmp/dbg")
from render import render
from pathlib import Path
from tests.support.model_server import reply, tool_call
from tests.test_tui_app_support import running_app
from tests.test_tui_snapshots import ANSWER
import pytest
@pytest.mark.parametrize("theme", ["textual-dark", "textual-light", "gruvbox", "nord", "solarized-light", "tokyo-night"])
async def test_render(server, workspace, dcode_home, theme):
    (workspace / "greet.py").write_text("def greet():\n    return 'Hello'\n")
    edit = tool_call("edit_file", {"file_path": "greet.py", "old_string": "def greet():\n    return 'Hello'", "new_string": "def greet(name):\n    return f'Hello, {name}!'"})
    calls = [tool_call("read_file", {"file_path": "greet.py"}), tool_call("ls", {"path": "."}), tool_call("read_file", {"file_path": "nope.py"})]
    async with running_app(server, workspace, dcode_home, reply(tool_calls=calls), reply(ANSWER, usage=(2400, 80)), reply("Editing.", tool_calls=[edit]), reply("ok"), size=(100, 45)) as h:
        h.app.theme = theme
        await h.send("fix greet")
        await h.idle()
        await h.send("edit it")
        await h.approval()
        await h.pilot.pause(0.3)
        render(h.app, f"/tmp/dbg/theme-{theme}.png")
