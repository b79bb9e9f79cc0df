"""``web_fetch``: read a web page or a file by URL.

A plain GET over http or https: dcode's User-Agent and an Accept header, no cookies, no
credentials of any kind (a URL with a user name or password in it is refused), at most
``MAX_REDIRECTS`` redirects, ``CONNECT_TIMEOUT_S`` to connect and ``DEADLINE_S`` for the whole
request, body included. The body is streamed and reading stops at ``MAX_BYTES``. Where a
request may go (private addresses, redirects to other hosts) is ``web_client``'s to decide,
with the user's ``[fetch] allow_private`` and the run's approval policy.

What comes back starts with one line: ``Fetched URL [→ FINAL URL] · STATUS · TYPE · SIZE``. Then:
- HTML: the page as Markdown-ish text (``html_text``);
- other text (``text/*``, JSON, XML and their ``+json``/``+xml`` kinds): the text as it is;
- anything else (images, PDFs, archives): saved to a private file under
  ``$DCODE_HOME/large_tool_results/{session}/fetch-{sha256[:16]}.{ext}`` for ``read_file``.
Text is cut to the call's ``max_chars``. An HTTP error status, a refused URL and a network
failure are tool errors of one line.

httpx is imported when a call runs, so that nothing heavier than the tool set itself loads
with it.
"""

from __future__ import annotations

import asyncio
import codecs
import hashlib
import mimetypes
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from langchain_core.tools import BaseTool

from dcode.agent.large_results import safe_name
from dcode.agent.run_context import current_thread_id
from dcode.agent.tools.args import FETCH_MAX_CHARS, WebFetchArgs
from dcode.agent.tools.errors import fail
from dcode.agent.tools.factory import ToolOutput, make_tool
from dcode.agent.tools.filetypes import looks_like_text
from dcode.agent.tools.spec import READ_FILE, WEB_FETCH
from dcode.agent.tools.web_client import (
    CONNECT_TIMEOUT_S,
    DEADLINE_S,
    MAX_BYTES,
    MAX_REDIRECTS,
    Fetched,
    FetchRules,
    Refused,
    Unreachable,
    fetch,
)
from dcode.settings.web_address import WebAddress

if TYPE_CHECKING:
    from dcode.agent.approval import Policy

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEADLINE_S",
    "MAX_BYTES",
    "MAX_REDIRECTS",
    "Unreachable",
    "fetch",
    "make_web_fetch_tool",
]

NAME = WEB_FETCH.name
ERROR_BODY_CHARS: Final = 300
"""Of an error answer, only its first ``ERROR_BODY_CHARS`` characters of text are shown."""

HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES: Final = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-ndjson",
    }
)
UNNAMED_TYPES: Final = frozenset({"", "application/octet-stream", "binary/octet-stream"})
"""Types that say nothing: the bytes decide (text when they read as UTF-8 without NULs)."""
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)

DESCRIPTION = f"""Fetch a web page or file by URL (http or https only) and return its content: \
a first line with the final URL (after redirects), the status, the content type and the size, then:

- HTML pages as Markdown-style text (title, headings, lists, code blocks, links made absolute); \
JSON, XML and other text as it is.
- Anything else (images, PDFs, archives) is saved to a file; the result gives its path, and \
read_file opens it (read_file shows images and reads PDFs).
- Text over max_chars (default 50,000, max {FETCH_MAX_CHARS:,}) is cut, with a note saying how \
much was left out. Downloads stop at 5 MiB; the request gives up after {DEADLINE_S:.0f} s.
- Each fetch needs the user's approval unless they allowed all calls: fetch what the task needs, \
and never put secrets or file contents into a URL.
- Private addresses (localhost, the local network, cloud metadata) are refused unless the user \
named the host in their config; a redirect to another host is reported, not followed.
- Prefer it to curl or wget in the shell for reading documentation, issues and other pages. It \
sends no cookies or credentials, so pages behind a login cannot be read."""


async def web_fetch(
    args: WebFetchArgs, results_dir: Callable[[], Path], rules: FetchRules | None = None
) -> ToolOutput:
    """The tool's result for ``args``; bodies that are not text are saved under ``results_dir()``."""
    try:
        page = await fetch(args.url, rules=rules)
    except (Refused, Unreachable) as exc:
        fail(f"{NAME}: {exc}")
    if page.status >= 400:
        text = " ".join((await asyncio.to_thread(_text_of, page)).split())
        said = (
            f": {text[:ERROR_BODY_CHARS]}" + ("…" if len(text) > ERROR_BODY_CHARS else "")
            if text
            else ""
        )
        fail(
            f"{NAME}: {page.final_url} answered {page.status} {page.reason}".rstrip()
            + (said or " (no text in the answer)")
        )
    headline = _headline(page)
    if _kind(page) == "binary":
        folder = results_dir() / safe_name(current_thread_id("session"), "session")
        path = await asyncio.to_thread(_save, page, folder)
        incomplete = (
            " It is incomplete: the download stopped at the 5 MiB cap." if page.capped else ""
        )
        return (
            f"{headline}\n\nNot text: the body was saved to {path} (readable only by you).{incomplete} "
            f"Open it with {READ_FILE.name} (file_path={path}); {READ_FILE.name} shows images and reads PDFs."
        )
    text = (await asyncio.to_thread(_text_of, page)).strip(
        "\n"
    )  # 5 MiB of HTML takes a second or two
    if not text.strip():
        return f"{headline}\n\n(the page has no text)"
    return f"{headline}\n\n{_clip(text, args.max_chars)}"


