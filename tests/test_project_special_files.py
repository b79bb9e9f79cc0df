"""A hostile repository whose own files are named pipes with no writer, or gigabytes.

Every file a project hands dcode before the first request (its AGENTS.md, MCP configs, Claude
Code settings, config, skills, agents and commands) is made a FIFO in turn. Opening one for
reading waits for a writer that never comes, and a thread stuck there cannot be cancelled; so
the real ``dcode -p`` must end within its deadline, saying what it could not read where that is
the user's business. The TUI's branch reader is the same case on the UI thread.

The config files are then made 2 GiB (sparse: no disk used): each is refused at its 1 MiB limit
in one line, and the process that refuses it stays small (a 0.5 GB ``.mcp.json`` took 1.1 GB).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dcode.agent.frontmatter import FrontmatterError, read_document
from dcode.agent.middleware.memory import read_head
from dcode.regular_files import CONFIG_BYTES, NotRegularFile, TooLarge, read_config
from dcode.settings.trust import ProjectFiles
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


def huge_at(workspace: Path, relative: str, size: int = 2 * 1024**3) -> Path:
    path = workspace / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{}\n" if relative.endswith(".json") else b"# x\n")
    os.truncate(path, size)  # sparse
    return path


# Run in a child of its own, so that its peak memory is its own and not this test process's.
_PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
sys.stdout.write(f"{done.returncode}\\n{peak}\\n{done.stdout}\\0{done.stderr}")
"""


@pytest.mark.parametrize(
    ("relative", "code", "said"),
    [
        (".mcp.json", 0, "dcode: warning: {path}: cannot read it: larger than 1 MiB"),
        (".vscode/mcp.json", 0, None),
        (
            ".claude/settings.json",
            2,
            "dcode: error: {path}: cannot read its permissions: larger than 1 MiB",
        ),
        (".dcode/config.toml", 2, "dcode: error: {path}: cannot read it: larger than 1 MiB"),
        (".claude/agents/big.md", 0, None),
    ],
)
def test_a_project_config_of_gigabytes_is_refused_at_its_limit(
    relative: str,
    code: int,
    said: str | None,
    server: ScriptedModelServer,
    workspace: Path,
    home: Path,
) -> None:
    path = huge_at(workspace, relative)
    server.script(reply("started"))
    dcode = str(Path(sys.executable).with_name("dcode"))
    env = {"PATH": os.environ["PATH"], "HOME": str(home.parent), "DCODE_HOME": str(home)}
    env["OPENAI_API_KEY"] = "test-key"
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, dcode, "-p", "hi", *model_args(server)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    returncode, peak, rest = done.stdout.split("\n", 2)
    stdout, stderr = rest.split("\0")
    assert int(returncode) == code, stderr
    assert int(peak) < 400, f"{peak} MB for a 2 GiB {relative}"
    if code == 0:
        assert stdout == "started\n"
    if said is not None:
        assert said.format(path=path) in stderr.splitlines()


def test_the_trust_digest_holds_a_files_head_only(tmp_path: Path) -> None:
    small = tmp_path / "small"
    (small / ".claude" / "agents").mkdir(parents=True)
    (small / ".claude" / "agents" / "a.md").write_bytes(b"x" * 100)
    big = tmp_path / "big"
    huge_at(big, ".claude/agents/a.md", 64 * 1024**2)
    digest = ProjectFiles.read(small).digest  # a file within the limit: its whole bytes, as before
    assert ProjectFiles.read(small).contents == {".claude/agents/a.md": b"x" * 100}
    files = ProjectFiles.read(big)
    assert len(files.contents[".claude/agents/a.md"]) == CONFIG_BYTES + 1
    assert files.digest != digest
    with pytest.raises(TooLarge, match="larger than 1 MiB"):
        read_config(big / ".claude" / "agents" / "a.md")


def test_the_mcp_commands_in_a_repository_whose_mcp_json_is_a_named_pipe(tmp_path: Path) -> None:
    from tests.test_mcp_cli import dcode

    path = pipe_at(tmp_path / "ws", ".mcp.json")
    added = dcode(tmp_path, "add", "-s", "project", "proj", "node", "server.js")
    assert added.returncode == 2
    assert added.stderr.splitlines() == [f"dcode: error: {path}: cannot edit it: {PIPE}"]
    listed = dcode(tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    assert f"{path}: cannot read it: {PIPE}" in listed.stdout + listed.stderr
