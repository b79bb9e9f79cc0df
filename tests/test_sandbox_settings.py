"""The sandbox's settings, the refusal when it cannot start, and the profiles it is spelled in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.tools import ToolException

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.environment import ShellEnvironment
from dcode.agent.tools.args import ExecuteArgs
from dcode.agent.tools.execute import execute
from dcode.sandbox.confine import Sandbox, SandboxUnavailable
from dcode.sandbox.layout import Layout
from dcode.sandbox.modes import SandboxMode, SandboxSettings
from dcode.sandbox.probe import availability
from dcode.sandbox.seatbelt import profile
from dcode.settings.config import ConfigError, load_settings
from dcode.settings.trust import ProjectFiles, TrustStore


def settings_for(
    tmp_path: Path,
    user: str = "",
    project: str | None = None,
    cli: dict[str, str] | None = None,
    trusted: bool = False,
):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    (home / "config.toml").write_text(user)
    if project is not None:
        (workspace / ".dcode").mkdir(exist_ok=True)
        (workspace / ".dcode" / "config.toml").write_text(project)
        if trusted:
            TrustStore(home).trust(workspace, ProjectFiles.read(workspace).digest)
    return load_settings(workspace=workspace, cli=cli, env={"DCODE_HOME": str(home)})


def test_off_by_default_and_set_by_config_then_flag(tmp_path: Path) -> None:
    assert settings_for(tmp_path).sandbox == SandboxSettings(SandboxMode.OFF, network=False)
    mine = settings_for(tmp_path, '[sandbox]\nmode = "workspace-write"\nnetwork = true\n')
    assert mine.sandbox == SandboxSettings(SandboxMode.WORKSPACE_WRITE, network=True)
    flagged = settings_for(
        tmp_path, '[sandbox]\nmode = "workspace-write"\n', cli={"sandbox": "read-only"}
    )
    assert flagged.sandbox.mode is SandboxMode.READ_ONLY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[sandbox]\nmode = "strict"\n',
            r"line 2: sandbox mode 'strict' is not valid; expected one of 'off', 'workspace-write', 'read-only'",
        ),
        ('[sandbox]\nnetwork = "yes"\n', r"line 2: \[sandbox\] network must be true or false"),
        ("[sandbox]\nhosts = []\n", r"unknown \[sandbox\] setting 'hosts'"),
    ],
)
def test_bad_values_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_for(tmp_path, text)


def test_an_untrusted_project_may_confine_more_never_less(tmp_path: Path) -> None:
    tighter = settings_for(
        tmp_path,
        '[sandbox]\nmode = "workspace-write"\nnetwork = true\n',
        '[sandbox]\nmode = "read-only"\nnetwork = false\n',
    )
    assert (
        tighter.sandbox == SandboxSettings(SandboxMode.READ_ONLY, network=False)
        and tighter.ignored == ()
    )
    looser = settings_for(
        tmp_path, '[sandbox]\nmode = "read-only"\n', '[sandbox]\nmode = "off"\nnetwork = true\n'
    )
    assert looser.sandbox == SandboxSettings(SandboxMode.READ_ONLY, network=False)
    assert sorted(item.key for item in looser.ignored) == ["sandbox.mode", "sandbox.network"]


@pytest.mark.parametrize("mode", ['"strict"', "5", '["off"]'])
def test_a_projects_bad_mode_is_one_clear_error_naming_its_file(tmp_path: Path, mode: str) -> None:
    with pytest.raises(
        ConfigError, match=r"ws/\.dcode/config\.toml line 2: sandbox mode .* is not valid"
    ):
        settings_for(
            tmp_path, '[sandbox]\nmode = "workspace-write"\n', f"[sandbox]\nmode = {mode}\n"
        )


def test_an_untrusted_project_may_turn_it_on(tmp_path: Path) -> None:
    assert (
        settings_for(tmp_path, "", '[sandbox]\nmode = "workspace-write"\n').sandbox.mode
        is SandboxMode.WORKSPACE_WRITE
    )


def test_a_trusted_project_applies_whole(tmp_path: Path) -> None:
    trusted = settings_for(
        tmp_path, '[sandbox]\nmode = "read-only"\n', '[sandbox]\nmode = "off"\n', trusted=True
    )
    assert trusted.sandbox.mode is SandboxMode.OFF


def fake_path(tmp_path: Path, bwrap: str | None) -> str:
    """A PATH holding bash and, when given, a ``bwrap`` that fails as a kernel without user
    namespaces makes the real one fail."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "touch"):
        real = next(
            Path(d) / tool
            for d in [*os.defpath.split(":"), "/usr/bin", "/bin"]
            if (Path(d) / tool).exists()
        )
        (bin_dir / tool).symlink_to(real)
    if bwrap is not None:
        (bin_dir / "bwrap").write_text(f"#!/bin/sh\necho '{bwrap}' >&2\nexit 1\n")
        (bin_dir / "bwrap").chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize(
    ("bwrap", "fix"),
    [
        (None, "install it (apt-get install bubblewrap)"),
        ("bwrap: No permissions to create new namespace", "allow unprivileged user namespaces"),
    ],
)
async def test_a_sandbox_that_cannot_start_refuses_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap: str | None, fix: str
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap is the Linux sandbox")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = LocalBackend(
        workspace,
        environment=ShellEnvironment.of(),
        sandbox=Sandbox(SandboxSettings(SandboxMode.WORKSPACE_WRITE), workspace, tmp_path / "home"),
    )
    monkeypatch.setenv("PATH", fake_path(tmp_path, bwrap))
    with pytest.raises(ToolException) as refused:
        await execute(backend, ExecuteArgs(command="touch ran"))
    message = str(refused.value)
    assert "\n" not in message and message.startswith("execute: refused, the sandbox cannot start:")
    assert fix in message and "/sandbox off" in message
    if bwrap:
        assert "No permissions to create new namespace" in message
    assert not (workspace / "ran").exists()
    with pytest.raises(SandboxUnavailable):
        await backend.execute("touch ran")
    assert (await backend.execute("touch ran", outside_sandbox=True)).exit_code == 0