def rules_of(policy: Policy | None) -> FetchRules:
    """What a fetch may reach under ``policy``: the private hosts the user named, and the
    redirects it follows unasked (those whose target a fetch of its own would reach without
    asking). Without a policy, neither: no private host, and redirects on the same host only."""
    if policy is None:
        return FetchRules()

    def unasked(address: WebAddress) -> bool:
        return policy.check(NAME, {"url": address.url}) is None

    return FetchRules(private_hosts=policy.fetch_private, unasked=unasked)


def _run_policy() -> Policy | None:
    """The approval policy of the graph run this call is part of, or None outside one."""
    from langgraph.runtime import get_runtime

    from dcode.agent.run_context import RunContext

    try:
        runtime = get_runtime(RunContext)
    except RuntimeError:
        return None
    context = getattr(runtime, "context", None)
    return context.policy if isinstance(context, RunContext) else None


def make_web_fetch_tool(
    results_dir: Path | None = None, *, policy: Policy | None = None
) -> BaseTool:
    """``results_dir``: where bodies that are not text are saved, each session's in a folder of
    its own (None: ``$DCODE_HOME/large_tool_results``, as ``DCODE_HOME`` is at the call).
    ``policy``: the approval policy whose private hosts and unasked fetches apply (None: the
    run's, read at each call)."""

    def where() -> Path:
        if results_dir is not None:
            return results_dir
        from dcode.agent.large_results import RESULTS_DIR
        from dcode.settings.config import dcode_home

        return dcode_home() / RESULTS_DIR

    async def run(args: WebFetchArgs) -> ToolOutput:
        return await web_fetch(
            args, where, rules_of(policy if policy is not None else _run_policy())
        )

    return make_tool(WEB_FETCH, description=DESCRIPTION, run=run, display=str)


# -- reading the answer


def _kind(page: Fetched) -> str:
    """``html``, ``text`` or ``binary``: how the body is shown."""
    media_type = page.media_type
    if media_type in HTML_TYPES:
        return "html"
    if (
        media_type.startswith("text/")
        or media_type in TEXT_TYPES
        or media_type.endswith(("+json", "+xml"))
    ):
        return "text"
    if media_type in UNNAMED_TYPES and looks_like_text(
        page.body[:8192], complete=len(page.body) <= 8192 and not page.capped
    ):
        return (
            "html"
            if page.body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))
            else "text"
        )
    return "binary"


def _decode(page: Fetched, kind: str) -> str:
    """The body as text: in the charset the answer names (an HTML page's ``<meta charset>``
    when the header names none), else UTF-8; bytes that do not decode are replaced."""
    charset = page.charset
    if charset is None and kind == "html":
        found = _META_CHARSET.search(page.body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    try:
        codecs.lookup(charset or "utf-8")
    except LookupError:
        charset = None
    text = page.body.decode(charset or "utf-8", errors="replace")
    return text.removeprefix("\ufeff")


def _text_of(page: Fetched) -> str:
    """What the model reads of the body: HTML converted, other text as it is, ``""`` for binary."""
    kind = _kind(page)
    if kind == "binary":
        return ""
    text = _decode(page, kind)
    if kind == "html":
        from dcode.agent.tools.html_text import html_to_text

        try:
            return html_to_text(text, page.final_url)
        except Exception:  # noqa: BLE001 - markup the parser cannot take: the page as it came is still worth reading
            return text
    return text


def _headline(page: Fetched) -> str:
    where = f"{page.url} → {page.final_url}" if page.redirected else page.url
    size = _size(len(page.body))
    if page.capped:
        size += " (stopped at the 5 MiB cap; the rest was not downloaded)"
    return f"Fetched {where} · {page.status} · {page.media_type or 'no content type'} · {size}"


def _clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    left_out = len(text) - max_chars
    if max_chars < FETCH_MAX_CHARS:
        more = f"call {NAME} again with a larger max_chars (up to {FETCH_MAX_CHARS:,}) to read more"
    else:
        more = f"{FETCH_MAX_CHARS:,} is the most one call returns"
    return f"{text[:max_chars].rstrip()}\n\n[{left_out:,} more characters of the text were left out; {more}]"


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes" if count != 1 else "1 byte"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


# -- saving what is not text


def _save(page: Fetched, folder: Path) -> Path:
    """The body, written 0600 in ``folder`` (0700); named by its hash, so a second fetch of the
    same bytes writes the same file."""
    from dcode.settings.private_files import write_private

    digest = hashlib.sha256(page.body).hexdigest()[:16]
    path = folder / f"fetch-{digest}.{_extension(page)}"
    write_private(path, page.body)
    return path


def _extension(page: Fetched) -> str:
    """The file name's extension, from the content type, else the URL's path; ``bin`` for neither."""
    guessed = (
        mimetypes.guess_extension(page.media_type, strict=False)
        if page.media_type not in UNNAMED_TYPES
        else None
    )
    if guessed:
        return guessed.lstrip(".")
    suffix = PurePosixPath(urlsplit(page.final_url).path).suffix.lstrip(".").lower()
    return suffix if re.fullmatch(r"[a-z0-9]{1,8}", suffix) else "bin"
