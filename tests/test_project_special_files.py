"""A hostile repository whose own files are named pipes with no writer: dcode starts anyway.

Every file a project hands dcode before the first request (its AGENTS.md, MCP configs, Claude
Code settings, config, skills, agents and commands) is made a FIFO in turn. Opening one for
reading waits for a writer that never comes, and a thread stuck there cannot be cancelled; so
the real ``dcode -p`` must end within its deadline, saying what it could not read where that is
the user's business. The TUI's branch reader is the same case on the UI thread.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dcode.agent.frontmatter import FrontmatterError, read_document
from dcode.agent.middleware.memory import read_head
from dcode.regular_files import NotRegularFile
from dcode.tui.status import read_git_branch
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_cli_headless import model_args, run

PIPE = "is a named pipe (FIFO), not a regular file"


def pipe_at(workspace: Path, relative: str) -> Path:
    path = workspace / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("relative", "said"),
    [
        (".mcp.json", "cannot read it: " + PIPE),
        (".vscode/mcp.json", None),
        ("AGENTS.md", None),
        (".dcode/config.toml", None),
        (".claude/skills/s/SKILL.md", None),
        (".claude/agents/a.md", None),
        (".claude/commands/c.md", None),
    ],
)
def test_a_project_file_that_is_a_named_pipe_never_blocks_the_start(
    relative: str, said: str | None, server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    path = pipe_at(workspace, relative)
    server.script(reply("started"))
    result = run(["-p", "hi", *model_args(server)], workspace, home, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "started\n"
    if said is not None:
        assert f"dcode: warning: {path}: {said}" in result.stderr.splitlines()


@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
def test_claude_settings_that_are_a_named_pipe_are_one_line(
    name: str, server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    """Unreadable permissions are refused as a malformed file is: one line, exit 2."""
    path = pipe_at(workspace, f".claude/{name}")
    result = run(["-p", "hi", *model_args(server)], workspace, home, timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"dcode: error: {path}: cannot read its permissions: {PIPE}"
    ]
    assert server.requests == []


def test_the_branch_reader_skips_a_head_that_is_a_named_pipe(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    pipe_at(repo, ".git/HEAD")
    assert read_git_branch(repo) is None
    linked = tmp_path / "worktree"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    assert read_git_branch(linked) is None
    os.mkfifo(tmp_path / "pipe-as-git")
    (tmp_path / "w2").mkdir()
    (tmp_path / "w2" / ".git").symlink_to(tmp_path / "pipe-as-git")
    assert read_git_branch(tmp_path / "w2") is None


def test_the_prompt_file_readers_refuse_a_pipe_they_are_handed(tmp_path: Path) -> None:
    """Their callers list regular files only; a file swapped for a pipe after that is refused
    by the reader itself, not waited on."""
    pipe = pipe_at(tmp_path, "AGENTS.md")
    with pytest.raises(NotRegularFile):
        read_head(pipe)
    with pytest.raises(FrontmatterError, match="named pipe"):
        read_document(pipe, 4096, required=())
