"""web_fetch against real HTTP on loopback: the scripted server's static pages, httpx as dcode
uses it, nothing mocked. HTML becomes Markdown, text passes through, redirects show, errors
and refused schemes are one line, caps hold, and what is not text lands in a private file.

The scripted server is on loopback, a private address: the user's config here names
``127.0.0.1`` in ``[fetch] allow_private``, as a user reading their own local servers would.
What web_fetch may reach without that is tested in ``test_web_fetch_private``."""

from __future__ import annotations

import hashlib
import io
import json
import random
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from PIL import Image

from dcode.agent.approval import ApprovalPolicy
from dcode.agent.backends import LocalBackend
from dcode.agent.tools.web_client import FetchRules
from dcode.agent.tools.web_fetch import MAX_BYTES, Unreachable, fetch, make_web_fetch_tool
from dcode.models.user_agent import USER_AGENT
from dcode.settings.config import ApprovalMode
from tests.support.model_server import ScriptedModelServer
from tests.support.web_hosts import allow_private

FIXTURE = Path(__file__).parent / "fixtures" / "docs_page.html"
MIB = 1024 * 1024


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "large_tool_results"


@pytest.fixture
def local_hosts(home: Path) -> tuple[str, ...]:
    """``[fetch] allow_private`` as the user's config names it: this machine's own servers."""
    return allow_private(home, "127.0.0.1")


@pytest.fixture
def web_fetch(tmp_path: Path, results: Path, local_hosts: tuple[str, ...]) -> BaseTool:
    policy = ApprovalPolicy(ApprovalMode.ALL, LocalBackend(tmp_path), fetch_private=local_hosts)
    return make_web_fetch_tool(results, policy=policy)


async def call(tool: BaseTool, **args: object) -> ToolMessage:
    message = await tool.ainvoke(
        {"type": "tool_call", "name": tool.name, "id": "call_1", "args": args}
    )
    assert isinstance(message, ToolMessage)
    return message


def page_requests(server: ScriptedModelServer, path: str) -> list:
    return [request for request in server.all_requests if request.path == path]


