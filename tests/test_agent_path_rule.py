"""One path rule: the approval policy judges the path the backend then writes, symlinks and all."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from dcode.agent.approval import ApprovalPolicy
from dcode.agent.backends import LocalBackend
from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.settings.config import ApprovalMode
from tests.support.model_server import reply, tool_call


def build_hostile_workspace(workspace: Path) -> Path:
    """``deep -> a/b`` and ``up -> ../elsewhere/sub`` inside the workspace; returns the outside dir.

    ``deep/../../x`` is the workspace's ``x`` to the kernel (and ``../x`` read lexically);
    ``up/../y`` is outside to the kernel (and the workspace's ``y`` read lexically).
    """
    outer = workspace.parent
    (workspace / "a" / "b").mkdir(parents=True)
    (outer / "elsewhere" / "sub").mkdir(parents=True)
    (workspace / "deep").symlink_to("a/b")
    (workspace / "up").symlink_to("../elsewhere/sub")
    (workspace / "escape").symlink_to(outer / "elsewhere")
    (workspace / "dangling").symlink_to(outer / "elsewhere" / "later.txt")
    return outer


HOSTILE_PATHS = [
    "deep/../../x",
    "deep/../../deep/../../x2",
    "up/../y",
    "escape/z",
    "dangling",
    "a/../../w",
    "plain/new.txt",
]


@pytest.mark.parametrize("raw", HOSTILE_PATHS)
async def test_approved_in_edits_mode_exactly_when_the_write_lands_inside(
    workspace: Path, raw: str
) -> None:
    build_hostile_workspace(workspace)
    backend = LocalBackend(workspace)
    policy = ApprovalPolicy(ApprovalMode.EDITS, backend)
    approved = policy.check("write_file", {"file_path": raw, "content": "x"}) is None
    await backend.write_text(raw, "written\n")
    landed = backend.resolve(raw)
    assert landed.read_text() == "written\n"
    assert approved == landed.is_relative_to(workspace.resolve()), (
        f"{raw} approved={approved} landed at {landed}"
    )


def test_policy_answers_from_the_backend(workspace: Path) -> None:
    build_hostile_workspace(workspace)
    backend = LocalBackend(workspace)
    policy = ApprovalPolicy(ApprovalMode.EDITS, backend)
    for raw in HOSTILE_PATHS:
        verdict = policy.check(
            "edit_file", {"file_path": raw, "old_string": "a", "new_string": "b"}
        )
        assert (verdict is None) == backend.is_inside_workspace(raw)


async def headless(settings, prompt: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings, HeadlessRequest(prompt=prompt, output_format=OutputFormat.JSON), out=out, err=err
    )
    return code, out.getvalue(), err.getvalue()


async def test_dotdot_after_a_symlink_cannot_write_outside_in_edits_mode(
    server, make_settings, workspace: Path, api: str
) -> None:
    outer = build_hostile_workspace(workspace)
    server.script(
        reply(
            tool_calls=[
                tool_call("write_file", {"file_path": "deep/../../x", "content": "planted\n"})
            ]
        ),
        reply(
            tool_calls=[
                tool_call(
                    "edit_file",
                    {"file_path": "deep/../../x", "old_string": "planted", "new_string": "edited"},
                )
            ]
        ),
        reply(
            tool_calls=[tool_call("write_file", {"file_path": "up/../y", "content": "planted\n"})]
        ),
        reply("done"),
    )
    code, _, err = await headless(make_settings(api, approve=ApprovalMode.EDITS), "write it")
    assert code == 0, err
    assert not (outer / "x").exists(), "the write escaped the workspace"
    assert (workspace / "x").read_text() == "edited\n"
    assert not (outer / "elsewhere" / "y").exists() and not (workspace / "y").exists()
    results = [text for role, text in server.transcript(3) if role == "tool"]
    assert results[0] == "Created x (1 line)."
    assert results[1] == "Edited x: 1 replacement."
    assert results[2].startswith("denied: writing outside the workspace (up/../y) needs approval")
