"""Skills: SKILL.md directories found in their sources, indexed in the system prompt."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dcode.agent.middleware.skills import (
    MAX_DESCRIPTION,
    MAX_SKILL_BYTES,
    MAX_WARNINGS,
    find_skills,
    parse_skill,
    skill_sources,
    skills_prompt,
)
from dcode.headless import HeadlessRequest, OutputFormat, run_headless
from tests.support.model_server import ScriptedModelServer, reply


def write_skill(source: Path, directory: str, frontmatter: str, body: str = "Do the thing.\n") -> Path:
    path = source / directory / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}\n---\n{body}")
    return path


def test_a_skill_is_read_from_its_frontmatter(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "release-notes", "name: release-notes\ndescription: Write the release notes\n"
                       "compatibility: needs git\nallowed-tools: [read_file, execute]")
    skill, warnings = parse_skill(path, tmp_path)
    assert warnings == [] and skill is not None
    assert (skill.name, skill.description, skill.compatibility, skill.allowed_tools) == (
        "release-notes", "Write the release notes", "needs git", ("read_file", "execute"))
    other = write_skill(tmp_path, "lint", "name: lint\ndescription: Lint it\nallowed-tools: read_file grep")
    assert parse_skill(other, tmp_path)[0].allowed_tools == ("read_file", "grep")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("no frontmatter at all\n", "no frontmatter"),
        ("---\nname: [unclosed\n---\nbody\n", "not valid YAML"),
        ("---\n- a\n- list\n---\nbody\n", "not a mapping"),
        ("---\nname: x\n---\nbody\n", "missing description"),
        ("---\ndescription: only this\n---\nbody\n", "missing name"),
    ],
)
def test_a_broken_skill_is_skipped_with_the_reason(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "x" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(content)
    skill, warnings = parse_skill(path, tmp_path)
    assert skill is None and len(warnings) == 1 and reason in warnings[0] and str(path) in warnings[0]


def test_an_odd_name_only_warns_and_long_fields_are_cut(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "tidy", f"name: Tidy_Up\ndescription: {'word ' * 400}")
    skill, warnings = parse_skill(path, tmp_path)
    assert skill is not None and skill.name == "Tidy_Up" and len(skill.description) == MAX_DESCRIPTION
    assert len(warnings) == 1 and "'Tidy_Up'" in warnings[0] and "'tidy'" in warnings[0]


def test_a_huge_file_is_skipped(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "big", "name: big\ndescription: big", body="x" * (MAX_SKILL_BYTES + 1))
    assert parse_skill(path, tmp_path)[0] is None


def test_a_later_source_replaces_a_skill_in_its_place(tmp_path: Path) -> None:
    low, high = tmp_path / "low", tmp_path / "high"
    write_skill(low, "alpha", "name: alpha\ndescription: first alpha")
    write_skill(low, "beta", "name: beta\ndescription: beta")
    write_skill(high, "alpha", "name: alpha\ndescription: project alpha")
    (high / "notes").mkdir()  # a directory without SKILL.md is not a skill
    skills, warnings = find_skills([low, tmp_path / "absent", high])
    assert [(s.name, s.description) for s in skills] == [("alpha", "project alpha"), ("beta", "beta")] and warnings == []
    prompt = skills_prompt(skills, warnings, [low, tmp_path / "absent", high])
    assert f"- {low}\n- {high} (highest priority)" in prompt
    assert f"- **alpha**: project alpha\n  Read `{high / 'alpha' / 'SKILL.md'}` for full instructions." in prompt


def test_problems_are_listed_a_few_at_most(tmp_path: Path) -> None:
    for number in range(MAX_WARNINGS + 5):
        (tmp_path / f"s{number:02}").mkdir()
        (tmp_path / f"s{number:02}" / "SKILL.md").write_text("no frontmatter")
    skills, warnings = find_skills([tmp_path])
    prompt = skills_prompt(skills, warnings, [tmp_path])
    assert skills == [] and len(warnings) == MAX_WARNINGS + 5
    assert prompt.count("no frontmatter") == MAX_WARNINGS and "… and 5 more" in prompt
    assert skills_prompt([], [], [tmp_path]) == ""


def test_sources_run_from_the_user_to_the_project(tmp_path: Path) -> None:
    home, workspace, user = tmp_path / "dcode-home", tmp_path / "ws", tmp_path / "me"
    assert skill_sources(home, workspace, user) == [
        home / "skills", user / ".agents/skills", workspace / ".dcode/skills",
        workspace / ".agents/skills", user / ".claude/skills", workspace / ".claude/skills",
    ]


async def test_the_index_reaches_the_model_and_the_file_is_read_on_demand(
    server: ScriptedModelServer, make_settings, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    path = write_skill(workspace / ".agents" / "skills", "changelog", "name: changelog\ndescription: Keep CHANGELOG.md current",
                       body="Add one line per user-visible change.\n")
    server.script(reply("ok"))
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(make_settings(), HeadlessRequest(prompt="hi", output_format=OutputFormat.JSON), out=out, err=err)
    assert code == 0, err.getvalue()
    system = server.system_text(0)
    assert "- **changelog**: Keep CHANGELOG.md current" in system and str(path) in system
    assert "Add one line per user-visible change." not in system  # only the index, not the body
    assert json.loads(out.getvalue())["result"] == "ok"