def png(size: tuple[int, int] = (320, 200)) -> bytes:
    """A noisy picture: a PNG of some size (over 1 KiB)."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", size, random.Random(7).randbytes(size[0] * size[1] * 3)).save(
        buffer, "PNG"
    )
    return buffer.getvalue()


async def test_an_html_docs_page_becomes_markdown(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    body = FIXTURE.read_bytes()
    server.pages["/guide/quickstart.html"] = (200, "text/html; charset=utf-8", body)
    url = f"{server.url}/guide/quickstart.html"
    result = await call(web_fetch, url=url)
    assert result.status == "success"
    text = str(result.content)
    headline, blank, first = text.splitlines()[:3]
    assert (
        headline == f"Fetched {url} · 200 · text/html · {len(body) / 1024:.1f} KiB" and blank == ""
    )
    assert first == "# Quickstart — Tidewater 2.4 documentation"
    assert "\n## Installing\n" in text and "\n### Options\n" in text
    assert "- Read the heights.\n  - High tides are marked HW.\n" in text
    assert '```python\nimport tidewater\n\nwith tidewater.open("brest") as station:\n' in text
    assert (
        f"[station list]({server.url}/guide/stations.html)" in text
    )  # a relative link, made absolute
    assert f"[API reference]({server.url}/reference/api.html#tidewater.open)" in text
    assert (
        "SHOULD NOT APPEAR" not in text and "ALSO HIDDEN" not in text and "font-family" not in text
    )
    [request] = page_requests(server, "/guide/quickstart.html")
    assert request.headers["user-agent"] == USER_AGENT
    assert not {"authorization", "cookie", "proxy-authorization", "x-api-key"} & set(
        request.headers
    )


async def test_json_and_other_text_pass_through(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    issue = json.dumps(
        {"title": "Crash on start", "labels": ["bug"], "body": "<b>not html</b>"}, indent=2
    ).encode()
    server.pages["/api/issues/7"] = (200, "application/vnd.github+json", issue)
    server.pages["/notes.txt"] = (
        200,
        "text/plain; charset=iso-8859-1",
        "café crème\n".encode("latin-1"),
    )
    result = await call(web_fetch, url=f"{server.url}/api/issues/7")
    headline, rest = str(result.content).split("\n\n", 1)
    assert (
        headline
        == f"Fetched {server.url}/api/issues/7 · 200 · application/vnd.github+json · {len(issue)} bytes"
    )
    assert rest == issue.decode()
    latin = await call(web_fetch, url=f"{server.url}/notes.txt")
    assert str(latin.content).endswith("\n\ncafé crème")


async def test_a_redirect_shows_where_it_ended(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    server.redirects["/old/page"] = "/new/page"
    server.pages["/new/page"] = (200, "text/plain", b"moved here")
    result = await call(web_fetch, url=f"{server.url}/old/page")
    assert (
        str(result.content)
        == f"Fetched {server.url}/old/page → {server.url}/new/page · 200 · text/plain · 10 bytes\n\nmoved here"
    )


async def test_more_than_five_redirects_is_an_error(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    server.redirects["/loop"] = "/loop"
    result = await call(web_fetch, url=f"{server.url}/loop")
    assert result.status == "error"
    assert result.content == f"web_fetch: {server.url}/loop redirected more than 5 times"
    assert len(page_requests(server, "/loop")) == 6  # the first request and five redirects


async def test_an_http_error_is_a_tool_error_with_the_status_and_the_start_of_the_body(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    page = (
        b"<html><head><title>Not here</title></head><body><p>No page by that name."
        + b" Try the index." * 40
        + b"</p></body></html>"
    )
    server.pages["/missing"] = (404, "text/html", page)
    result = await call(web_fetch, url=f"{server.url}/missing")
    assert result.status == "error"
    text = str(result.content)
    prefix = f"web_fetch: {server.url}/missing answered 404 Not Found: "
    assert text.startswith(prefix + "# Not here No page by that name. Try the index.")
    assert len(text) == len(prefix) + 300 + 1 and text.endswith("…")
    server.pages["/boom"] = (503, "application/json", b'{"error": "overloaded"}')
    failed = await call(web_fetch, url=f"{server.url}/boom")
    assert (
        failed.content
        == f'web_fetch: {server.url}/boom answered 503 Service Unavailable: {{"error": "overloaded"}}'
    )


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("file:///etc/passwd", "the file: scheme"),
        ("ftp://ftp.example.org/pub/file.txt", "the ftp: scheme"),
        ("example.org/docs", "a URL without a scheme"),
    ],
)
async def test_only_http_and_https_are_fetched(web_fetch: BaseTool, url: str, scheme: str) -> None:
    result = await call(web_fetch, url=url)
    assert result.status == "error"
    assert (
        result.content
        == f"web_fetch: only http:// and https:// URLs can be fetched, not {scheme}: {url}"
    )


async def test_credentials_in_a_url_are_refused(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    server.pages["/private"] = (200, "text/plain", b"secret")
    result = await call(web_fetch, url=f"http://me:hunter2@127.0.0.1:{server.port}/private")
    assert result.status == "error" and "user name or password" in str(result.content)
    assert page_requests(server, "/private") == []


async def test_text_over_max_chars_is_cut_with_a_note(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    body = "".join(
        f"line {n:04}\n" for n in range(1000)
    ).encode()  # 10,000 characters, 9,999 without the last newline
    server.pages["/long.txt"] = (200, "text/plain", body)
    result = await call(web_fetch, url=f"{server.url}/long.txt", max_chars=100)
    headline, rest = str(result.content).split("\n\n", 1)
    assert headline.endswith("· 9.8 KiB")
    kept, note = rest.rsplit("\n\n", 1)
    assert kept == body.decode()[:100].rstrip()
    assert (
        note
        == "[9,899 more characters of the text were left out; call web_fetch again with a larger max_chars (up to 200,000) to read more]"
    )
    whole = await call(web_fetch, url=f"{server.url}/long.txt")  # the default, 50,000, holds it all
    assert str(whole.content).split("\n\n", 1)[1] == body.decode().strip("\n")


async def test_a_body_over_5_mib_stops_at_the_cap(
    server: ScriptedModelServer, web_fetch: BaseTool
) -> None:
    server.pages["/huge.log"] = (200, "text/plain", b"x" * (6 * MIB))
    result = await call(web_fetch, url=f"{server.url}/huge.log", max_chars=1000)
    headline, rest = str(result.content).split("\n\n", 1)
    assert (
        headline
        == f"Fetched {server.url}/huge.log · 200 · text/plain · 5.0 MiB (stopped at the 5 MiB cap; the rest was not downloaded)"
    )
    assert (
        rest.startswith("x" * 1000 + "\n\n[") and f"[{MAX_BYTES - 1000:,} more characters" in rest
    )


async def test_an_image_is_saved_privately_for_read_file(
    server: ScriptedModelServer, web_fetch: BaseTool, results: Path
) -> None:
    image = png()
    server.pages["/img/chart.png"] = (200, "image/png", image)
    result = await call(web_fetch, url=f"{server.url}/img/chart.png")
    # Outside a graph run there is no thread: the folder is "session".
    saved = results / "session" / f"fetch-{hashlib.sha256(image).hexdigest()[:16]}.png"
    assert saved.read_bytes() == image
    assert (
        stat.S_IMODE(saved.stat().st_mode) == 0o600
        and stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
    )
    assert str(result.content) == (
        f"Fetched {server.url}/img/chart.png · 200 · image/png · {len(image) / 1024:.1f} KiB\n\n"
        f"Not text: the body was saved to {saved} (readable only by you). "
        f"Open it with read_file (file_path={saved}); read_file shows images and reads PDFs."
    )


async def test_without_a_content_type_the_bytes_decide(
    server: ScriptedModelServer, web_fetch: BaseTool, results: Path
) -> None:
    server.pages["/README"] = (200, "", b"# A plain readme\n")
    server.pages["/blob"] = (200, "application/octet-stream", b"\x00\x01\x02binary")
    text = await call(web_fetch, url=f"{server.url}/README")
    assert str(text.content).endswith("· no content type · 17 bytes\n\n# A plain readme")
    binary = await call(web_fetch, url=f"{server.url}/blob")
    assert "Not text: the body was saved to" in str(binary.content)
    [saved] = (results / "session").glob("fetch-*")
    assert saved.suffix == ".bin" and saved.read_bytes() == b"\x00\x01\x02binary"


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections (the kernel completes them) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


async def test_a_refused_connection_is_one_line(web_fetch: BaseTool, closed_port: int) -> None:
    result = await call(web_fetch, url=f"http://127.0.0.1:{closed_port}/docs")
    assert result.status == "error"
    assert (
        result.content == f"web_fetch: could not reach 127.0.0.1:{closed_port}: connection refused"
    )


async def test_a_server_that_never_answers_times_out(
    silent_server: int, local_hosts: tuple[str, ...]
) -> None:
    started = time.monotonic()
    with pytest.raises(Unreachable) as caught:
        await fetch(
            f"http://127.0.0.1:{silent_server}/slow",
            rules=FetchRules(private_hosts=local_hosts),
            deadline=0.5,
        )
    assert str(caught.value) == f"could not reach 127.0.0.1:{silent_server}: timed out after 0.5 s"
    assert time.monotonic() - started < 5
