"""What each tool's call touched, in a few words: the part of a call's summary after its name.

The transcript shows many calls at once, so each gets one scannable line that says what was
touched (``src/app.py:121-320``) rather than a JSON blob. Arguments may be partial or mistyped
while a call streams in, so every function here tolerates junk. Each tool's spec names its
describer; ``describe_pairs`` is the fallback for tools no spec knows.
"""

from __future__ import annotations

from collections.abc import Mapping

from dcode.agent.tools.args import READ_DEFAULT_LIMIT, VIDEO_DEFAULT_LIMIT_S
from dcode.agent.tools.filetypes import media_type
from dcode.agent.tools.formatting import count_lines, plural
from dcode.settings.web_address import BadAddress, parse_address

Args = Mapping[str, object]


def describe_pairs(args: Args) -> str:
    return ", ".join(f"{key}={_text(value)}" for key, value in args.items())


def describe_nothing(args: Args) -> str:
    return ""


def describe_plan(args: Args) -> str:
    """The plan's first line that says something, without its Markdown heading marks."""
    plan = args.get("plan")
    lines = (
        (line.strip().lstrip("#").strip() for line in plan.splitlines())
        if isinstance(plan, str)
        else ()
    )
    return next((line for line in lines if line), "")


def describe_resource(args: Args) -> str:
    return f"{_text(args.get('server'))} {_text(args.get('uri'))}"


def describe_ls(args: Args) -> str:
    return _path(args, "path")


def describe_read(args: Args) -> str:
    """``src/app.py:120-200``, ``spec.pdf pages 3-5``, ``clip.mp4 [12s, 102s)``."""
    path = _path(args, "file_path")
    pages = _text(args.get("pages")).strip()
    if pages:
        return f"{path} pages {pages}"
    if (media_type(path) or "").startswith("video/"):
        return f"{path}{_seconds_range(args)}"
    return f"{path}{_line_range(args)}"


def describe_write(args: Args) -> str:
    content = args.get("content")
    suffix = f" ({plural(count_lines(content), 'line')})" if isinstance(content, str) else ""
    return f"{_path(args, 'file_path')}{suffix}"


def describe_edit(args: Args) -> str:
    suffix = " (replace all)" if args.get("replace_all") is True else ""
    return f"{_path(args, 'file_path')}{suffix}"


def describe_glob(args: Args) -> str:
    return f"{_text(args.get('pattern'))}{_where(args)}"


def describe_grep(args: Args) -> str:
    glob = _text(args.get("glob"))
    suffix = f" ({glob})" if glob else ""
    return f'"{_text(args.get("pattern"))}"{_where(args)}{suffix}'


def describe_execute(args: Args) -> str:
    return _text(args.get("command"))


def describe_fetch(args: Args) -> str:
    """``https://docs.python.org/3/library/html.parser.html…``: the address as it would be
    fetched (``web_address``'s canonical form), without its query, ``…`` standing for it (the
    approval shows the whole URL); a URL that would be refused as it was written."""
    url = _text(args.get("url")).strip()
    try:
        address = parse_address(url)
    except BadAddress:
        return url
    path, query, _ = address.target.partition("?")
    return f"{address.scheme}://{address.authority}{path}{'…' if query else ''}"


def describe_task(args: Args) -> str:
    """``explore: find where the config is loaded`` (the agent, then the job)."""
    agent = _text(args.get("subagent_type") or "general-purpose")
    return f"{agent}: {_text(args.get('description'))}"


def describe_async_task(args: Args) -> str:
    """``0f3c…-9a1e: also cover the tests`` (the task, then any follow-up message)."""
    message = _text(args.get("message"))
    return f"{_text(args.get('task_id'))}: {message}" if message else _text(args.get("task_id"))


def describe_async_list(args: Args) -> str:
    """``running``: the status listed, or nothing for all of them."""
    return _text(args.get("status_filter") or "")


def describe_todos(args: Args) -> str:
    """``4 items, 1 done · now: write the tests`` (the plan, at a glance)."""
    todos = args.get("todos")
    if not isinstance(todos, list):
        return ""
    items = [todo for todo in todos if isinstance(todo, Mapping)]
    done = sum(1 for todo in items if todo.get("status") == "completed")
    current = next(
        (_text(todo.get("content")) for todo in items if todo.get("status") == "in_progress"), ""
    )
    text = plural(len(items), "item") + (f", {done} done" if done else "")
    return f"{text} · now: {current}" if current else text


def _line_range(args: Args) -> str:
    offset = _int(args.get("offset"), 0)
    limit = _int(args.get("limit"), READ_DEFAULT_LIMIT)
    if offset == 0 and limit == READ_DEFAULT_LIMIT:
        return ""
    return f":{offset + 1}-{offset + limit}"


def _seconds_range(args: Args) -> str:
    offset, limit = _number(args.get("offset")), _number(args.get("limit"))
    if not offset and limit is None:
        return ""
    start = max(0.0, offset or 0.0)
    return f" [{start:g}s, {start + (VIDEO_DEFAULT_LIMIT_S if limit is None else limit):g}s)"


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _where(args: Args) -> str:
    path = _text(args.get("path"))
    return "" if path in ("", ".", "./") else f" in {path}"


def _path(args: Args, key: str) -> str:
    return _text(args.get(key)) or "."


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return default
