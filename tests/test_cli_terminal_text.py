"""The real ``dcode`` binary writing the model's words to a terminal (a pseudo-terminal) and to
a pipe: the terminal gets them safe, the pipe byte for byte, and JSON escapes every control."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
import tty
from pathlib import Path

from dcode.terminal_text import safe_text
from tests.support.hostile_text import CLEAR, HOSTILE_NUL, TITLE_BEL, UNSAFE, unsafe_in
from tests.support.model_server import ScriptedModelServer, fault, reply

DCODE = str(Path(sys.executable).with_name("dcode"))


def environment(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home.parent),
        "DCODE_HOME": str(home),
        "OPENAI_API_KEY": "test-key",
        "DCODE_MAX_RETRIES": "0",
    }


def in_terminal(
    args: list[str], workspace: Path, home: Path, timeout: float = 60
) -> tuple[int, str]:
    """Run dcode with stdout and stderr on one pseudo-terminal; what it wrote there, as written
    (the terminal is raw: no newline becomes CR LF on the way)."""
    controller, device = pty.openpty()
    tty.setraw(device)
    process = subprocess.Popen(
        [DCODE, *args],
        cwd=workspace,
        env=environment(home),
        stdin=subprocess.DEVNULL,
        stdout=device,
        stderr=device,
    )
    os.close(device)
    written = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the program has closed the terminal
                break
            if not chunk:
                break
            written += chunk
        return process.wait(timeout=10), written.decode("utf-8")
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)


def in_pipes(args: list[str], workspace: Path, home: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [DCODE, *args],
        cwd=workspace,
        env=environment(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )


def model(server: ScriptedModelServer) -> list[str]:
    return ["-m", "openai:test-model", "--base-url", server.base_url, "--api", "chat"]


def test_print_mode_answers_a_terminal_safely_and_a_pipe_byte_for_byte(
    server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    server.script(reply(HOSTILE_NUL), reply(HOSTILE_NUL))
    code, shown = in_terminal(["-p", "say it", *model(server)], workspace, home)
    assert code == 0, shown
    assert shown == safe_text(HOSTILE_NUL) + "\n"
    assert not unsafe_in(shown) and "PWNED" not in shown and "click here" in shown
    piped = in_pipes(["-p", "say it again", *model(server)], workspace, home)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (HOSTILE_NUL + "\n").encode()  # scripts get every byte


def test_json_output_escapes_every_control_and_keeps_the_value(
    server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    server.script(reply(HOSTILE_NUL, chunk_size=4), reply(HOSTILE_NUL))
    streamed = in_pipes(
        ["-p", "stream it", *model(server), "--output-format", "stream-json"], workspace, home
    )
    assert streamed.returncode == 0, streamed.stderr
    lines = streamed.stdout.decode().splitlines()
    assert not [line for line in lines if UNSAFE.search(line)]
    assert (
        "".join(event["text"] for event in map(json.loads, lines) if event["type"] == "text_delta")
        == HOSTILE_NUL
    )
    code, shown = in_terminal(
        ["-p", "once", *model(server), "--output-format", "json"], workspace, home
    )
    assert code == 0 and not unsafe_in(shown)
    assert json.loads(shown)["result"] == HOSTILE_NUL


def test_an_error_from_the_server_is_one_safe_line_on_a_terminal(
    server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    message = f"bad request{TITLE_BEL}{CLEAR} \u202eeulav"
    server.script(fault.status(400, message=message), fault.status(400, message=message))
    code, shown = in_terminal(["-p", "fail", *model(server)], workspace, home)
    assert code == 1
    [line] = shown.splitlines()
    assert line.startswith("dcode: error: ") and "bad request" in line and "⟨U+202E⟩eulav" in line
    assert not unsafe_in(shown) and "PWNED" not in shown
    piped = in_pipes(["-p", "fail", *model(server)], workspace, home)
    assert piped.returncode == 1 and TITLE_BEL.encode() in piped.stderr


def test_sessions_show_and_list_draw_a_saved_session_safely(
    server: ScriptedModelServer, workspace: Path, home: Path
) -> None:
    server.script(reply(HOSTILE_NUL))
    done = in_pipes(["-p", f"title {TITLE_BEL}here", *model(server)], workspace, home)
    assert done.returncode == 0, done.stderr
    listing = in_pipes(["sessions", "list"], workspace, home).stdout.decode()
    session_id = listing.splitlines()[1].split()[0]
    code, shown = in_terminal(["sessions", "show", session_id], workspace, home)
    assert code == 0, shown
    assert not unsafe_in(shown) and "PWNED" not in shown
    assert (
        "title here" in shown and "[dcode] before click here" in shown and "⟨U+202E⟩evil" in shown
    )
    code, shown = in_terminal(["sessions", "list"], workspace, home)
    assert code == 0 and not unsafe_in(shown) and "title here" in shown
    piped = in_pipes(["sessions", "show", session_id], workspace, home)
    assert "\x1b]0;PWNED" in piped.stdout.decode()  # a pipe gets the transcript as saved
