"""Escapes from the sandboxed shell, each refused, with the real bubblewrap.

The workspace is under /tmp (pytest's), so every target outside it is put elsewhere (/var/tmp):
a write that only reached the sandbox's private /tmp would prove nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dcode.agent.backends import LocalBackend
from dcode.agent.backends.environment import ShellEnvironment
from dcode.agent.tools.args import ExecuteArgs
from dcode.agent.tools.execute import format_result
from dcode.processes.trees import TREES
from dcode.sandbox.confine import Sandbox
from dcode.sandbox.modes import SandboxMode, SandboxSettings
from dcode.sandbox.probe import availability

HELPER = Path(__file__).parent / "support" / "sandboxed_shell.py"
CANARY = "sk-CANARY-LAUNCHER-KEY-4471"


def _why_not() -> str | None:
    if not sys.platform.startswith("linux"):
        return "the bubblewrap sandbox is Linux only"
    found = availability()
    return None if found.works else f"no working sandbox here: {found.problem}"


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside both the workspace and /tmp (the sandbox's /tmp is its own)."""
    path = Path(tempfile.mkdtemp(prefix="dcode-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    return root


def backend_for(
    workspace: Path,
    home: Path,
    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE,
    network: bool = False,
) -> LocalBackend:
    sandbox = Sandbox(SandboxSettings(mode, network), workspace, home)
    return LocalBackend(workspace, environment=ShellEnvironment.of(), sandbox=sandbox)


async def test_the_workspace_is_writable_and_the_rest_is_not(
    workspace: Path, outside: Path
) -> None:
    backend = backend_for(workspace, outside / "home")
    target = outside / "escaped"
    result = await backend.execute(f"echo in > made; echo out > {target}")
    assert (workspace / "made").read_text() == "in\n"
    assert not target.exists()
    assert "Read-only file system" in result.output and result.exit_code != 0
    text = format_result(result, 30)
    assert "[sandbox: this command runs in a sandbox (workspace-write)" in text
    assert "outside_sandbox=true" in text


async def test_read_only_mode_writes_nowhere(workspace: Path, outside: Path) -> None:
    backend = backend_for(workspace, outside / "home", SandboxMode.READ_ONLY)
    result = await backend.execute(
        "echo in > made; echo private > /tmp/scratch && cat /tmp/scratch"
    )
    assert not (workspace / "made").exists()
    assert "private" in result.output  # the private /tmp is there to write to


async def test_dcode_home_is_hidden(workspace: Path, outside: Path) -> None:
    home = outside / "dcode-home"
    home.mkdir()
    (home / "config.toml").write_text('api_key = "SECRET-IN-DCODE-HOME"\n')
    backend = backend_for(workspace, home)
    result = await backend.execute(f"cat {home}/config.toml; ls -A {home}; echo x > {home}/planted")
    assert "SECRET-IN-DCODE-HOME" not in result.output
    assert "No such file" in result.output
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]


async def test_credential_files_are_empty(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = outside / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_ed25519").write_text("SECRET-SSH")
    (user / ".netrc").write_text("machine x login y password SECRET-NETRC")
    (user / ".docker").mkdir()
    (user / ".docker" / "config.json").write_text('{"auths": "SECRET-DOCKER"}')
    monkeypatch.setenv("HOME", str(user))
    backend = backend_for(workspace, outside / "home")
    result = await backend.execute(
        f"cat {user}/.ssh/id_ed25519 {user}/.netrc {user}/.docker/config.json; ls -A {user}/.ssh"
    )
    assert "SECRET" not in result.output


async def test_git_hooks_and_config_and_settings_stay_read_only(
    workspace: Path, outside: Path
) -> None:
    (workspace / ".dcode").mkdir()
    backend = backend_for(workspace, outside / "home")
    result = await backend.execute(
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; "
        "echo '[core] hooksPath = /x' >> .git/config; "
        "echo 'approve = \"all\"' > .dcode/config.toml; "
        "mkdir -p .claude && echo '{}' > .claude/settings.json; "
        "echo fine > src.txt"
    )
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (workspace / ".dcode" / "config.toml").exists()
    assert not (workspace / ".claude" / "settings.json").exists()
    assert (workspace / "src.txt").read_text() == "fine\n"
    assert result.output.count("Read-only file system") >= 3


async def test_git_cannot_be_moved_aside_for_a_new_one_with_hooks(
    workspace: Path, outside: Path
) -> None:
    backend = backend_for(workspace, outside / "home")
    result = await backend.execute(
        "mv .git .git-old; mkdir -p .git/hooks && printf '#!/bin/sh\ntouch pwned\n' > .git/hooks/pre-commit; "
        "git init -q . 2>&1; echo ok > .git/objects-written-by-a-commit"
    )
    assert not (workspace / ".git-old").exists()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (
        workspace / ".git" / "objects-written-by-a-commit"
    ).read_text() == "ok\n"  # .git stays writable
    assert "Device or resource busy" in result.output


async def test_a_submodule_s_hooks_and_config_stay_read_only(
    workspace: Path, outside: Path
) -> None:
    modules = workspace / ".git" / "modules"
    for module in (modules / "lib", modules / "lib" / "modules" / "inner"):
        (module / "hooks").mkdir(parents=True)
        (module / "HEAD").write_text("ref: refs/heads/main\n")
        (module / "config").write_text("[core]\n\tbare = false\n")
    (modules / "vendor").mkdir()
    (modules / "vendor" / "HEAD").write_text("ref: refs/heads/main\n")  # no hooks folder yet
    backend = backend_for(workspace, outside / "home")
    await backend.execute(
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/modules/lib/hooks/post-checkout; "
        "echo '[core] fsmonitor = touch pwned' >> .git/modules/lib/modules/inner/config; "
        "mkdir -p .git/modules/vendor/hooks && touch .git/modules/vendor/hooks/pre-commit"
    )
    assert not (modules / "lib" / "hooks" / "post-checkout").exists()
    inner_config = modules / "lib" / "modules" / "inner" / "config"
    assert inner_config.read_text() == "[core]\n\tbare = false\n"
    assert not (modules / "vendor" / "hooks" / "pre-commit").exists()

    moved = await backend.execute(
        "mv .git/modules/lib .git/modules/lib-old; mv .git/modules .git/modules-old; "
        "echo ok > .git/modules/lib/objects-written"
    )
    assert not (workspace / ".git" / "modules-old").exists()
    assert not (modules / "lib-old").exists()
    assert (modules / "lib" / "objects-written").read_text() == "ok\n"  # still a git dir
    assert "Device or resource busy" in moved.output


async def test_no_connection_to_a_loopback_listener_with_the_network_off(
    workspace: Path, outside: Path
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"
        refused = await backend_for(workspace, outside / "home").execute(command)
        with pytest.raises(BlockingIOError):
            listener.accept()
        allowed = await backend_for(workspace, outside / "home", network=True).execute(command)
        conn, _ = listener.accept()  # the control: with the network on, the same line connects
        conn.close()
    assert "CONNECTED" not in refused.output
    assert "the network is off" in format_result(refused, 30)
    assert "CONNECTED" in allowed.output


async def test_the_runtime_directory_s_sockets_are_out_of_reach(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Unix socket needs no network: an agent's or a daemon's there answers a sandboxed command
    unless it is hidden."""
    runtime = outside / "runtime"
    runtime.mkdir()
    path = runtime / "agent.sock"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    connect = f"{sys.executable} -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}'); print('CONNECTED')\""
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen(1)
        result = await backend_for(workspace, outside / "home").execute(connect)
        unconfined = await backend_for(workspace, outside / "home").execute(
            connect, outside_sandbox=True
        )
    assert "CONNECTED" not in result.output and "CONNECTED" in unconfined.output


def run_as_dcode(
    workspace: Path, home: Path, command: str, env: dict[str, str] | None = None
) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(HELPER), str(workspace), str(home), command],
        capture_output=True,
        text=True,
        timeout=60,
        env=env or dict(os.environ),
    )
    assert done.returncode == 0, (
        f"the process standing for dcode ended with {done.returncode}: {done.stderr}"
    )
    return json.loads(done.stdout)


def test_a_command_cannot_kill_dcode(workspace: Path, outside: Path) -> None:
    reply = run_as_dcode(workspace, outside / "home", "kill -9 {PID}; echo rc=$?")
    assert "rc=1" in str(
        reply["output"]
    )  # no such process: dcode is not in the sandbox's PID namespace


def test_no_process_environment_outside_holds_the_launchers_key(
    workspace: Path, outside: Path
) -> None:
    env = {**os.environ, "OPENAI_API_KEY": CANARY, "OTHER_SERVICE_API_KEY": CANARY}
    command = (
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done; ls /proc | grep -c '^[0-9]'"
    )
    reply = run_as_dcode(workspace, outside / "home", command, env)
    assert CANARY not in str(reply["output"])
    assert str(reply["pid"]) not in str(reply["output"]).split()


async def test_the_scrubbed_environment_stays_scrubbed(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("VISIBLE_SETTING", "kept")
    result = await backend_for(workspace, outside / "home").execute("env")
    assert CANARY not in result.output and "VISIBLE_SETTING=kept" in result.output


async def test_outside_the_sandbox_only_when_asked(workspace: Path, outside: Path) -> None:
    target = outside / "written-unconfined"
    backend = backend_for(workspace, outside / "home")
    result = await backend.execute(f"echo x > {target}", outside_sandbox=True)
    assert result.exit_code == 0 and target.exists() and result.sandbox is None
    assert "sandbox" not in format_result(result, 30)


def test_the_argument_is_off_unless_given() -> None:
    assert ExecuteArgs(command="true").outside_sandbox is False


def bwrap_children() -> list[int]:
    """This process's children that are bubblewrap (a sandboxed command not yet ended)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = (
            stat[stat.index("(") + 1 : stat.rindex(")")],
            stat[stat.rindex(")") + 2 :].split(),
        )
        if name == "bwrap" and int(rest[1]) == os.getpid():
            found.append(int(entry.name))
    return found


async def test_a_timeout_ends_the_sandbox_and_everything_in_it(
    workspace: Path, outside: Path
) -> None:
    marker = workspace / "late"
    backend = backend_for(workspace, outside / "home")
    result = await backend.execute(f"(sleep 2; touch {marker}) & exec sleep 30", timeout=1)
    assert result.timed_out
    await asyncio.sleep(2.5)
    assert not marker.exists()
    await until(lambda: bwrap_children() == [])


async def test_a_cancelled_command_ends_the_sandbox(workspace: Path, outside: Path) -> None:
    marker = workspace / "late"
    backend = backend_for(workspace, outside / "home")
    task = asyncio.create_task(
        backend.execute(f"touch started; (sleep 2; touch {marker}) & sleep 30")
    )
    await until(lambda: (workspace / "started").exists())
    [leader] = bwrap_children()  # the command, as the tree tracking knows it, is bubblewrap
    assert leader in TREES.live()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(2.5)
    assert not marker.exists()
    await until(lambda: bwrap_children() == [])


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


async def test_an_added_directory_is_writable_as_the_workspace_is(
    workspace: Path, outside: Path
) -> None:
    """``--add-dir``: commands write there too, its hooks, git config and settings stay
    read-only as the workspace's do, and everything else stays out of reach."""
    added = outside / "lib"
    (added / ".git" / "hooks").mkdir(parents=True)
    (added / ".git" / "config").write_text("[core]\n")
    elsewhere = outside / "elsewhere"
    elsewhere.mkdir()
    sandbox = Sandbox(
        SandboxSettings(SandboxMode.WORKSPACE_WRITE), workspace, outside / "home", (added,)
    )
    backend = LocalBackend(
        workspace, environment=ShellEnvironment.of(), sandbox=sandbox, add_dirs=(added,)
    )
    result = await backend.execute(
        f"echo fine > {added}/src.txt; echo here > made; "
        f"printf '#!/bin/sh\\ntouch pwned\\n' > {added}/.git/hooks/pre-commit; "
        f"echo '[core] hooksPath = /x' >> {added}/.git/config; "
        f"mkdir -p {added}/.dcode && echo x > {added}/.dcode/config.toml; "
        f"mv {added}/.git {added}/.git-old; "
        f"echo out > {elsewhere}/escaped"
    )
    assert (added / "src.txt").read_text() == "fine\n" and (workspace / "made").is_file()
    assert not (added / ".git" / "hooks" / "pre-commit").exists()
    assert (added / ".git" / "config").read_text() == "[core]\n"
    assert not (added / ".dcode" / "config.toml").exists()
    assert (added / ".git").is_dir() and not (added / ".git-old").exists()
    assert not (elsewhere / "escaped").exists(), result.output
    # Without it, the same directory is as read-only as the rest.
    plain = backend_for(workspace, outside / "home")
    again = await plain.execute(f"echo again > {added}/other.txt")
    assert not (added / "other.txt").exists() and "Read-only file system" in again.output
