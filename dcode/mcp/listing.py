"""Paged listings of what a server offers, and which tools dcode cannot run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mcp import ClientSession
from mcp.types import PaginatedRequestParams, PaginatedResult, Prompt, Resource, Tool

MAX_PAGES = 100

PageT = TypeVar("PageT", bound=PaginatedResult)
ItemT = TypeVar("ItemT")
Lister = Callable[[PaginatedRequestParams | None], Awaitable[PageT]]
"""A session's ``list_*`` method: one page per call, from the cursor in its ``params``."""


async def _pages(fetch: Lister[PageT], items: Callable[[PageT], list[ItemT]]) -> list[ItemT]:
    found: list[ItemT] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(PaginatedRequestParams(cursor=cursor) if cursor else None)
        found.extend(items(page))
        cursor = page.nextCursor
        if not cursor:
            break
    return found


async def all_tools(session: ClientSession) -> list[Tool]:
    return await _pages(lambda params: session.list_tools(params=params), lambda page: page.tools)


async def all_resources(session: ClientSession) -> list[Resource]:
    return await _pages(
        lambda params: session.list_resources(params=params), lambda page: page.resources
    )


async def all_prompts(session: ClientSession) -> list[Prompt]:
    return await _pages(
        lambda params: session.list_prompts(params=params), lambda page: page.prompts
    )


def needs_task(tool: Tool) -> bool:
    """A tool the server runs only as a task (``execution.taskSupport: required``): dcode does
    not run calls as tasks, so it cannot call it."""
    execution = tool.execution
    return execution is not None and execution.taskSupport == "required"
