"""The TUI in a repository nobody has trusted: looking at it runs none of its programs."""

from __future__ import annotations

from pathlib import Path

from dcode.tui.app import AUTO
from tests.support.hostile_repo import BRANCH, DIRTY, make_hostile_repo
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tui_app_support import running_app


async def test_a_session_in_a_hostile_repository_runs_nothing(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    repo = make_hostile_repo(workspace, workspace.parent / "marks")
    async with running_app(server, workspace, dcode_home, reply("looked"), branch=AUTO) as h:
        await h.send("what is here?")
        await h.idle()
        await h.press("@")  # mention completion lists the workspace's files through git
        await h.until(lambda: h.app.prompt_input.files.ready, what="the file index")
        assert "filtered.txt" in h.app.prompt_input.files.paths
        assert BRANCH in h.text()  # the status bar's branch
    assert repo.fired() == []
    assert f"- Git: branch `{BRANCH}`, {DIRTY} uncommitted change(s)" in server.system_text(0)
