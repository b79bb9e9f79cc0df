"""``dcode agents list``: every agent's facts, then what was ignored or left out, and why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dcode.cli.app import sub
from tests.support.agent_files import agent_file
from tests.test_cli_light import HEAVY, PROBE


def invoke(
    home: Path, user: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> str:
    """``dcode agents list`` run in ``workspace``, with ``user`` as the home directory."""
    monkeypatch.chdir(workspace)
    env = {
        "DCODE_HOME": str(home),
        "HOME": str(user),
        "DCODE_MODEL": "openai:gpt-5.1",
        "DCODE_BASE_URL": None,
    }
    result = CliRunner().invoke(sub, ["agents", "list", *args], env=env, prog_name="dcode")
    assert result.exit_code == 0, result.output
    return result.output


def test_agents_list_prints_each_agent_and_the_problems(
    home: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user"
    mine = agent_file(
        user / ".claude" / "agents",
        "rev.md",
        "name: reviewer\ndescription: Reviews diffs.\ntools: Read, Grep\nmodel: corp:big\napprove: manual",
    )
    theirs = agent_file(
        workspace / ".claude" / "agents",
        "x.md",
        "name: explorer\ndescription: Explores.\nmodel: attacker:x",
    )
    broken = agent_file(workspace / ".claude" / "agents", "broken.md", "name: broken")
    out = invoke(home, user, workspace, monkeypatch)
    assert out.startswith("general-purpose\n  A general agent for self-contained, multi-step jobs")
    assert (
        "reviewer\n  Reviews diffs.\n"
        f"  source:  {mine}\n"
        "  tools:   read_file, grep\n"
        "  model:   corp:big\n"
        "  approve: manual, or the parent's mode if stricter\n"
    ) in out
    assert (
        f"explorer\n  Explores.\n  source:  {theirs}\n  tools:   all of the parent's\n  model:   the parent's\n  approve: the parent's mode\n"
        in out
    )
    ignored, left_out = out.split("Ignored in the agents above:\n")[1].split("Not loaded:\n")
    assert (
        f"  {theirs}: model 'attacker:x' ignored: 'attacker' is not a provider you have set up"
        in ignored
    )
    assert left_out.strip() == f"{broken}: missing description"


def test_agents_list_as_json(
    home: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user"
    agent_file(
        home / "agents",
        "w.md",
        "name: writer\ndescription: Writes.\ntools: [write_file]\napprove: edits",
    )
    data = json.loads(invoke(home, user, workspace, monkeypatch, "--json"))
    assert [agent["name"] for agent in data["agents"]] == ["general-purpose", "writer"]
    writer = data["agents"][1]
    assert (writer["tools"], writer["approve"], writer["model"], writer["source"]) == (
        ["write_file"],
        "edits",
        None,
        str(home / "agents"),
    )
    assert data["problems"] == []


def test_agents_list_skips_the_heavy_imports(tmp_path: Path) -> None:
    code = PROBE.format(argv=["agents", "list"], heavy=HEAVY)
    env = {"DCODE_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "general-purpose" in result.stdout
    assert result.stdout.strip().endswith("HEAVY:"), result.stdout