def test_the_macos_profile(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("")
    home.mkdir()
    user = tmp_path / 'odd "user"'
    (user / ".ssh").mkdir(parents=True)
    (user / ".netrc").write_text("")
    layout = Layout.plan(
        SandboxSettings(SandboxMode.WORKSPACE_WRITE), workspace, home, user_home=user
    )
    text = profile(layout)
    lines = text.splitlines()
    assert lines[:3] == ["(version 1)", "(allow default)", "(deny file-write*)"]
    assert f'(allow file-write* (subpath "{workspace}") (subpath "/private/tmp")' in text
    assert (
        f'(deny file-write* (subpath "{workspace}/.git/hooks") (subpath "{workspace}/.dcode") (subpath "{workspace}/.claude") (literal "{workspace}/.git/config"))'
        in text
    )
    assert (
        f'(deny file-read* file-write* (subpath "{home}") (subpath "{tmp_path}/odd \\"user\\"/.ssh") (literal "{tmp_path}/odd \\"user\\"/.netrc"))'
        in text
    )
    assert "(deny network*)" in lines and "(allow signal (target same-sandbox))" in lines
    networked = profile(
        Layout.plan(
            SandboxSettings(SandboxMode.READ_ONLY, network=True), workspace, home, user_home=user
        )
    )
    assert (
        "(deny network*)" not in networked
        and f'(subpath "{workspace}")' not in networked.split("\n")[3]
    )


DCODE = str(Path(sys.executable).with_name("dcode"))


def doctor(tmp_path: Path, config: str, path: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    env = {"PATH": path, "DCODE_HOME": str(home), "HOME": str(tmp_path)}
    return subprocess.run(
        [DCODE, "doctor", "-m", "ollama:qwen3-coder"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )


def sandbox_line(output: str) -> str:
    [line] = [line for line in output.splitlines() if line.startswith("sandbox ")]
    return line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is the Linux sandbox")
def test_doctor_says_whether_the_sandbox_can_start(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    off = doctor(tmp_path, "", str(empty))
    assert off.returncode == 0, off.stdout + off.stderr
    assert sandbox_line(off.stdout).startswith(
        "sandbox      off; not available here: the sandbox needs bubblewrap (bwrap), which is not installed"
    )
    on = doctor(tmp_path, '[sandbox]\nmode = "workspace-write"\n', str(empty))
    assert on.returncode == 1
    assert sandbox_line(on.stdout).startswith(
        "sandbox      workspace-write: ERROR shell commands are refused: the sandbox needs bubblewrap"
    )
    if availability().works:
        found = doctor(tmp_path, '[sandbox]\nmode = "read-only"\nnetwork = true\n', "/usr/bin:/bin")
        assert (
            sandbox_line(found.stdout)
            == f"sandbox      read-only, network on; bubblewrap works here ({availability().program})"
        )


def test_the_note_only_when_the_sandbox_is_a_likely_cause() -> None:
    from dcode.sandbox.failures import sandbox_note

    boxed = SandboxSettings(SandboxMode.WORKSPACE_WRITE)
    assert sandbox_note("x: Read-only file system", 0, boxed, argument="outside_sandbox") is None
    assert sandbox_note("1 test failed", 1, boxed, argument="outside_sandbox") is None
    assert (
        sandbox_note("x: Read-only file system", 1, SandboxSettings(), argument="outside_sandbox")
        is None
    )
    offline = sandbox_note(
        "curl: (6) Could not resolve host: pypi.org", 6, boxed, argument="outside_sandbox"
    )
    assert (
        offline is not None
        and "the network is off" in offline
        and "outside_sandbox=true" in offline
    )
    online = SandboxSettings(SandboxMode.READ_ONLY, network=True)
    assert (
        sandbox_note(
            "curl: (6) Could not resolve host: pypi.org", 6, online, argument="outside_sandbox"
        )
        is None
    )
    written = sandbox_note(
        "touch: cannot touch 'a': Read-only file system", 1, online, argument="outside_sandbox"
    )
    assert (
        written is not None
        and "writes anywhere but /tmp" in written
        and "(read-only, network on)" in written
    )
