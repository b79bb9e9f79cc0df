"""Memory: AGENTS.md from the user's home and the project, in the system prompt, once per thread."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dcode.agent.middleware.memory import MAX_FILE_CHARS, memory_prompt, memory_sources, read_memory
from dcode.agent.prompt import SYSTEM_PROMPT
from dcode.headless import HeadlessRequest, OutputFormat, run_headless
from tests.support.model_server import reply


async def run(settings, prompt: str, **kw) -> dict:  # noqa: ANN001 - the make_settings fixture's
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(settings, HeadlessRequest(prompt=prompt, output_format=OutputFormat.JSON, **kw), out=out, err=err)
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


# -- sources and reading ------------------------------------------------------------------


def test_sources_run_from_the_home_to_the_repository_root_down_to_the_workspace(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    workspace = repo / "services" / "api"
    workspace.mkdir(parents=True)
    home = tmp_path / "home"
    assert memory_sources(home, workspace) == [
        home / "AGENTS.md", repo / "AGENTS.md", repo / "services" / "AGENTS.md", workspace / "AGENTS.md",
    ]


def test_outside_a_repository_only_the_workspace_counts(tmp_path: Path) -> None:
    workspace = tmp_path / "loose"
    workspace.mkdir()
    assert memory_sources(tmp_path / "home", workspace) == [tmp_path / "home" / "AGENTS.md", workspace / "AGENTS.md"]


def test_comments_are_stripped_and_empty_files_add_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Use uv.<!-- private\nnote -->\n\nRun `make test`.\n")
    (tmp_path / "b.md").write_text("<!-- only a comment -->\n")
    (tmp_path / "dir.md").mkdir()
    memory, problems = read_memory([tmp_path / "a.md", tmp_path / "b.md", tmp_path / "missing.md", tmp_path / "dir.md"])
    assert memory == {str(tmp_path / "a.md"): "Use uv.\n\nRun `make test`."} and problems == []
    assert memory_prompt({}) == ""


def test_a_long_file_is_cut_and_says_where_the_rest_is(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text("x" * (MAX_FILE_CHARS + 500))
    [text] = read_memory([path])[0].values()
    assert text.startswith("x" * MAX_FILE_CHARS) and f"500 more characters: read {path}" in text


def test_an_unreadable_file_is_skipped_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text("kept")
    bad.write_text("never read")
    real = Path.read_text

    def read_text(self: Path, *args, **kwargs) -> str:  # noqa: ANN002, ANN003
        if self.name == "bad.md":  # as a file without read permission would (root reads anything)
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    memory, problems = read_memory([bad, good])
    assert list(memory.values()) == ["kept"] and problems == [f"could not read {bad}: Permission denied"]


# -- in the agent -------------------------------------------------------------------------


async def test_memory_follows_the_static_prompt_in_order(server, make_settings, workspace: Path, dcode_home: Path, api: str) -> None:
    dcode_home.mkdir(parents=True, exist_ok=True)
    (dcode_home / "AGENTS.md").write_text("I prefer short answers.\n")
    (workspace / "AGENTS.md").write_text("<!-- maintainers only -->\nTests: `pytest -q`.\n")
    server.script(reply("ok"))
    await run(make_settings(api), "hello")
    system = server.system_text(0)
    assert system.startswith(SYSTEM_PROMPT.strip()[:60])
    memory = system[system.index("<agent_memory>"):]
    assert memory.index("I prefer short answers.") < memory.index("Tests: `pytest -q`.")
    assert "maintainers only" not in system and "<memory_guidelines>" in memory
    assert f"{workspace.resolve() / 'AGENTS.md'}\n\nTests: `pytest -q`." in memory


async def test_no_memory_no_section(server, make_settings) -> None:
    server.script(reply("ok"))
    await run(make_settings(), "hello")
    assert "<agent_memory>" not in server.system_text(0)


async def test_a_session_keeps_the_memory_it_started_with(server, make_settings, workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Version one.\n")
    server.script(reply("first"), reply("second"), reply("third"))
    settings = make_settings()
    first = await run(settings, "one")
    (workspace / "AGENTS.md").write_text("Version two.\n")
    await run(settings, "two", resume_id=first["session_id"])
    assert "Version one." in server.system_text(1) and "Version two." not in server.system_text(1)
    await run(settings, "three")  # a new session reads the files again
    assert "Version two." in server.system_text(2)


async def test_an_unreadable_agents_md_is_one_notice_and_the_turn_goes_on(
    server, make_settings, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "AGENTS.md").write_text("unreadable")
    real = Path.read_text

    def read_text(self: Path, *args, **kwargs) -> str:  # noqa: ANN002, ANN003
        if self.name == "AGENTS.md":
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    server.script(reply("answered anyway"))
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(make_settings(), HeadlessRequest(prompt="hi", output_format=OutputFormat.STREAM_JSON), out=out, err=err)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0 and events[-1]["result"] == "answered anyway"
    notices = [event["message"] for event in events if event.get("type") == "notice"]
    assert notices == [f"could not read {workspace.resolve() / 'AGENTS.md'}: Permission denied"]
