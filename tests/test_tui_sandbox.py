"""``/sandbox`` in the TUI: the status bar says it, the model's commands and the user's ``!cmd``
run in it (real bubblewrap), and ``edits`` stops asking about sandboxed commands."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcode.agent.approval import UNCONFINED
from dcode.agent.tools.args import OUTSIDE_SANDBOX
from dcode.agent.tools.spec import EXECUTE
from dcode.sandbox.probe import availability
from dcode.tui.transcript import ShellEntry
from tests.support.model_server import ScriptedModelServer, reply, tool_call
from tests.test_tui_app_support import running_app

pytestmark = pytest.mark.skipif(
    not availability().works, reason=f"no working sandbox here: {availability().problem}"
)


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dcode-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def mode_line(h) -> str:
    return h.app.status.render().plain.splitlines()[1]


async def test_a_user_command_runs_in_the_sandbox_once_it_is_on(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, outside: Path
) -> None:
    target = outside / "escaped"
    async with running_app(server, workspace, dcode_home) as h:
        assert "sandbox" not in mode_line(h)
        await h.send("/sandbox workspace-write")
        await h.until(
            lambda: "sandbox set to workspace-write (bubblewrap)" in h.text(), what="the notice"
        )
        assert "sandbox: workspace-write" in mode_line(h)
        await h.send(f"!!echo in > made; echo out > {target}")
        await h.until(
            lambda: h.entries(ShellEntry) and not h.entries(ShellEntry)[-1].running,
            what="the command to end",
        )
        [entry] = h.entries(ShellEntry)
        assert "Read-only file system" in entry.output and entry.exit_code != 0
        assert (workspace / "made").exists() and not target.exists()
        await h.send("/sandbox off")
        await h.until(lambda: "sandbox set to off" in h.text(), what="the notice")
        assert "sandbox" not in mode_line(h)
        await h.send(f"!!echo out > {target}")
        await h.until(
            lambda: len(h.entries(ShellEntry)) == 2 and not h.entries(ShellEntry)[-1].running,
            what="the second command",
        )
        assert target.exists()


async def test_edits_runs_sandboxed_commands_unasked_and_asks_once_to_go_outside(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, outside: Path
) -> None:
    target = outside / "unconfined"
    steps = (
        reply(tool_calls=[tool_call(EXECUTE.name, {"command": "echo built > out.txt"})]),
        reply(
            tool_calls=[
                tool_call(EXECUTE.name, {"command": f"echo x > {target}", OUTSIDE_SANDBOX: True})
            ]
        ),
        reply("Done."),
    )
    async with running_app(server, workspace, dcode_home, *steps) as h:
        await h.send("/approve edits")
        await h.send("/sandbox workspace-write")
        assert "ask before edits outside the workspace, web fetches and other tools" in mode_line(h)
        await h.send("build it")
        await h.approval()
        assert (workspace / "out.txt").read_text() == "built\n"  # the first ran without a question
        widget = h._approval_widget()
        assert widget.request.reason == UNCONFINED and widget.request.every_time
        assert "yes, this once" in h.text() and "for this session" not in h.text()
        await h.press("a")  # not offered: nothing happens
        await h.pilot.pause(0.1)
        assert not widget.decided and not target.exists()
        await h.press("y")
        await h.idle()
        assert target.exists() and h.answers()[-1] == "Done."


async def test_a_bad_word_is_one_line(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(server, workspace, dcode_home) as h:
        await h.send("/sandbox strict")
        await h.until(
            lambda: (
                "/sandbox takes workspace-write, read-only, off, or network on|off (now: off)"
                in h.text()
            ),
            what="the warning",
        )
        await h.send("/sandbox network on")
        await h.until(lambda: "sandbox set to off (available here)" in h.text(), what="the notice")
        assert h.app.sandbox.settings.network is True
