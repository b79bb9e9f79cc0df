"""Paged listings of what a server offers, and which tools dcode cannot run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp import ClientSession
from mcp.types import PaginatedRequestParams, Prompt, Resource, Tool

MAX_PAGES = 100


async def _pages(fetch: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        items.extend(getattr(page, field))
        cursor = page.nextCursor
        if not cursor:
            break
    return items


async def all_tools(session: ClientSession) -> list[Tool]:
    return await _pages(session.list_tools, "tools")


async def all_resources(session: ClientSession) -> list[Resource]:
    return await _pages(session.list_resources, "resources")


async def all_prompts(session: ClientSession) -> list[Prompt]:
    return await _pages(session.list_prompts, "prompts")


def needs_task(tool: Tool) -> bool:
    """A tool the server runs only as a task (``execution.taskSupport: required``): dcode does
    not run calls as tasks, so it cannot call it."""
    execution = tool.execution
    return execution is not None and execution.taskSupport == "required"
