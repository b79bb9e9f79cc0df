"""The real ``dcode`` binary with ``--sandbox``: the model's commands run confined and unasked in
``edits``, and a request to run one outside the sandbox is denied when nobody can approve it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcode.agent.tools.args import OUTSIDE_SANDBOX
from dcode.agent.tools.spec import EXECUTE
from dcode.sandbox.probe import availability
from tests.support.model_server import reply, tool_call
from tests.test_cli_headless import model_args, run

pytestmark = pytest.mark.skipif(
    not availability().works, reason=f"no working sandbox here: {availability().problem}"
)


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dcode-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def tool_results(server, turn: int) -> list[str]:
    return [text for role, text in server.transcript(turn) if role == "tool"]


def test_sandboxed_commands_run_unasked_and_stay_inside(server, workspace, home, outside) -> None:
    target = outside / "escaped"
    server.script(
        reply(
            tool_calls=[
                tool_call(EXECUTE.name, {"command": f"echo built > out.txt; echo x > {target}"})
            ]
        ),
        reply(
            tool_calls=[
                tool_call(EXECUTE.name, {"command": f"echo x > {target}", OUTSIDE_SANDBOX: True})
            ]
        ),
        reply("finished"),
    )
    result = run(
        ["-p", "build", *model_args(server), "--sandbox", "workspace-write"], workspace, home
    )
    assert result.returncode == 0, result.stderr
    assert (workspace / "out.txt").read_text() == "built\n" and not target.exists()
    [confined] = tool_results(server, 1)
    assert "Read-only file system" in confined and f"{OUTSIDE_SANDBOX}=true" in confined
    denied = tool_results(server, 2)[-1]
    assert "OUTSIDE the sandbox" in denied and "--sandbox off" in denied
    assert not target.exists()


def test_without_the_flag_nothing_changes(server, workspace, home, outside) -> None:
    target = outside / "written"
    server.script(
        reply(tool_calls=[tool_call(EXECUTE.name, {"command": f"echo x > {target}"})]),
        reply("asked"),
    )
    result = run(["-p", "write", *model_args(server), "--approve", "all"], workspace, home)
    assert result.returncode == 0, result.stderr
    assert target.exists()
