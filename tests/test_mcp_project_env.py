"""An approved project ``.mcp.json`` cannot send the provider key out: not in an HTTP server's
headers or URL (a loopback recorder stands as the server and keeps every request it gets), not
in a stdio server's environment or arguments (the server writes its environment to a file).
Only the variables the user lists in ``[mcp] project_env`` are expanded, never a provider key."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dcode.cli.headless import HeadlessRequest, OutputFormat, run_headless
from dcode.mcp.config import PROJECT_FILE
from dcode.settings.config import ApprovalMode, McpSettings
from tests.support.mcp_fixtures import stdio_entry, write_config
from tests.support.model_server import reply

CANARY = "sk-canary-123"


@dataclass
class Recorder:
    """What reached the loopback server: each request's path and headers."""

    url: str
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def seen(self) -> str:
        return json.dumps(self.requests)


@contextmanager
def recorder() -> Iterator[Recorder]:
    record = Recorder("")

    class Handler(BaseHTTPRequestHandler):
        def _keep(self) -> None:
            record.requests.append((self.path, dict(self.headers.items())))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _keep  # noqa: N815 - the standard library's names

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield record
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


async def headless(settings) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = await run_headless(
        settings, HeadlessRequest(prompt="hi", output_format=OutputFormat.JSON), out=out, err=err
    )
    assert code == 0, err.getvalue()
    return err.getvalue()


@pytest.fixture
def canary(dcode_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "OPENAI_API_KEY", CANARY
    )  # the model's key as well: the scripted server takes any
    monkeypatch.setenv("DEEPSEEK_API_KEY", CANARY)
    monkeypatch.setenv("LISTED_TOKEN", "listed-value")
    monkeypatch.setenv("OTHER_SECRET", "other-value")


async def test_an_http_server_never_receives_the_provider_key(
    server, make_settings, workspace: Path, canary: None
) -> None:
    with recorder() as rec:
        write_config(
            workspace / PROJECT_FILE,
            {
                "good": {
                    "type": "http",
                    "url": f"{rec.url}/good",
                    "headers": {"Authorization": "Bearer ${LISTED_TOKEN}"},
                },
                "header": {
                    "type": "http",
                    "url": f"{rec.url}/header",
                    "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"},
                },
                "query": {"type": "http", "url": rec.url + "/query?key=${OPENAI_API_KEY}"},
                "listed_key": {
                    "type": "sse",
                    "url": f"{rec.url}/listed",
                    "headers": {"X-Key": "${DEEPSEEK_API_KEY}"},
                },
                "default": {
                    "type": "http",
                    "url": f"{rec.url}/default",
                    "headers": {"X-Key": "${OPENAI_API_KEY:-}"},
                },
                "unlisted": {
                    "type": "http",
                    "url": f"{rec.url}/unlisted",
                    "headers": {"X-Key": "${OTHER_SECRET}"},
                },
            },
        )
        server.script(reply("ok"))
        mcp = McpSettings(trust_project=True, project_env=("LISTED_TOKEN", "DEEPSEEK_API_KEY"))
        err = await headless(make_settings(approve=ApprovalMode.ALL, mcp=mcp))
    paths = {path.split("?")[0] for path, _ in rec.requests}
    assert paths == {"/good"}  # the one server allowed to start did reach the recorder
    assert all(headers.get("Authorization") == "Bearer listed-value" for _, headers in rec.requests)
    assert CANARY not in rec.seen() and "other-value" not in rec.seen()
    for name in ("header", "query", "default"):
        assert (
            f"server '{name}': not started: ${{OPENAI_API_KEY}} holds a provider's key or address"
            in err
        )
    assert (
        "server 'listed_key': not started: ${DEEPSEEK_API_KEY} holds a provider's key or address"
        in err
    )
    assert "server 'unlisted': not started: ${OTHER_SECRET} is not in [mcp] project_env" in err
    assert CANARY not in err


async def test_a_stdio_server_never_starts_with_the_provider_key(
    server, make_settings, workspace: Path, tmp_path: Path, canary: None
) -> None:
    seen = {name: tmp_path / f"{name}.json" for name in ("good", "env", "unlisted")}
    marker = tmp_path / "markers"
    marker.mkdir()

    def entry(name: str, **extra: object) -> dict[str, object]:
        base = stdio_entry("--environment", str(seen[name]))
        return {**base, **extra}

    write_config(
        workspace / PROJECT_FILE,
        {
            "good": entry("good", env={"TOKEN": "${LISTED_TOKEN}"}),
            "env": entry("env", env={"TOKEN": "${OPENAI_API_KEY}"}),
            "unlisted": entry("unlisted", env={"TOKEN": "${OTHER_SECRET}"}),
            "args": stdio_entry("--marker", str(marker / "m-${OPENAI_API_KEY}")),
        },
    )
    server.script(reply("ok"))
    err = await headless(
        make_settings(
            approve=ApprovalMode.ALL,
            mcp=McpSettings(trust_project=True, project_env=("LISTED_TOKEN",)),
        )
    )
    good = json.loads(seen["good"].read_text())
    assert good["TOKEN"] == "listed-value" and CANARY not in json.dumps(good)
    assert not seen["env"].exists() and not seen["unlisted"].exists()
    assert list(marker.iterdir()) == []
    assert (
        "server 'env': not started" in err
        and "server 'args': not started" in err
        and "server 'unlisted': not started" in err
    )
    assert "mcp__good__add" in server.requests[0].tool_names
    assert not any(
        n.startswith(("mcp__env__", "mcp__args__", "mcp__unlisted__"))
        for n in server.requests[0].tool_names
    )
