"""What a ``dcode --server`` client sends its server: its token as ``Authorization: Bearer``,
an API key as ``x-api-key`` (a LangSmith Deployment's), each only to the server it was given
(a loopback server that records the headers it gets, and a second one a redirect points to)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dcode.server.client import ApiError, RemoteServer, latest_thread

DCODE = str(Path(sys.executable).with_name("dcode"))
THREAD = {"thread_id": "4f9e2f5c-0d3b-4f0e-9d55-2a1e7c1b9a01", "status": "idle", "metadata": {}}


@dataclass
class Recorder:
    """A loopback server answering thread searches; ``redirect``: answer each with a 307 there."""

    url: str = ""
    redirect: str = ""
    seen: list[dict[str, str]] = field(default_factory=list)


@contextmanager
def recording_server(redirect: str = "") -> Iterator[Recorder]:
    recorder = Recorder(redirect=redirect)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
            if recorder.redirect:
                self.send_response(307)
                self.send_header("Location", recorder.redirect + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps([THREAD] if self.path == "/threads/search" else {}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recorder.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()


def searched(recorder: Recorder, env: dict[str, str]) -> dict[str, str]:
    """The headers of one request of a client made as ``dcode`` makes it, from ``env``."""
    server = RemoteServer.from_env(recorder.url, env)
    assert asyncio.run(latest_thread(server)) == THREAD["thread_id"]
    return recorder.seen[-1]


def test_the_token_is_a_bearer_and_the_api_key_an_x_api_key() -> None:
    with recording_server() as recorder:
        headers = searched(recorder, {"DCODE_SERVER_TOKEN": "tok-1"})
        assert headers["authorization"] == "Bearer tok-1" and "x-api-key" not in headers
        headers = searched(recorder, {"LANGSMITH_API_KEY": "lsv2-2"})
        assert headers["x-api-key"] == "lsv2-2" and "authorization" not in headers
        headers = searched(recorder, {"DCODE_SERVER_API_KEY": "key-3", "LANGSMITH_API_KEY": "x"})
        assert headers["x-api-key"] == "key-3"
        # A token set: LangSmith's own key (kept for tracing, say) is not handed to the server.
        headers = searched(recorder, {"DCODE_SERVER_TOKEN": "tok-4", "LANGSMITH_API_KEY": "ls"})
        assert headers["authorization"] == "Bearer tok-4" and "x-api-key" not in headers
        headers = searched(recorder, {"DCODE_SERVER_TOKEN": "tok-5", "DCODE_SERVER_API_KEY": "k5"})
        assert (headers["authorization"], headers["x-api-key"]) == ("Bearer tok-5", "k5")
        headers = searched(recorder, {})
        assert "authorization" not in headers and "x-api-key" not in headers
        assert headers["user-agent"].startswith("dcode/")
    assert "key-3" not in repr(RemoteServer.from_env("http://h", {"DCODE_SERVER_API_KEY": "key-3"}))


def test_the_dcode_command_sends_the_key_to_its_server_and_nowhere_else(tmp_path: Path) -> None:
    """``dcode sessions list --server URL`` with ``LANGSMITH_API_KEY`` set: the server gets it;
    a redirect to another address is not followed, so that address gets nothing (and nothing
    of what it would answer is shown)."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DCODE_HOME": str(tmp_path / "home"),
        "LANGSMITH_API_KEY": "lsv2-9b31c0",
    }

    def sessions_list(url: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [DCODE, "sessions", "list", "--server", url],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    with recording_server() as elsewhere, recording_server(redirect=elsewhere.url) as given:
        listed = sessions_list(elsewhere.url)
        assert listed.returncode == 0, listed.stderr
        assert THREAD["thread_id"] in listed.stdout
        assert elsewhere.seen[-1]["x-api-key"] == "lsv2-9b31c0"
        elsewhere.seen.clear()
        moved = sessions_list(given.url)
        assert [headers["x-api-key"] for headers in given.seen] == ["lsv2-9b31c0"]
        assert elsewhere.seen == []
        assert THREAD["thread_id"] not in moved.stdout, moved


def test_a_plain_read_follows_no_redirect_and_says_so() -> None:
    """``dcode attach`` reads with the standard library's client: a redirect is an error line,
    never a second request carrying the credentials to another address."""
    with recording_server() as elsewhere, recording_server(redirect=elsewhere.url) as given:
        server = RemoteServer.from_env(given.url, {"DCODE_SERVER_TOKEN": "tok-7"})
        with pytest.raises(ApiError) as raised:
            server.read_now("/threads/search", {"limit": 1})
        assert raised.value.status == 307
        assert [headers["authorization"] for headers in given.seen] == ["Bearer tok-7"]
        assert elsewhere.seen == []
