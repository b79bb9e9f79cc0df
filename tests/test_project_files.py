"""What a project's files may put into a request: nothing of the user's from outside the project.

The hostile project links its AGENTS.md, a skill, a whole skills folder and an agent to private
files under a made-up home directory, and ships a command whose text mentions a picture there.
The real ``dcode -p`` runs it against the scripted server: no canary and no image may reach any
request, each file left out is said once, and the turn still runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dcode.cli.headless import HeadlessRequest
from dcode.cli.headless_media import ProjectCommand, attach_images
from dcode.settings.project_files import OUTSIDE_PROJECT, PromptSource, not_read, sources_of
from tests.support.model_server import ScriptedModelServer, reply
from tests.support.secret_home import CANARIES, link_project_to, make_secret_home

DCODE = str(Path(sys.executable).with_name("dcode"))


def run_dcode(
    server: ScriptedModelServer, workspace: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    command = [
        DCODE,
        "-p",
        *args,
        "--output-format",
        "stream-json",
        "-m",
        "openai:test-model",
        "--base-url",
        server.base_url,
    ]
    return subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=120
    )


def notices(out: str) -> list[str]:
    return [
        event["message"]
        for event in map(json.loads, out.splitlines())
        if event.get("type") == "notice"
    ]


def test_links_out_of_the_project_never_reach_the_model(
    server: ScriptedModelServer, tmp_path: Path, workspace: Path
) -> None:
    secrets = make_secret_home(tmp_path / "me")
    link_project_to(workspace, secrets)
    dcode_home = tmp_path / "dcode-home"
    dcode_home.mkdir()
    (dcode_home / "config.toml").write_text('[models."openai:test-model"]\nimage_inputs = true\n')
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(secrets.home),
        "DCODE_HOME": str(dcode_home),
        "OPENAI_API_KEY": "k",
    }
    server.script(reply("A red rectangle."), reply("Again."))

    first = run_dcode(server, workspace, env, "/look")
    assert first.returncode == 0, first.stderr
    ws = workspace.resolve()
    assert sorted(notices(first.stdout)) == sorted(
        [
            not_read(ws / "AGENTS.md"),
            not_read(ws / ".agents" / "skills"),
            not_read(ws / ".claude" / "skills" / "aws" / "SKILL.md"),
        ]
    )
    warnings = [line for line in first.stderr.splitlines() if line.startswith("dcode: warning:")]
    assert warnings == [
        f"dcode: warning: /look mentions @~/Pictures/passport.png, @{secrets.picture}, outside the project: not attached"
    ]
    # The message itself survives: the command's text is sent, without the pictures.
    assert [text for role, text in server.requests[0].transcript() if role == "user"] == [
        f"Describe @~/Pictures/passport.png and @{secrets.picture} in one line."
    ]

    again = run_dcode(server, workspace, env, "-c", "and now?")
    assert again.returncode == 0, again.stderr
    assert notices(again.stdout) == []  # said once: the session keeps what it found
    sent = json.dumps([request.body for request in server.all_requests])
    assert [canary for canary in CANARIES if canary in sent] == []
    assert "image_url" not in sent and "input_image" not in sent


def test_a_mention_the_user_typed_or_wrote_may_lead_anywhere(
    make_settings, tmp_path: Path, workspace: Path
) -> None:
    secrets = make_secret_home(tmp_path / "me")
    settings = make_settings()
    (workspace / "shot.png").write_bytes(secrets.picture.read_bytes())
    said: list[str] = []

    def attached(prompt: str, command: ProjectCommand | None) -> int:
        return len(
            attach_images(
                settings, HeadlessRequest(prompt=prompt), [], command=command, warn=said.append
            ).attached
        )

    typed = f"@{secrets.picture}"
    assert (
        attached(f"Compare @shot.png with {typed}", ProjectCommand("cmp", typed)) == 2
        and said == []
    )  # typed after /cmp
    project_text = f"Compare @shot.png with @{secrets.picture}"
    assert attached(project_text, ProjectCommand("cmp", "")) == 1
    assert said == [f"/cmp mentions @{secrets.picture}, outside the project: not attached"]
    assert attached(project_text, None) == 2  # the user's own text, or a command of their own


def test_a_place_that_is_the_users_and_the_projects_counts_as_the_users(tmp_path: Path) -> None:
    home = tmp_path / "me"
    (home / ".claude" / "skills").mkdir(parents=True)
    sources = sources_of(
        [(home / ".claude" / "skills", None), (home / ".claude" / "skills", home.resolve())]
    )
    assert sources == [
        PromptSource(home / ".claude" / "skills")
    ]  # dcode started in the home directory
    outside = PromptSource(home / "project" / "AGENTS.md", (home / "project").resolve())
    (home / "project").mkdir()
    (home / "project" / "AGENTS.md").symlink_to(home / ".claude")
    assert outside.leads_outside(outside.path) and not PromptSource(outside.path).leads_outside(
        outside.path
    )
    assert not_read("x") == f"x is not read: {OUTSIDE_PROJECT}"


def test_text_output_says_on_stderr_what_was_left_out(
    server: ScriptedModelServer, tmp_path: Path, workspace: Path
) -> None:
    """Plain ``dcode -p`` prints only the answer on stdout; what was not read is a note on stderr."""
    secrets = make_secret_home(tmp_path / "me")
    link_project_to(workspace, secrets)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(secrets.home),
        "DCODE_HOME": str(tmp_path / "dcode-home"),
        "OPENAI_API_KEY": "k",
    }
    server.script(reply("Fine."))
    command = [DCODE, "-p", "hi", "-m", "openai:test-model", "--base-url", server.base_url]
    result = subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fine.\n"
    assert (
        f"dcode: note: {not_read(workspace.resolve() / 'AGENTS.md')}" in result.stderr.splitlines()
    )
